"""PostgreSQL against SQLite, in one run (issue 14): the same 100,000-message thread in both,
built side by side; per-tool p50 through a stdio server on each; throughput of one and of three
instances (behind haproxy) on one PostgreSQL database with 32 clients; and the plans of the hot
statements on PostgreSQL (EXPLAIN, after ANALYZE).

The cluster is a throwaway one (tests/pg.py) started durable (fsync on, synchronous commit),
as SQLite runs with synchronous=FULL. Every comparison is a ratio of samples taken in the same
rounds, in a shuffled order, so drift on a shared machine hits both backends alike.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench import machine
from bench.latency import ALIAS, LAST, RANGE, RECORD_1, RESTORE, SUMMARY, VIEW_LAST, VIEW_USER, call
from bench.pg_plans import explain_hot_statements
from bench.servers import stdio_params
from bench.stats import Samples, ratio
from bench.threads import STEP, TextPool
from frs import Env, SessionId, recording, sessions
from storage import SqliteStore, open_database
from storage.postgres import PgStore, open_postgres
from tests.haproxy import free_port, haproxy
from tests.pg import Cluster, start_cluster
from tests.robust.audit import Acknowledged
from tests.robust.test_load import LoadClient
from tests.robust.wire import http_process

SIZE = 100_000
BATCH = 1_000
CLIENTS = 32
INFO = "frs_session info"
VIEW_BUDGET = "frs_view_thread budget_tokens=4000"
OPS = (INFO, VIEW_LAST, VIEW_USER, VIEW_BUDGET, ALIAS, RANGE, LAST, RESTORE, RECORD_1)
BACKENDS = ("sqlite", "postgres")


async def build(
    folder: Path, dsn: str, pool: TextPool, size: int, log: Callable[[str], None]
) -> tuple[dict[str, SessionId], dict[str, Any]]:
    """The same thread in a SQLite file and in PostgreSQL, batch by batch in turn; the time of
    each 1,000-message batch (one transaction) on each."""
    samples = {backend: Samples() for backend in BACKENDS}
    ids: dict[str, SessionId] = {}
    async with open_database(folder / "pg-bench.db") as db, open_postgres(dsn) as pg:
        services = {
            "sqlite": Env(SqliteStore(db)),
            "postgres": Env(PgStore(pg)),
        }
        for backend, env in services.items():
            ids[backend] = (await sessions.start(env, title=f"bench {size}")).session.id
        indexing = Samples()
        for k, chunk in enumerate(pool.batches(size, BATCH, tag="pg-")):
            order = list(BACKENDS) if k % 2 else list(reversed(BACKENDS))
            for backend in order:
                await samples[backend].time(
                    partial(recording.record, services[backend], chunk, ids[backend])
                )
                if backend == "postgres" and pg.indexer is not None:
                    # What the batch queued for search, indexed now, timed apart: the indexer
                    # would do it at the writes' next pause, inside the other backend's time.
                    await indexing.time(pg.indexer.index_queued)
            if k % 20 == 19:
                log(f"postgres: built {(k + 1) * BATCH:,} of {size:,} on both")
    figures: dict[str, Any] = {b: samples[b].summary() for b in BACKENDS}
    figures["postgres_indexing"] = indexing.summary()
    for backend in BACKENDS:
        figures[backend]["batches_per_s"] = round(1000 / figures[backend]["mean"], 2)
        figures[backend]["messages_per_s"] = round(BATCH * 1000 / figures[backend]["mean"])
    figures["ratio_p50"] = ratio(figures["postgres"]["p50"], figures["sqlite"]["p50"])
    return ids, figures


async def per_tool(
    targets: dict[str, str], ids: dict[str, SessionId], size: int, rounds: int
) -> dict[str, Any]:
    """p50 of each operation on each backend, the same rounds, shuffled; squashes are undone by
    the restore that follows them, so every round sees the same thread."""
    samples = {b: {op: Samples() for op in OPS} for b in BACKENDS}
    mid = (size // 2 // STEP) * STEP + 1
    rng = random.Random(14)
    async with AsyncExitStack() as stack:
        clients = {
            b: await stack.enter_async_context(
                Client(stdio_params(targets[b]), mode="auto", read_timeout_seconds=600)  # type: ignore[arg-type]
            )
            for b in BACKENDS
        }
        # Records go to a session of their own: the big thread stays as built (a message
        # recorded at its end would sit between compress_last and the calls it must keep whole).
        spare = {
            b: structured_id(await call(clients[b], "frs_session", {"action": "start"}))
            for b in BACKENDS
        }

        async def op(backend: str, name: str, k: int) -> None:
            client, sid, got = clients[backend], ids[backend], samples[backend]
            if name in (RANGE, LAST):
                args: dict[str, Any] = (
                    {"from": mid, "to": mid + 9} if name == RANGE else {"count": 5}
                )
                tool = "frs_compress_range" if name == RANGE else "frs_compress_last"
                done = await got[name].time(
                    lambda: call(client, tool, {**args, "summary": SUMMARY, "session_id": sid})
                )
                alias = (done.structured_content or {})["alias"]
                await got[RESTORE].time(
                    lambda: call(client, "frs_restore", {"alias": alias, "session_id": sid})
                )
                return
            tool, args = _plain_call(name, mid, k)
            target = spare[backend] if name == RECORD_1 else sid
            await got[name].time(lambda: call(client, tool, {**args, "session_id": target}))

        names = [name for name in OPS if name != RESTORE]
        for k in range(rounds):
            work = [(b, name) for name in names for b in BACKENDS]
            rng.shuffle(work)
            for backend, name in work:
                await op(backend, name, k)
    out: dict[str, Any] = {}
    for name in OPS:
        sq, pg = samples["sqlite"][name].summary(), samples["postgres"][name].summary()
        out[name] = {"sqlite_p50": sq["p50"], "postgres_p50": pg["p50"]}
        out[name]["ratio"] = ratio(pg["p50"], sq["p50"])
    return out


def _plain_call(name: str, mid: int, k: int) -> tuple[str, dict[str, Any]]:
    """The tool and arguments (but the session) of an operation that is one call."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        INFO: ("frs_session", {"action": "info"}),
        VIEW_LAST: ("frs_view_thread", {"last": 50}),
        VIEW_USER: ("frs_view_thread", {"roles": ["user"], "last": 5}),
        VIEW_BUDGET: ("frs_view_thread", {"budget_tokens": 4_000}),
        ALIAS: ("get_alias", {"alias": f"M.{mid + 2}"}),
        RECORD_1: ("frs_record", {"messages": [{"role": "user", "content": f"r{k}"}]}),
    }
    return calls[name]


