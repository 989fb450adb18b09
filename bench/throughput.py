"""Write throughput of `frs_record` over stdio, in batches of 1, 100 and 1,000 messages.

Each call is one transaction committed with the durability the server runs with (read back here
from a connection `storage.open_database` opens: WAL, synchronous=FULL, so a recorded message
survives a power cut once the call returns). Batch sizes are interleaved round by round; a
second session gets short messages, to separate per-message costs from per-byte ones.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.corpus import tool_arg
from bench.latency import call
from bench.servers import stdio_client
from bench.stats import Samples
from bench.threads import TextPool
from frs import Env
from frs import sessions as frs_sessions
from storage import SqliteStore, open_database

BATCHES = (1, 100, 1_000)
SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


async def prepare(db: Path, titles: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """Create one session per title; read journal_mode and synchronous as the project's own
    `open_database` sets them."""
    async with open_database(db) as database:
        async with database.transaction() as conn:
            async with conn.execute("pragma journal_mode") as cursor:
                journal = (await cursor.fetchone() or ("?",))[0]
            async with conn.execute("pragma synchronous") as cursor:
                sync = (await cursor.fetchone() or (-1,))[0]
        env = Env(SqliteStore(database))
        sessions = {
            title: str((await frs_sessions.start(env, title=title)).session.id) for title in titles
        }
    settings = {
        "journal_mode": str(journal).upper(),
        "synchronous": SYNCHRONOUS.get(sync, str(sync)),
    }
    return settings, sessions


def commit_cost(folder: Path, commits: int) -> dict[str, float]:
    """p50 ms of a one-row write transaction in WAL mode at synchronous FULL and NORMAL (plain
    sqlite3, no server): what durability itself costs on this disk, for reading the figures."""
    out = {}
    for level in ("FULL", "NORMAL"):
        conn = sqlite3.connect(folder / f"commit-{level.lower()}.db", isolation_level=None)
        try:
            conn.execute("pragma journal_mode = wal")
            conn.execute(f"pragma synchronous = {level}")
            conn.execute("create table t (x text)")
            ms = []
            for _ in range(commits):
                start = time.perf_counter()
                conn.execute("begin immediate")
                conn.execute("insert into t values (?)", ("x" * 500,))
                conn.execute("commit")
                ms.append((time.perf_counter() - start) * 1000)
            out[level] = round(statistics.median(ms), 4)
        finally:
            conn.close()
    return out


def _short(i: int) -> dict[str, Any]:
    return {"role": "assistant" if i % 2 else "user", "content": f"Short note {i}: checked it."}


async def run(
    folder: Path, pool: TextPool, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    db = folder / "throughput.db"
    settings, sessions = await prepare(db, ("corpus", "short"))
    per_round = {1: 15, 100: 3, 1_000: 1}
    counter = {"step": 0, "short": 0}

    def payload(kind: str, size: int) -> list[dict[str, Any]]:
        if kind == "short":
            start = counter["short"]
            counter["short"] += size
            return [_short(start + i) for i in range(size)]
        # whole 5-message steps where possible; a single message is a user turn
        if size < 5:
            step = pool.step(counter["step"], "t")
            counter["step"] += 1
            return [tool_arg(m) for m in step[:size]]
        messages = pool.messages(size, counter["step"], "t")
        counter["step"] += size // 5
        return [tool_arg(m) for m in messages]

    samples = {(kind, size): Samples() for kind in ("corpus", "short") for size in BATCHES}
    chars: dict[str, list[int]] = {"corpus": [], "short": []}
    request_bytes: dict[str, int] = {}
    rng = random.Random(3)
    async with stdio_client(db) as client:
        for index in range(rounds + 1):  # round 0 warms up
            jobs = [
                (kind, size)
                for kind in ("corpus", "short")
                for size in BATCHES
                for _ in range(per_round[size])
            ]
            rng.shuffle(jobs)
            for kind, size in jobs:
                messages = payload(kind, size)
                args = {"messages": messages, "session_id": sessions[kind]}
                if size == 1_000:
                    request_bytes[kind] = len(json.dumps(args, ensure_ascii=False).encode())
                    chars[kind].extend(
                        len(m["content"])
                        + sum(len(c["arguments"]) for c in m.get("tool_calls", ()))
                        for m in messages
                    )
                if index == 0:
                    await call(client, "frs_record", args)
                else:
                    await samples[(kind, size)].time(partial(call, client, "frs_record", args))
    commit = commit_cost(folder, 200)
    log("throughput: done")
    rows = {}
    for (kind, size), got in samples.items():
        summary = got.summary()
        total_s = sum(got.ms) / 1000
        rows[f"{kind} {size}"] = {
            "kind": kind,
            "batch": size,
            "calls": summary["n"],
            "p50_ms": summary["p50"],
            "p99_ms": summary["p99"],
            "msgs_per_s_p50": round(size / summary["p50"] * 1000) if summary["n"] else None,
            "msgs_per_s_total": round(size * summary["n"] / total_s) if total_s else None,
        }
    mean_chars = {k: round(sum(v) / len(v)) for k, v in chars.items() if v}
    return {
        "durability": settings,
        "commit_ms_p50": commit,
        "rounds": rounds,
        "calls_per_round": {str(k): v for k, v in per_round.items()},
        "mean_message_chars": mean_chars,
        "request_bytes_1000": request_bytes,
        "rows": rows,
    }
