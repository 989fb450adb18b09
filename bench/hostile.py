"""Normal clients' latency over Streamable HTTP, alone and beside a hostile client (issue 13).

The hostile client sends, in turn and without pause, an oversized batch (200,000 tiny messages,
3 MiB, under the 4 MiB body cap, so the server itself must refuse it on its count) and a
maximal valid request (5,000 messages filling the body cap, which the server records), and
holds idle sockets that never send a byte, twice the server's connection cap, each reopened a
second after the server closes it. Its
requests are built once and sent as raw bytes (stdlib `http.client`, in a worker thread), so
its own cost in this process is small next to the server's. Normal clients are MCP clients, each
in its own session: record a few short messages, view the last ten entries, read a message back.

`run` is the `bench` section (`python -m bench --only hostile`); `Hostile` is also used by the
load test (`tests/robust/test_load.py`), which checks every answer it gets.
"""

from __future__ import annotations

import http.client
import itertools
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp import Client

from bench.machine import load_average
from bench.servers import free_port, http_server

BODY_CAP = 4 * 2**20  # the server's default --max-body-bytes
PROTOCOL = "2025-11-25"
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": PROTOCOL,
}
OVERSIZED = 200_000
MAXIMAL = 5_000
MAX_CONNECTIONS = 32  # the server's --max-connections in the bench
IDLE = 2 * MAX_CONNECTIONS  # idle sockets the hostile client holds: twice the cap
REOPEN = 1.0  # seconds before an idle socket the server closed is opened again
REFUSAL = (
    f"Error executing tool frs_record: {OVERSIZED:,} messages in one call; the limit is "
    f"{MAXIMAL:,}. Split the batch."
)


def _call(request_id: int, messages: list[dict[str, str]]) -> bytes:
    arguments = {"messages": messages}
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "frs_record", "arguments": arguments},
    }
    return json.dumps(body, separators=(",", ":")).encode()


def oversized_body() -> bytes:
    return _call(1, [{"role": "user"}] * OVERSIZED)


def maximal_body() -> bytes:
    """5,000 messages, as long as the body cap allows."""
    empty = len(_call(2, [{"role": "user", "content": ""}] * MAXIMAL))
    chars = (BODY_CAP - empty - 1_024) // MAXIMAL
    body = _call(2, [{"role": "user", "content": "h" * chars}] * MAXIMAL)
    assert len(body) < BODY_CAP
    return body


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: str

    def answer(self) -> dict[str, Any]:
        """The JSON-RPC answer: plain JSON, or the data of an SSE event."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            for line in self.body.splitlines():
                if line.startswith("data:") and '"id"' in line:
                    answer: dict[str, Any] = json.loads(line[5:])
                    return answer
            raise AssertionError(f"no answer in the event stream: {self.body[:200]!r}")
        answer = json.loads(self.body)
        return answer


def post(url: str, body: bytes, headers: dict[str, str]) -> Reply:
    """One POST on a connection of its own (blocking: run it in a worker thread)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=600)
    try:
        conn.request("POST", parts.path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        found = {key.lower(): value for key, value in response.getheaders()}
        return Reply(response.status, found, text)
    finally:
        conn.close()


@dataclass
class Hostile:
    """The hostile client; `answers` counts what it got back, by kind and outcome."""

    url: str
    kinds: tuple[str, ...] = ("oversized", "maximal")
    idle: int = 0  # sockets held open without a byte sent, each reopened once closed
    answers: dict[str, int] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)

    async def run(self, stop: anyio.Event) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(self.idle):
                tg.start_soon(self._idle_socket)
            await self._requests(stop)
            tg.cancel_scope.cancel()

    async def _requests(self, stop: anyio.Event) -> None:
        built = {"oversized": oversized_body, "maximal": maximal_body}
        bodies = {kind: built[kind]() for kind in self.kinds}
        if not bodies:
            await stop.wait()
            return
        headers = await self._initialize()
        for kind in itertools.cycle(bodies):
            if stop.is_set():
                return
            reply = await anyio.to_thread.run_sync(post, self.url, bodies[kind], headers)
            self._check(kind, reply)

    async def _idle_socket(self) -> None:
        """Connect, send nothing, wait for the server to close the socket; again."""
        parts = urlsplit(self.url)
        while True:
            try:
                stream = await anyio.connect_tcp(parts.hostname or "127.0.0.1", parts.port or 80)
            except OSError:
                await anyio.sleep(0.05)
                continue
            async with stream:
                try:
                    while True:
                        await stream.receive()  # a refusal's bytes, then the end
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    pass
            key = "idle socket closed by the server"
            self.answers[key] = self.answers.get(key, 0) + 1
            await anyio.sleep(REOPEN)  # holding sockets, not a flood of connections

    async def _initialize(self) -> dict[str, str]:
        hello = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "hostile", "version": "1"},
            },
        }
        reply = await anyio.to_thread.run_sync(post, self.url, json.dumps(hello).encode(), HEADERS)
        assert reply.status == 200, reply
        headers = {**HEADERS, "Mcp-Session-Id": reply.headers["mcp-session-id"]}
        ready = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        await anyio.to_thread.run_sync(post, self.url, ready, headers)
        return headers

    def _check(self, kind: str, reply: Reply) -> None:
        text, failed = f"HTTP {reply.status}", True
        if reply.status == 200:
            result = reply.answer().get("result", {})
            text = "".join(block.get("text", "") for block in result.get("content", []))
            failed = bool(result.get("isError"))
        ok = (failed and text == REFUSAL) if kind == "oversized" else not failed
        key = f"{kind} {'as expected' if ok else 'unexpected'}"
        self.answers[key] = self.answers.get(key, 0) + 1
        if not ok:
            self.unexpected.append(f"{kind}: {text[:200]}")


