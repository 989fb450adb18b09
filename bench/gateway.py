"""`python -m bench.gateway`: the time `frs-mcp gateway` adds to a model call's first byte.

A Claude Code-like transcript (a user task, then tool call/result pairs of ~1 KB results) of
50, 500 and 5,000 messages is sent call by call, growing by one pair each call, through the
gateway to a scripted upstream on 127.0.0.1 that answers at once; the same through the gateway
with its wire formats off (a plain byte-forwarding proxy, the floor); and through the gateway
with one live squash applied (the rewrite path). Reported: time to the answer's first byte,
p50 and p90, and the p50 added over the floor (issue 20's target: ≤ 5 ms at 500).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from frs import ReasoningService
from frs.host_threads import find_thread
from frs.model import Scope
from server.gateway.command import open_gateway
from server.gateway.proxy import Upstreams
from server.settings import Settings
from tests.gateway.harness import Upstream, served

SIZES = (50, 500, 5_000)
HEADERS = {
    "content-type": "application/json",
    "x-api-key": "sk-bench",
    "anthropic-version": "2023-06-01",
    "x-claude-code-session-id": "bench",
}
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def transcript(pairs: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the flaky test."}]
    for i in range(pairs):
        call = f"toolu_{i:06d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {i}: run the check again."},
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {"command": f"t {i}"},
                    },
                ],
            }
        )
        output = f"line {i}: " + "ok " * 300
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": output}],
            }
        )
    return messages


def body(messages: list[dict[str, Any]]) -> bytes:
    payload = {"model": "m", "max_tokens": 100, "tools": TOOLS, "messages": messages}
    return json.dumps(payload).encode()


async def first_byte(client: httpx2.AsyncClient, url: str, content: bytes) -> float:
    started = time.perf_counter()
    async with client.stream("POST", url + "/v1/messages", content=content, headers=HEADERS) as r:
        # The first byte of the body, not the headers: the gateway sends headers at once but
        # holds the body until the request's new messages are stored.
        elapsed = None
        async for _ in r.aiter_raw():
            if elapsed is None:
                elapsed = time.perf_counter() - started
    return (elapsed or time.perf_counter() - started) * 1000


async def measure(size: int, calls: int, mode: str, folder: Path) -> list[float]:
    """Milliseconds to the first byte of `calls` calls of a transcript of about `size`
    messages, through the gateway in `mode`: "plain" (no wire read), "gateway", "squash"."""
    pairs = (size - 1) // 2
    full = transcript(pairs + calls + 1)
    database = folder / f"{mode}-{size}.db"
    async with served(Upstream()) as upstream_url:
        settings = Settings(database=str(database))
        upstreams = Upstreams(anthropic=upstream_url, openai=upstream_url)
        async with open_gateway(settings, upstreams) as gateway:
            if mode == "plain":
                gateway.wires.clear()
            async with served(gateway) as url, httpx2.AsyncClient(timeout=60) as client:
                await first_byte(client, url, body(full[: 1 + 2 * pairs]))  # records it all
                await gateway.settled()
                if mode == "squash":
                    thread = await find_thread(gateway.recorder.env, "claude-code", "bench")
                    assert thread is not None
                    service = ReasoningService(gateway.recorder.env.store, scope=Scope())
                    await service.compress_range(
                        2, 21, "Ten steps: all ok.", session_id=thread.session.id
                    )
                times = []
                for k in range(1, calls + 1):
                    times.append(await first_byte(client, url, body(full[: 1 + 2 * (pairs + k)])))
                    await gateway.settled()
                if mode == "squash":
                    assert gateway.traffic.rewritten >= calls, "the squash was not applied"
                return times


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def run(calls: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            row: dict[str, Any] = {}
            for mode in ("plain", "gateway", "squash"):
                times = await measure(size, calls, mode, Path(tmp))
                row[mode] = {
                    "p50_ms": round(statistics.median(times), 2),
                    "p90_ms": round(_p(times, 90), 2),
                }
            row["added_p50_ms"] = round(row["gateway"]["p50_ms"] - row["plain"]["p50_ms"], 2)
            row["added_p50_ms_squash"] = round(row["squash"]["p50_ms"] - row["plain"]["p50_ms"], 2)
            results[str(size)] = row
            print(size, json.dumps(row), file=sys.stderr, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="calls per size and mode")
    args = parser.parse_args()
    print(json.dumps(anyio.run(run, args.calls), indent=2))


if __name__ == "__main__":
    main()
