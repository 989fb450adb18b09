"""Side by side with what users would pick instead, on this machine in the same run.

1. The OpenAI Agents SDK's `SQLiteSession` (a file database, WAL, default synchronous=FULL, like
   ours) against frs through its Python API, through its adapter for that SDK
   (`runtimes.openai_agents.FRSSession`, the same `Session` protocol) and through MCP over
   stdio: load 100,000 items in batches of 1,000, then append one item and read the newest 50,
   round by round in a shuffled order. Items are plain user/assistant messages carrying the
   same corpus texts on every side.
2. The MCP reference server `@modelcontextprotocol/server-sequential-thinking` (npm, pinned in
   bench/package.json) against `frs_record` of one message: per-call latency over stdio, both
   in the 2025-11-25 protocol the reference server's TypeScript SDK speaks, calls interleaved.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import aiosqlite
from mcp import Client, StdioServerParameters

from bench.corpus import REPO
from bench.latency import call
from bench.servers import stdio_client
from bench.stats import Samples, ratio
from bench.threads import TextPool
from frs import Env, NewMessage, Role, ViewOptions, recording, sessions, viewing
from storage import SqliteStore, open_database

NODE_DIR = REPO / ".cache" / "bench-node"
SEQUENTIAL_THINKING = NODE_DIR / "node_modules" / ".bin" / "mcp-server-sequential-thinking"
PACKAGE = "@modelcontextprotocol/server-sequential-thinking"


def _texts(pool: TextPool) -> list[str]:
    """Every corpus text once, in a fixed shuffled order."""
    texts = [*pool.user, *pool.assistant, *pool.results]
    random.Random(1).shuffle(texts)
    return texts


def _item(texts: list[str], i: int) -> tuple[Role, str]:
    return ("user" if i % 2 == 0 else "assistant", texts[i % len(texts)])


def _sdk_session(path: Path) -> Any:
    from agents import SQLiteSession  # type: ignore[import-not-found,unused-ignore]

    return SQLiteSession("bench", str(path))


def _frs_session(path: Path) -> Any:
    from runtimes.openai_agents import FRSSession

    return FRSSession("bench", path)


def _sdk_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openai-agents")
    except PackageNotFoundError:
        return None


async def sqlite_session(
    folder: Path, pool: TextPool, items: int, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    version = _sdk_version()
    if version is None:
        return {"unavailable": "openai-agents is not installed (pip install -e '.[bench]')"}
    texts = _texts(pool)
    sdk = _sdk_session(folder / "agents-sdk.db")
    probe = sqlite3.connect(folder / "agents-sdk.db")
    sdk_sync = probe.execute("pragma synchronous").fetchone()[0]
    sdk_journal = probe.execute("pragma journal_mode").fetchone()[0]
    probe.close()
    load = {name: Samples() for name in ("SQLiteSession", "FRSSession", "frs API", "frs MCP")}
    ops = {
        name: Samples()
        for name in (
            "SQLiteSession get_items(limit=50)",
            "FRSSession get_items(limit=50)",
            "frs API view(last=50)",
            "frs API store.last_entries(50)",
            "frs MCP frs_view_thread(last=50)",
            "SQLiteSession add_items(1)",
            "FRSSession add_items(1)",
            "frs API record(1)",
            "frs MCP frs_record(1)",
            "reference: aiosqlite round trip (select 1)",
            "reference: asyncio.to_thread round trip (select 1)",
        )
    }
    batch = 1_000
    mcp_sid = await _start_session(folder / "frs-mcp.db", "peers mcp")
    adapter = _frs_session(folder / "frs-session.db")
    async with (
        AsyncExitStack() as stack,
        open_database(folder / "frs-api.db") as db,
        stdio_client(folder / "frs-mcp.db") as client,
    ):
        service = Env(SqliteStore(db))
        api_sid = (await sessions.start(service, title="peers")).session.id
        rng = random.Random(5)
        for start in range(0, items, batch):
            pairs = [_item(texts, i) for i in range(start, min(items, start + batch))]
            sdk_items = [{"role": r, "content": t} for r, t in pairs]
            news = [NewMessage(role=r, content=t) for r, t in pairs]
            mcp_args = {
                "messages": [{"role": r, "content": t} for r, t in pairs],
                "session_id": mcp_sid,
            }
            jobs: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("SQLiteSession", partial(sdk.add_items, sdk_items)),
                ("FRSSession", partial(adapter.add_items, sdk_items)),
                ("frs API", partial(recording.record, service, news, api_sid)),
                ("frs MCP", partial(call, client, "frs_record", mcp_args)),
            ]
            rng.shuffle(jobs)
            for name, job in jobs:
                await load[name].time(job)
        log(f"peers: loaded {items:,} items on each side")
        one_role: Role = "user"
        one_text = texts[0][:400]

        probe_async = await stack.enter_async_context(aiosqlite.connect(folder / "frs-api.db"))
        probe_sync = sqlite3.connect(folder / "frs-api.db", check_same_thread=False)
        stack.callback(probe_sync.close)

        async def hop_aiosqlite() -> Any:
            return await probe_async.execute_fetchall("select 1")

        async def hop_thread() -> Any:
            return await asyncio.to_thread(lambda: probe_sync.execute("select 1").fetchall())

        async def last_entries() -> Any:
            async with service.store.snapshot() as reader:
                return await reader.last_entries(api_sid, 50, None)

        round_ops: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("SQLiteSession get_items(limit=50)", lambda: sdk.get_items(limit=50)),
            ("FRSSession get_items(limit=50)", lambda: adapter.get_items(limit=50)),
            ("frs API view(last=50)", lambda: viewing.view(service, ViewOptions(last=50), api_sid)),
            ("frs API store.last_entries(50)", last_entries),
            ("reference: aiosqlite round trip (select 1)", hop_aiosqlite),
            ("reference: asyncio.to_thread round trip (select 1)", hop_thread),
            (
                "frs MCP frs_view_thread(last=50)",
                lambda: call(client, "frs_view_thread", {"last": 50, "session_id": mcp_sid}),
            ),
            (
                "SQLiteSession add_items(1)",
                lambda: sdk.add_items([{"role": one_role, "content": one_text}]),
            ),
            (
                "FRSSession add_items(1)",
                lambda: adapter.add_items([{"role": one_role, "content": one_text}]),
            ),
            (
                "frs API record(1)",
                lambda: recording.record(
                    service, [NewMessage(role=one_role, content=one_text)], api_sid
                ),
            ),
            (
                "frs MCP frs_record(1)",
                lambda: call(
                    client,
                    "frs_record",
                    {"messages": [{"role": one_role, "content": one_text}], "session_id": mcp_sid},
                ),
            ),
        ]
        for index in range(rounds + 2):
            rng.shuffle(round_ops)
            for name, op in round_ops:
                if index < 2:  # warm-up rounds
                    await op()
                else:
                    await ops[name].time(op)
    sdk.close()
    await adapter.close()
    log("peers: SQLiteSession done")
    load_rows = {
        name: {
            **got.summary(),
            "items_per_s": round(items / (sum(got.ms) / 1000)),
        }
        for name, got in load.items()
    }
    op_rows = {name: got.summary() for name, got in ops.items()}

    def p50(name: str) -> float | None:
        return op_rows[name].get("p50")

    def p99(name: str) -> float | None:
        return op_rows[name].get("p99")

    # The worst case: each side's p99 (the slowest 1% of rounds), side by side.
    worst = {
        "read last 50: FRSSession / SQLiteSession": ratio(
            p99("FRSSession get_items(limit=50)"), p99("SQLiteSession get_items(limit=50)")
        ),
        "append 1: FRSSession / SQLiteSession": ratio(
            p99("FRSSession add_items(1)"), p99("SQLiteSession add_items(1)")
        ),
        "load 1,000-item batch: FRSSession / SQLiteSession": ratio(
            load_rows["FRSSession"].get("p99"), load_rows["SQLiteSession"].get("p99")
        ),
    }
    return {
        "openai_agents": version,
        "items": items,
        "batch": batch,
        "rounds": rounds,
        "durability": {
            "SQLiteSession": f"journal_mode={str(sdk_journal).upper()}, synchronous={sdk_sync}",
            "frs": "journal_mode=WAL, synchronous=2 (FULL)",
        },
        "load": load_rows,
        "worst_ratios": worst,
        "ops": op_rows,
        "ratios": {
            "read last 50: FRSSession / SQLiteSession": ratio(
                p50("FRSSession get_items(limit=50)"), p50("SQLiteSession get_items(limit=50)")
            ),
            "append 1: FRSSession / SQLiteSession": ratio(
                p50("FRSSession add_items(1)"), p50("SQLiteSession add_items(1)")
            ),
            "load 1,000-item batch: FRSSession / SQLiteSession": ratio(
                load_rows["FRSSession"].get("p50"), load_rows["SQLiteSession"].get("p50")
            ),
            "read last 50: frs API view / SQLiteSession": ratio(
                p50("frs API view(last=50)"), p50("SQLiteSession get_items(limit=50)")
            ),
            "read last 50: frs API store / SQLiteSession": ratio(
                p50("frs API store.last_entries(50)"), p50("SQLiteSession get_items(limit=50)")
            ),
            "read last 50: frs MCP / SQLiteSession": ratio(
                p50("frs MCP frs_view_thread(last=50)"), p50("SQLiteSession get_items(limit=50)")
            ),
            "append 1: frs API / SQLiteSession": ratio(
                p50("frs API record(1)"), p50("SQLiteSession add_items(1)")
            ),
            "append 1: frs MCP / SQLiteSession": ratio(
                p50("frs MCP frs_record(1)"), p50("SQLiteSession add_items(1)")
            ),
            "load 1,000-item batch: frs API / SQLiteSession": ratio(
                load_rows["frs API"].get("p50"), load_rows["SQLiteSession"].get("p50")
            ),
            "load 1,000-item batch: frs MCP / SQLiteSession": ratio(
                load_rows["frs MCP"].get("p50"), load_rows["SQLiteSession"].get("p50")
            ),
        },
    }


async def _start_session(db: Path, title: str) -> str:
    """A new session in `db`, made through the Python API before a server opens the file."""
    async with open_database(db) as database:
        service = Env(SqliteStore(database))
        return str((await sessions.start(service, title=title)).session.id)


def _installed_version() -> str | None:
    manifest = NODE_DIR / "node_modules" / PACKAGE / "package.json"
    if not manifest.exists():
        return None
    return str(json.loads(manifest.read_text())["version"])


async def sequential_thinking(
    folder: Path, calls: int, log: Callable[[str], None]
) -> dict[str, Any]:
    version = _installed_version()
    if version is None or not SEQUENTIAL_THINKING.exists():
        return {"unavailable": f"{PACKAGE} is not installed in {NODE_DIR} (run `make bench`)"}
    params = StdioServerParameters(
        command=str(SEQUENTIAL_THINKING), env={"DISABLE_THOUGHT_LOGGING": "true"}
    )
    db = folder / "record-one.db"
    samples = {
        name: Samples()
        for name in ("sequentialthinking", "sequential-thinking ping", "frs_record (1)", "frs ping")
    }
    text = "Checked the flaky test: it fails when the cache is cold; next, pin the fixture order."
    async with Client(params, mode="legacy") as st, stdio_client(db) as frs:
        protocol = st.protocol_version
        jobs: list[tuple[str, Callable[[int], Awaitable[Any]]]] = [
            (
                "sequentialthinking",
                lambda i: call(
                    st,
                    "sequentialthinking",
                    {
                        "thought": text,
                        "thoughtNumber": i + 1,
                        "totalThoughts": calls + 20,
                        "nextThoughtNeeded": True,
                    },
                ),
            ),
            ("sequential-thinking ping", lambda i: st.send_ping()),
            (
                "frs_record (1)",
                lambda i: call(
                    frs, "frs_record", {"messages": [{"role": "assistant", "content": text}]}
                ),
            ),
            ("frs ping", lambda i: frs.send_ping()),
        ]
        rng = random.Random(7)
        for i in range(calls + 20):
            rng.shuffle(jobs)
            for name, job in jobs:
                if i < 20:
                    await job(i)
                else:
                    await samples[name].time(partial(job, i))
    log("peers: sequential-thinking done")
    rows = {name: got.summary() for name, got in samples.items()}
    return {
        "package": f"{PACKAGE}@{version}",
        "protocol": protocol,
        "calls": calls,
        "note": "thought logging off (DISABLE_THOUGHT_LOGGING=true); it keeps thoughts in "
        "memory, while frs_record commits to SQLite (WAL, synchronous=FULL) before answering",
        "ops": rows,
        "ratios": {
            "frs_record (1) / sequentialthinking": ratio(
                rows["frs_record (1)"].get("p50"), rows["sequentialthinking"].get("p50")
            ),
            "frs ping / sequential-thinking ping": ratio(
                rows["frs ping"].get("p50"), rows["sequential-thinking ping"].get("p50")
            ),
        },
    }