@dataclass
class Normal:
    """A normal client: short records, small views, a message read back; every latency."""

    index: int
    latencies: list[float] = field(default_factory=list)

    async def run(self, url: str, calls: int) -> None:
        rng = random.Random(self.index)
        async with Client(url) as client:
            await client.call_tool(
                "frs_session", {"action": "start", "title": f"normal {self.index}"}
            )
            numbers: list[int] = []
            for _ in range(calls):
                roll = rng.random()
                if roll < 0.5 or not numbers:
                    batch = [{"role": "user", "content": f"n{self.index} " * 40}] * 2
                    result = await self._timed(client, "frs_record", {"messages": batch})
                    numbers.extend((result.structured_content or {}).get("numbers", []))
                elif roll < 0.8:
                    await self._timed(client, "frs_view_thread", {"last": 10})
                else:
                    alias = f"M.{rng.choice(numbers)}"
                    await self._timed(client, "get_alias", {"alias": alias})

    async def _timed(self, client: Client, tool: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        self.latencies.append(time.perf_counter() - started)
        if result.is_error:
            raise AssertionError(f"normal client {self.index}: {tool} failed: {result.content}")
        return result


async def phase(
    url: str, clients: int, calls: int, hostile: tuple[str, ...] = (), idle: int = 0
) -> dict[str, Any]:
    """Normal clients' p50 and p99 (ms) over `calls` calls each, beside a hostile client
    sending the `hostile` kinds of request and holding `idle` idle sockets the whole time
    (neither: alone)."""
    normals = [Normal(i) for i in range(clients)]
    enemy = Hostile(url, hostile, idle)
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        if hostile or idle:
            tg.start_soon(enemy.run, stop)
        async with anyio.create_task_group() as inner:
            for normal in normals:
                inner.start_soon(normal.run, url, calls)
        stop.set()
    latencies = sorted(t for n in normals for t in n.latencies)
    out: dict[str, Any] = {
        "calls": len(latencies),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
    }
    if hostile:
        out["hostile"] = enemy.answers
        out["unexpected"] = enemy.unexpected[:5]
    return out


async def run(folder: Path, clients: int, calls: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Alone, beside the hostile client, and alone again (to see drift), on one server."""
    port = free_port()
    out: dict[str, Any] = {
        "clients": clients,
        "calls_each": calls,
        "idle": IDLE,
        "max_connections": MAX_CONNECTIONS,
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": load_average(),
    }
    with http_server(folder / "hostile.db", port, "--max-connections", str(MAX_CONNECTIONS)):
        url = f"http://127.0.0.1:{port}/mcp"
        both = ("oversized", "maximal")
        for name, kinds in (("alone", ()), ("beside hostile", both), ("alone again", ())):
            idle = IDLE if kinds else 0
            out[name] = await phase(url, clients, calls, kinds, idle)
            log(f"hostile: {name}: p50 {out[name]['p50_ms']} ms")
    out["load_average_after"] = load_average()
    floor = min(out["alone"]["p50_ms"], out["alone again"]["p50_ms"])
    out["p50_ratio"] = round(out["beside hostile"]["p50_ms"] / floor, 2)
    return out


def _load(section: dict[str, Any], when: str) -> str:
    return " / ".join(str(x) for x in section.get(f"load_average_{when}", ())) or "?"


def render(section: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    if not section:
        return []
    phases = {name: section[name] for name in ("alone", "beside hostile", "alone again")}
    rows = [
        [name, f"{p['calls']:,}", f"{p['p50_ms']:.1f}", f"{p['p99_ms']:.1f}"]
        for name, p in phases.items()
    ]
    answers = section["beside hostile"].get("hostile", {})
    head = ["normal clients", "calls", "p50 ms", "p99 ms"]
    return [
        "## 10. Normal clients beside a hostile one (Streamable HTTP)",
        "",
        f"{section['clients']} MCP clients, {section['calls_each']} calls each (record two short"
        " messages, view the last ten entries, read a message back), alone, then while one"
        f" client sends, without pause, oversized batches ({OVERSIZED:,} tiny messages, 3 MiB,"
        f" refused on their count) and maximal valid requests ({MAXIMAL:,} messages filling the"
        f" 4 MiB body cap, recorded) and holds {section.get('idle', 0)} sockets open without"
        " sending a byte, each reopened a second after the server closes it (the server runs"
        " with --max-connections"
        f" {section.get('max_connections', '256')}), then alone again, on one server. Measured"
        f" {section.get('measured', '?')}, load average {_load(section, 'before')} before and"
        f" {_load(section, 'after')} after (1/5/15 min). Its answers: "
        + ", ".join(f"{count} {kind}" for kind, count in sorted(answers.items()))
        + ".",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"Normal clients' p50 beside the hostile client: {section['p50_ratio']}× their p50 alone"
        " (the lower of the two alone runs). Most of what remains is the SDK parsing the"
        " hostile bodies as JSON on the event loop before any of our code sees them (200,000"
        " objects take it 0.1–0.3 s) and recording 5,000 messages (0.17 s of domain work).",
        "",
    ]
