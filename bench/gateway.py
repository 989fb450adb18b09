"""`python -m bench.gateway`: the time `frs-mcp gateway` adds to a model call's first byte.

A Claude Code-like transcript (a user task, then tool call/result pairs of ~1 KB results) of
50, 500 and 5,000 messages is sent call by call, growing by one pair each call, through the
gateway to a scripted upstream on 127.0.0.1 that answers at once; the same through the gateway
with its wire formats off (a plain byte-forwarding proxy, the floor); and through the gateway
with one live squash applied (the rewrite path). Reported: time to the answer's first byte,
p50, p90 and worst, and the p50 added over the floor measured in the same run (issue 20's
target: ≤ 5 ms at 500). `make bench` runs it as its "gateway" section.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
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
        # The first byte of the body, not the headers: the body is what a host acts on (the
        # gateway holds only its stops until the request's new messages are stored).
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
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if len(values) > 1
        else values[0]
    )


async def run(calls: int, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {"calls": calls, "load_before": list(os.getloadavg())}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            row: dict[str, Any] = {}
            for mode in ("plain", "gateway", "squash"):
                times = await measure(size, calls, mode, Path(tmp))
                row[mode] = {
                    "p50_ms": round(statistics.median(times), 2),
                    "p90_ms": round(_p(times, 90), 2),
                    "worst_ms": round(max(times), 2),
                }
            row["added_p50_ms"] = round(row["gateway"]["p50_ms"] - row["plain"]["p50_ms"], 2)
            row["added_p50_ms_squash"] = round(row["squash"]["p50_ms"] - row["plain"]["p50_ms"], 2)
            results[str(size)] = row
            (log or _stderr)(f"gateway {size}: {json.dumps(row)}")
    results["load_after"] = list(os.getloadavg())
    return results


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def render(section: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    if not section:
        return []
    rows = []
    for size in (str(s) for s in SIZES):
        row = section.get(size)
        if not row:
            continue
        rows.append(
            f"| {int(size):,} | {row['plain']['p50_ms']:.1f} / {row['plain']['worst_ms']:.1f}"
            f" | {row['gateway']['p50_ms']:.1f} / {row['gateway']['worst_ms']:.1f}"
            f" | {row['squash']['p50_ms']:.1f} / {row['squash']['worst_ms']:.1f}"
            f" | {row['added_p50_ms']:+.1f} | {row['added_p50_ms_squash']:+.1f} |"
        )
    load = section.get("load_before", ["?"])
    return [
        "## Gateway: time added to a model call's first byte",
        "",
        f"A Claude Code-like transcript sent call by call ({section.get('calls', '?')} calls"
        " per size), growing a tool call/result pair each call, to a scripted upstream that"
        " answers at once: through a plain byte-forwarding proxy (the floor), through"
        " `frs-mcp gateway`, and through it with a squash applied. Milliseconds to the"
        " answer's first body byte, p50 / worst; added = p50 less the floor's, same run"
        f" (target: ≤ 5 ms at 500). Load average before: {load[0]}.",
        "",
        "| messages | plain proxy | gateway | gateway, squash | added | added, squash |",
        "|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="calls per size and mode")
    args = parser.parse_args()
    print(json.dumps(anyio.run(run, args.calls), indent=2))


if __name__ == "__main__":
    main()
