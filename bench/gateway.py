"""`python -m bench.gateway`: the time `frs-mcp gateway` adds to a model call's first byte.

A Claude Code-like transcript (a user task, then tool call/result pairs of ~1 KB results) of
50, 500 and 5,000 messages is sent call by call, growing by one pair each call, through the
gateway to an upstream on 127.0.0.1 that answers at once: with the gateway's wire formats off (a
plain byte-forwarding proxy, the floor); through the gateway with its defaults (the autopilot
squashing where it pays back); and through it with one squash a model made (the rewrite path,
the autopilot off). Each runs twice: without thinking, and with it as Claude Code sends it
(`thinking: adaptive`, every assistant message opening with a signed thinking block of ~500
characters, ~350 of signature), where a squash goes out mid-loop. Reported: time to the
answer's first byte, p50, p90 and worst, and the p50 and p90 added over the floor measured in
the same run (issue 29's target: ≤ 5 ms p50 and ≤ 15 ms p90 at 500). The upstream checks
every body it received against the API's wire rules after the timed calls, off their path.
`make bench` runs it as its "gateway" section.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
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
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from frs import Env, squashes
from frs.host_threads import find_thread
from frs.model import Scope
from server.gateway.anthropic_rules import problems
from server.gateway.command import AUTOPILOT, open_gateway
from server.gateway.proxy import Upstreams
from server.settings import Settings
from tests.gateway.harness import served, whole_body

SIZES = (50, 500, 5_000)
WARM_STEP = 1_000  # pairs sent per warm-up call before the timed calls
HEADERS = {
    "content-type": "application/json",
    "x-api-key": "sk-bench",
    "anthropic-version": "2023-06-01",
    "x-claude-code-session-id": "bench",
}
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
#: The request's thinking setting with thinking on, as Claude Code 2.1.332 sends it.
THINKING = {"type": "adaptive", "display": "omitted"}


def thought(i: int) -> dict[str, Any]:
    """A thinking block as a host keeps it: its text and the signature the API gave it
    (random-looking base64 of a real one's length; the gateway never reads it)."""
    text = f"Step {i}: the check failed again. " + "Compare the output with the last run. " * 12
    seed = hashlib.sha256(str(i).encode()).digest() * 8
    signature = base64.b64encode(seed)[:344].decode()
    return {"type": "thinking", "thinking": text, "signature": signature}


def transcript(pairs: int, thinking: bool = False) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the flaky test."}]
    for i in range(pairs):
        call = f"toolu_{i:06d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    *([thought(i)] if thinking else []),
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


def body(messages: list[dict[str, Any]], thinking: bool = False) -> bytes:
    payload: dict[str, Any] = {"model": "m", "max_tokens": 100, "tools": TOOLS}
    if thinking:
        payload["thinking"] = THINKING
    payload["messages"] = messages
    return json.dumps(payload).encode()


class Upstream:
    """The model's API at its fastest: it answers every request at once with an empty
    message, and keeps the bodies, checked after the timed calls (`problems_found`)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.bodies.append(await whole_body(receive))
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"type":"message","content":[]}'})

    def problems_found(self) -> list[str]:
        """What the API would refuse in the bodies received (the wire rules)."""
        return [p for b in self.bodies for p in problems(json.loads(b))]


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


async def measure(
    size: int, calls: int, mode: str, folder: Path, thinking: bool = False
) -> list[float]:
    """Milliseconds to the first byte of `calls` calls of a transcript of about `size`
    messages, through the gateway in `mode`: "plain" (no wire read), "gateway", "squash"."""
    pairs = (size - 1) // 2
    full = transcript(pairs + calls + 1, thinking)
    database = folder / f"{mode}-{size}-{'thinking' if thinking else 'plain'}.db"
    upstream = Upstream()
    async with served(upstream) as upstream_url:
        settings = Settings(database=str(database))
        upstreams = Upstreams(anthropic=upstream_url, openai=upstream_url)
        # "squash": one squash a model made, the autopilot off so that it is the only one;
        # "gateway": the defaults, the autopilot squashing where it pays back.
        autopilot = None if mode == "squash" else AUTOPILOT
        async with open_gateway(settings, upstreams, autopilot=autopilot) as gateway:
            if mode == "plain":
                gateway.wires.clear()
            async with served(gateway) as url, httpx2.AsyncClient(timeout=60) as client:
                # The history first, in steps, as a host that went through the gateway from
                # its start sent it (one request of more than `Limits.max_batch` new messages,
                # thinking counted, is not recorded at all).
                for upto in [*range(WARM_STEP, pairs, WARM_STEP), pairs]:
                    await first_byte(client, url, body(full[: 1 + 2 * upto], thinking))
                    await gateway.settled()
                if mode == "squash":
                    thread = await find_thread(gateway.recorder.env, "claude-code", "bench")
                    assert thread is not None
                    env = Env(gateway.recorder.env.store, scope=Scope())
                    await squashes.compress_range(
                        env, 2, 21, "Ten steps: all ok.", session_id=thread.session.id
                    )
                times = []
                for k in range(1, calls + 1):
                    sent = body(full[: 1 + 2 * (pairs + k)], thinking)
                    times.append(await first_byte(client, url, sent))
                    await gateway.settled()
                if mode == "squash":
                    assert gateway.traffic.rewritten >= calls, "the squash was not applied"
    found = upstream.problems_found()
    if found:
        raise RuntimeError(
            f"gateway {mode} {size}: the upstream received invalid bodies: {found[:3]}"
        )
    return times


def _p(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if len(values) > 1
        else values[0]
    )


async def run(calls: int, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Per size, without thinking (under the size's key) and with it (under "thinking")."""
    results: dict[str, Any] = {"calls": calls, "load_before": list(os.getloadavg())}
    results["thinking"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for thinking in (False, True):
            into = results["thinking"] if thinking else results
            for size in SIZES:
                row: dict[str, Any] = {}
                for mode in ("plain", "gateway", "squash"):
                    times = await measure(size, calls, mode, Path(tmp), thinking)
                    row[mode] = {
                        "p50_ms": round(statistics.median(times), 2),
                        "p90_ms": round(_p(times, 90), 2),
                        "worst_ms": round(max(times), 2),
                    }
                for q in ("p50", "p90"):
                    floor = row["plain"][f"{q}_ms"]
                    row[f"added_{q}_ms"] = round(row["gateway"][f"{q}_ms"] - floor, 2)
                    row[f"added_{q}_ms_squash"] = round(row["squash"][f"{q}_ms"] - floor, 2)
                into[str(size)] = row
                name = f"gateway {size}{' thinking' if thinking else ''}"
                (log or _stderr)(f"{name}: {json.dumps(row)}")
    results["load_after"] = list(os.getloadavg())
    return results


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _timing(t: dict[str, Any]) -> str:
    return f"{t['p50_ms']:.1f} / {t.get('p90_ms', t['p50_ms']):.1f} / {t['worst_ms']:.1f}"


def _added(row: dict[str, Any], suffix: str = "") -> str:
    p90 = row.get(f"added_p90_ms{suffix}")
    tail = f" / {p90:+.1f}" if p90 is not None else ""
    return f"{row[f'added_p50_ms{suffix}']:+.1f}{tail}"


def render(section: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    if not section:
        return []
    rows = []
    for label, figures in (("no", section), ("yes", section.get("thinking") or {})):
        for size in (str(s) for s in SIZES):
            row = figures.get(size)
            if not row:
                continue
            rows.append(
                f"| {int(size):,} | {label} | {_timing(row['plain'])}"
                f" | {_timing(row['gateway'])} | {_timing(row['squash'])}"
                f" | {_added(row)} | {_added(row, '_squash')} |"
            )
    load = section.get("load_before", ["?"])
    return [
        "## Gateway: time added to a model call's first byte",
        "",
        f"A Claude Code-like transcript sent call by call ({section.get('calls', '?')} calls"
        " per size), growing a tool call/result pair each call, to an upstream that answers"
        " at once: through a plain byte-forwarding proxy (the floor), through"
        " `frs-mcp gateway` with its defaults (the autopilot squashing where it pays back), and"
        " through it with one squash a model made (autopilot off); without thinking, and with"
        " it (`thinking: adaptive`, a signed thinking block of ~500 characters opening every"
        " assistant message). Milliseconds to the answer's first body byte, p50 / p90 /"
        " worst; added = the gateway's p50 / p90 less the floor's, same run (issue 29's"
        " target: ≤ 5 ms p50 and ≤ 15 ms p90 at 500). Every body the upstream received kept"
        " the API's wire rules (checked after the timed calls). Load average before:"
        f" {load[0]:.2f}.",
        "",
        "| messages | thinking | plain proxy | gateway | gateway, squash | added | added, squash |",
        "|---:|---|---:|---:|---:|---:|---:|",
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