def structured_id(result: Any) -> str:
    return str((result.structured_content or {})["session_id"])


async def throughput(
    cluster: Cluster, folder: Path, calls: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """32 clients (the load suite's mix, each in its own session) against one instance on
    SQLite, one on PostgreSQL, and three on one PostgreSQL database behind haproxy."""
    out: dict[str, Any] = {}
    setups: list[tuple[str, int, str]] = [
        ("sqlite, 1 instance", 1, str(folder / "load.db")),
        ("postgres, 1 instance", 1, cluster.create_database()),
        ("postgres, 3 instances + haproxy", 3, cluster.create_database()),
    ]
    for label, count, target in setups:
        front = free_port()
        args = ["--transport", "streamable-http", "--db", target, "--log-level", "WARNING",
                "--allowed-host", f"127.0.0.1:{front}"]  # fmt: skip
        async with AsyncExitStack() as stack:
            ports = [
                (await stack.enter_async_context(http_process(args, folder, f"{label}{i}.err")))[0]
                for i in range(count)
            ]
            if count > 1:
                port = await stack.enter_async_context(haproxy(ports, folder, front))
            else:
                port = ports[0]
            clients = [LoadClient(i, Acknowledged(), calls=calls) for i in range(CLIENTS)]
            began = time.perf_counter()
            async with anyio.create_task_group() as group:
                for client in clients:
                    group.start_soon(client.run, f"http://127.0.0.1:{port}/mcp")
            elapsed = time.perf_counter() - began
        latencies = Samples(ms=[t * 1000 for c in clients for t in c.latencies]).summary()
        out[label] = {
            "calls": latencies["n"],
            "calls_per_s": round(latencies["n"] / elapsed, 1),
            "p50_ms": latencies["p50"],
            "p99_ms": latencies["p99"],
        }
        log(f"postgres: throughput {label}: {out[label]['calls_per_s']} calls/s")
    return out


async def run(
    folder: Path, pool: TextPool, settings: dict[str, Any], log: Callable[[str], None]
) -> dict[str, Any]:
    before = machine.load_average()
    cluster = start_cluster(durable=True)
    try:
        dsn = cluster.create_database()
        size = settings["size"]
        ids, batches = await build(folder, dsn, pool, size, log)
        log(f"postgres: record batches {batches['sqlite']['batches_per_s']} /s on SQLite, "
            f"{batches['postgres']['batches_per_s']} /s on PostgreSQL")  # fmt: skip
        plans = await explain_hot_statements(dsn, ids["postgres"], size)
        targets = {"sqlite": str(folder / "pg-bench.db"), "postgres": dsn}
        tools = await per_tool(targets, ids, size, settings["rounds"])
        load = await throughput(cluster, folder, settings["load_calls"], log)
        return {
            "size": size,
            "record_batches": batches,
            "per_tool": tools,
            "throughput": load,
            "plans": plans,
            "postgres_version": cluster.psql("show server_version"),
            "load_average_before": before,
            "load_average_after": machine.load_average(),
        }
    finally:
        cluster.stop()
