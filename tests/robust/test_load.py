"""Load: 32 MCP clients at once over Streamable HTTP on 127.0.0.1, 50 calls each by default;
then fewer clients, alone and beside a hostile client (`bench.hostile`).

Each client works in its own session with a mix of record, view, compress (last N, a range) and
get_alias, all valid, so every call must succeed: zero errors, zero failed calls. Afterwards the
file keeps its invariants and holds every confirmed message. The hostile client sends oversized
batches (refused, with the exact text) and maximal valid requests (recorded) without pause, and
holds twice the server's connection cap in sockets that never send a byte. Throughput and
p50/p99 latency are printed (and written to $FRS_LOAD_REPORT as JSON when set) for the benchmark
report; nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from bench.hostile import IDLE, MAX_CONNECTIONS, Hostile
from tests.robust.audit import Acknowledged, check_acknowledged, check_database
from tests.robust.wire import http_server

CLIENTS = 32
# Per client: 32 clients at once is the load; 50 calls each (1,600 in all) already run every
# tool of the mix hundreds of times beside the others, in a quarter of the time 200 took.
# FRS_LOAD_CALLS=200 repeats the run BENCHMARKS.md reports.
CALLS = int(os.environ.get("FRS_LOAD_CALLS") or 50)
HOSTILE_PEERS = 8  # normal clients beside the hostile one
HOSTILE_CALLS = 60
pytestmark = pytest.mark.slow


class LoadClient:
    """One client's session, the numbers it recorded, and the latency of every call."""

    def __init__(self, index: int, acked: Acknowledged, calls: int = CALLS) -> None:
        self.index = index
        self.count = calls
        self.rng = random.Random(index)
        self.acked = acked
        self.session = ""
        self.live = 0
        self.numbers: list[int] = []
        self.latencies: list[float] = []
        self.calls: Counter[str] = Counter()

    async def call(self, client: Client, tool: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        self.latencies.append(time.perf_counter() - started)
        self.calls[tool] += 1
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        assert not result.is_error, f"client {self.index}: {tool}({arguments}) failed: {text}"
        return result

    async def run(self, url: str) -> None:
        async with Client(url) as client:
            started = await self.call(
                client,
                "frs_session",
                {
                    "action": "start",
                    "title": f"load {self.index}",
                    "interface": "load",
                    "conversation": str(self.index),
                },
            )
            self.session = started.content[0].text.split()[2]
            for _ in range(self.count - 1):
                await self.step(client)

    async def step(self, client: Client) -> None:
        roll = self.rng.random()
        if roll < 0.45 or self.live < 4:
            batch = [
                {"role": self.rng.choice(("user", "assistant")), "content": f"c{self.index} " * 40}
                for _ in range(self.rng.randint(1, 3))
            ]
            result = await self.call(
                client, "frs_record", {"messages": batch, "session_id": self.session}
            )
            data = result.structured_content
            for number, message in zip(data["numbers"], batch, strict=True):
                self.acked.messages[(self.session, number)] = message["content"]
                self.numbers.append(number)
            self.live = data["positions"][-1]
        elif roll < 0.65:
            await self.call(client, "frs_view_thread", {"last": 10, "session_id": self.session})
        elif roll < 0.8:
            number = self.rng.choice(self.numbers)
            await self.call(
                client, "get_alias", {"alias": f"M.{number}", "session_id": self.session}
            )
        elif roll < 0.9:
            result = await self.call(
                client,
                "frs_compress_last",
                {"count": 2, "summary": "two done", "session_id": self.session},
            )
            self.live = result.structured_content["position"]
        else:
            start = self.rng.randint(1, self.live - 2)
            result = await self.call(
                client,
                "frs_compress_range",
                {
                    "from": start,
                    "to": start + 2,
                    "summary": "three done",
                    "session_id": self.session,
                },
            )
            self.live -= 2


def _write_report(report: dict[str, Any], name: str = "FRS_LOAD_REPORT") -> None:
    if os.environ.get(name):
        Path(os.environ[name]).write_text(json.dumps(report, indent=2) + "\n")


def _latency(clients: list[LoadClient]) -> dict[str, float]:
    latencies = sorted(t for client in clients for t in client.latencies)
    return {
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1),
    }


class TestLoad:
    async def test_thirty_two_clients_over_streamable_http_have_no_failed_call(
        self, tmp_path: Path, database: Path | str
    ) -> None:
        db = database
        acked = Acknowledged()
        clients = [LoadClient(index, acked) for index in range(CLIENTS)]
        args = ["--transport", "streamable-http", "--db", str(db), "--log-level", "WARNING"]
        async with http_server(args, tmp_path) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            began = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for client in clients:
                    tg.start_soon(client.run, url)
            elapsed = time.perf_counter() - began
        check_database(db)
        check_acknowledged(db, acked)

        latencies = sorted(t for client in clients for t in client.latencies)
        assert len(latencies) == CLIENTS * CALLS
        calls: Counter[str] = sum((client.calls for client in clients), Counter())
        report = {
            "clients": CLIENTS,
            "calls": len(latencies),
            "failed": 0,
            "seconds": round(elapsed, 2),
            "calls_per_second": round(len(latencies) / elapsed, 1),
            "p50_ms": round(statistics.median(latencies) * 1000, 1),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1),
            "mix": dict(calls),
        }
        print(json.dumps(report))
        _write_report(report)

    async def test_normal_clients_beside_a_hostile_one_have_no_failed_call(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "hostile.db"
        acked = Acknowledged()
        args = ["--transport", "streamable-http", "--db", str(db), "--log-level", "WARNING"]
        args += ["--max-connections", str(MAX_CONNECTIONS)]
        phases: dict[str, list[LoadClient]] = {}
        hostile: Hostile | None = None
        async with http_server(args, tmp_path) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            for name in ("alone", "beside hostile"):
                clients = [
                    LoadClient(100 * len(phases) + i, acked, HOSTILE_CALLS)
                    for i in range(HOSTILE_PEERS)
                ]
                stop = anyio.Event()
                async with anyio.create_task_group() as tg:
                    if name != "alone":
                        hostile = Hostile(url, idle=IDLE)
                        tg.start_soon(hostile.run, stop)
                    async with anyio.create_task_group() as peers:
                        for client in clients:
                            peers.start_soon(client.run, url)
                    stop.set()
                phases[name] = clients
        check_database(db)
        check_acknowledged(db, acked)

        assert hostile is not None
        assert hostile.unexpected == []
        assert hostile.answers.get("oversized as expected", 0) >= 1
        assert hostile.answers.get("maximal as expected", 0) >= 1
        assert hostile.answers.get("idle socket closed by the server", 0) >= IDLE - MAX_CONNECTIONS
        for clients in phases.values():
            assert sum(len(c.latencies) for c in clients) == HOSTILE_PEERS * HOSTILE_CALLS
        report: dict[str, Any] = {name: _latency(c) for name, c in phases.items()}
        report["hostile"] = hostile.answers
        print(json.dumps(report))
        _write_report(report, "FRS_HOSTILE_REPORT")
