"""Search on PostgreSQL before and after its trigram index, and SQLite's scan (issue 23).

One tenant holds 10 MB of messages (corpus text, ten sessions); another tenant has a short
thread. On PostgreSQL "before" is the scan every search was (LIKE over every message of the
tenant, folding case with `translate`, as it did), "after" is `search_sessions` as it runs
now (the pg_trgm index where the query has a trigram). SQLite's search is the scan, measured
as it runs. Queries: 200 characters cut from a message with its middle character changed
(found nowhere: the scan reads everything, the index finds the one message that nearly holds
it), the same 200 characters unchanged (found), common words ("the", "error"), and two
characters found nowhere (no trigram: a scan both times). Then the other tenant's view while
the 200-character search runs without pause; on PostgreSQL what building the index costs
(migration 5 on a database of version 4): its time, and the database's growth, on 10 MB, on
the corpus and on a 100,000-message thread; and what it costs a write (recording with the
index and without, SQLite's recording beside them).

SQLite had an FTS5 trigram index too, measured and not adopted: see `NOT_ADOPTED`.

`run` is the `bench` section (`python -m bench --only search`).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from string import ascii_lowercase, ascii_uppercase
from typing import Any

import anyio
import asyncpg

from bench.corpus import load_corpus
from bench.stats import ratio
from bench.threads import TextPool
from frs import Env, NewMessage, ViewOptions, sessions, viewing
from frs import recording as frs_recording
from frs.model import Scope, SessionId
from storage import SqliteStore, open_database
from storage.postgres import PgStore, open_postgres
from storage.postgres import search as pg_search
from storage.rows import SESSION_COLUMNS
from tests.pg import Cluster, start_cluster

#: PostgreSQL's search before the index, as `storage/postgres/reads.py` ran it: `translate`
#: folding, ten times the cost of today's scan (`lower(… collate "C")`) on top of reading all.
PG_BEFORE = (
    f"select {SESSION_COLUMNS} from sessions s where s.tenant = $1"
    " and (translate(s.title, $4, $5) like $2 or exists (select 1 from messages m"
    " where m.session_id = s.id and translate(m.content, $4, $5) like $2))"
    " order by updated_at desc, id limit $3"
)
MB = 2**20
SESSIONS = 10
#: SQLite's FTS5 trigram index (migration 10 as built for issue 23, since removed), as this
#: section measured it on this machine before it went: why it is not in the product.
NOT_ADOPTED = (
    "SQLite had a trigram index too (FTS5, kept by triggers), measured here and not adopted:"
    " it cut the 200-character search from 708 to 48 ms, but SQLite's search already runs on"
    " a connection of its own under a progress handler, so the other tenant's view was"
    " unaffected without it (p50 0.4 ms beside the scan), while every recording, every"
    " agent's hot path, paid for it: a 5-message step 4.2 → 20.9 ms, 20,000 messages in"
    " batches of 1,000 5.4 → 19.6 s, the database a quarter larger."
)
_QUERY_NAMES = ("200 chars, absent", "200 chars, found", "the", "error", "q#")
SEARCHER, VIEWER = "searcher", "viewer"
Log = Callable[[str], None]


def _queries(pool: TextPool) -> dict[str, str]:
    text = next(t for t in pool.results if len(t) >= 400)
    found = text[100:300]
    absent = found[:100] + ("#" if found[100] != "#" else "@") + found[101:]
    return {
        "200 chars, absent": absent,
        "200 chars, found": found,
        "the": "the",
        "error": "error",
        "q#": "q#",
    }


async def _fill(store: Any, pool: TextPool, megabytes: float) -> dict[str, int]:
    """`megabytes` of messages in SESSIONS sessions of the searching tenant, and a 100-message
    thread of the viewing one."""
    searcher = Env(store, scope=Scope(tenant=SEARCHER))
    count = size = step = 0
    per_session = megabytes * MB / SESSIONS
    for n in range(SESSIONS):
        session = (await sessions.start(searcher, f"bench search {n}")).session
        held = 0
        while held < per_session:
            batch = pool.messages(100, first_step=step, tag=f"s{n}-")
            step += 20
            await frs_recording.record(searcher, batch, session.id)
            held += sum(len(m.content.encode()) for m in batch)
            count += len(batch)
        size += held
    viewer = Env(store, scope=Scope(tenant=VIEWER))
    await sessions.start(viewer, "the other tenant")
    await frs_recording.record(
        viewer, [NewMessage("user", f"a short note {n}") for n in range(100)]
    )
    return {"messages": count, "bytes": size}


async def _timed(action: Callable[[], Awaitable[object]], rounds: int) -> float:
    """The median time of `action`, in ms."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await action()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


async def _search(store: Any, text: str) -> object:
    """The search as the viewer runs it now."""
    async with store.searching(600) as reader:
        return await reader.search_sessions(SEARCHER, text, 50)


async def _search_until(
    stop: anyio.Event, search: Callable[[str], Awaitable[object]], text: str
) -> None:
    while not stop.is_set():
        await search(text)


async def _compare(
    store: Any,
    ways: dict[str, Callable[[str], Awaitable[object]]],
    rounds: int,
    pool: TextPool,
    log: Log,
) -> dict[str, Any]:
    """Each query's median time each way (`before`/`after`, or SQLite's one `scan`), then the
    other tenant's view alone and beside the 200-character search run without pause."""
    out: dict[str, Any] = {}
    for name, text in _queries(pool).items():
        out[name] = {
            f"{way}_ms": await _timed(partial(search, text), rounds) for way, search in ways.items()
        }
        log(f"search {name!r}: {out[name]}")
    long = _queries(pool)["200 chars, absent"]
    viewer = Env(store, scope=Scope(tenant=VIEWER))
    alone = await _timed(lambda: viewing.view(viewer, ViewOptions(last=10)), rounds * 4)
    out["view alone_ms"] = alone
    for name, search in ways.items():
        waits: list[float] = []
        stop = anyio.Event()

        async with anyio.create_task_group() as group:
            group.start_soon(_search_until, stop, search, long)
            await anyio.sleep(0.05)
            for _ in range(rounds * 4):
                started = time.perf_counter()
                await viewing.view(viewer, ViewOptions(last=10))
                waits.append((time.perf_counter() - started) * 1000)
            stop.set()
        out[f"view beside search {name}"] = {
            "p50_ms": round(statistics.median(waits), 1),
            "max_ms": round(max(waits), 1),
        }
        log(
            f"the other tenant's view beside the search {name}: {out[f'view beside search {name}']}"
        )
    return out


def _file_size(path: Path) -> int:
    return sum(
        os.path.getsize(f"{path}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{path}{suffix}")
    )


#: A database of version 7 back from 8: the trigram index on `messages`, no search tables.
BACK_TO_7 = (
    "drop table gateway_turns; delete from schema_migrations where version = 9;"
    " drop trigger messages_searched on messages; drop trigger messages_unsearched on messages;"
    " drop table search_texts; drop table search_pending; drop function frs_search_pending();"
    " drop function frs_search_forget();"
    f" create index messages_search on messages using gin ({pg_search.FOLDED_CONTENT}"
    " gin_trgm_ops); delete from schema_migrations where version = 8"
)


async def _pg_backfill(dsn: str) -> dict[str, Any]:
    """Migration 8 on `dsn` brought back to version 7 (the index on `messages`): the seconds
    the start takes, then until every message is indexed again; size before and after."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(BACK_TO_7)
        await conn.execute("vacuum analyze")
        before = int(await conn.fetchval("select pg_database_size(current_database())"))
        started = time.perf_counter()
        async with open_postgres(dsn, size=2) as db:
            seconds = time.perf_counter() - started
            assert db.indexer is not None
            await db.indexer.index_queued()
            indexed = time.perf_counter() - started
        after = int(await conn.fetchval("select pg_database_size(current_database())"))
        index = int(
            await conn.fetchval(
                "select pg_total_relation_size('search_texts') + pg_relation_size($1)",
                pg_search.SEARCH_INDEX,
            )
        )
    finally:
        await conn.close()
    return {
        "seconds": round(seconds, 2),
        "indexed_seconds": round(indexed, 2),
        "bytes_before": before,
        "bytes_after": after,
        "index_bytes": index,
    }


async def _record_corpus(store: Any) -> None:
    env = Env(store)
    for transcript in load_corpus():
        await sessions.start(env, transcript.name)
        await frs_recording.record(env, [line.to_new() for line in transcript.lines])


async def _record_thread(store: Any, pool: TextPool, size: int) -> None:
    env = Env(store)
    session = (await sessions.start(env, f"thread of {size:,}")).session
    for batch in pool.batches(size, 1_000, tag="t-"):
        await frs_recording.record(env, batch, session.id)


#: How PostgreSQL kept search's index, as the write-cost table names them, and the statements
#: that set a fresh database up so (it opens with the index after the writes).
PG_WAYS = {
    "postgres, index on messages (before)": (
        "drop trigger messages_searched on messages",
        f"create index messages_search on messages using gin ({pg_search.FOLDED_CONTENT}"
        " gin_trgm_ops)",
    ),
    "postgres, index after the write (now)": (),
    "postgres, no index": ("drop trigger messages_searched on messages",),
}
STEPS = 200


async def record_cost(
    folder: Path, cluster: Cluster, pool: TextPool, size: int, log: Log
) -> dict[str, Any]:
    """What keeping the index costs a write: the same recording on SQLite (which has none) and
    on PostgreSQL each way of `PG_WAYS`, side by side: `size` messages in batches of 1,000,
    each batch recorded on every store in turn (the order turning), then `STEPS` agent steps
    of 5 messages the same way. Where the index is kept after the write, what each write
    queued is indexed right after it, outside its time and timed apart (the indexer would
    do it at the writes' next pause), so no store's indexing falls inside another's time."""
    ways = ["sqlite", *PG_WAYS]
    batches: dict[str, list[float]] = {way: [] for way in ways}
    steps: dict[str, list[float]] = {way: [] for way in ways}
    indexing: dict[str, list[float]] = {way: [] for way in ways}
    async with AsyncExitStack() as stack:
        opened: dict[str, tuple[Env, SessionId, Any]] = {}
        for way in ways:
            if way == "sqlite":
                db: Any = await stack.enter_async_context(open_database(folder / "record.db"))
                store: Any = SqliteStore(db)
                indexer = None
            else:
                pg = await stack.enter_async_context(
                    open_postgres(cluster.create_database(), size=4)
                )
                async with pg.transaction() as conn:
                    for statement in PG_WAYS[way]:
                        await conn.execute(statement)
                store, indexer = PgStore(pg), pg.indexer
            env = Env(store)
            opened[way] = (env, (await sessions.start(env, "recording")).session.id, indexer)

        async def record(
            way: str, messages: list[NewMessage], into: dict[str, list[float]]
        ) -> None:
            env, session, indexer = opened[way]
            started = time.perf_counter()
            await frs_recording.record(env, messages, session)
            into[way].append(time.perf_counter() - started)
            if indexer is not None:
                started = time.perf_counter()
                await indexer.index_queued()
                indexing[way].append(time.perf_counter() - started)

        for k, batch in enumerate(pool.batches(size, 1_000, tag="r-")):
            for way in ways[k % len(ways) :] + ways[: k % len(ways)]:
                await record(way, batch, batches)
        log("search: recording batches measured")
        for k in range(STEPS):
            step = pool.messages(5, first_step=size + k, tag="one-")
            for way in ways[k % len(ways) :] + ways[: k % len(ways)]:
                await record(way, step, steps)
    out: dict[str, Any] = {"messages": size, "steps": STEPS}
    for way in ways:
        out[way] = {
            "batches_s": round(sum(batches[way]), 2),
            "batch_p50_ms": round(statistics.median(batches[way]) * 1000, 1),
            "step_p50_ms": round(statistics.median(steps[way]) * 1000, 2),
            "indexing_s": round(sum(indexing[way]), 2),
        }
        out[way]["batches_vs_sqlite"] = ratio(out[way]["batches_s"], out["sqlite"]["batches_s"])
        out[way]["step_vs_sqlite"] = ratio(out[way]["step_p50_ms"], out["sqlite"]["step_p50_ms"])
        log(f"search: recording, {way}: {out[way]}")
    return out


@asynccontextmanager
async def _cluster(durable: bool = False) -> AsyncIterator[Cluster]:
    cluster = await anyio.to_thread.run_sync(partial(start_cluster, durable))
    try:
        yield cluster
    finally:
        await anyio.to_thread.run_sync(cluster.stop)


async def run(folder: Path, pool: TextPool, plan: dict[str, Any], log: Log) -> dict[str, Any]:
    megabytes, rounds, thread = plan["megabytes"], plan["rounds"], plan["thread"]
    out: dict[str, Any] = {"megabytes": megabytes, "rounds": rounds, "thread": thread}
    out["load_before"] = os.getloadavg()

    async with open_database(folder / "search.db") as db:
        store = SqliteStore(db)
        out["filled"] = await _fill(store, pool, megabytes)
        log(f"search: {out['filled']['messages']:,} messages, {out['filled']['bytes']:,} bytes")
        out["sqlite"] = await _compare(store, {"scan": partial(_search, store)}, rounds, pool, log)

    async with _cluster() as cluster:
        dsn = cluster.create_database()
        async with open_postgres(dsn, size=10) as pg:
            pg_store = PgStore(pg)
            await _fill(pg_store, pool, megabytes)
            assert pg.indexer is not None
            await pg.indexer.index_queued()  # searched as the indexer leaves it, all indexed
            async with pg.transaction() as conn:
                await conn.execute("analyze")

            async def pg_scan(text: str) -> object:
                async with pg.searching(600) as conn:
                    pattern = pg_search.like_pattern(text)
                    return await conn.fetch(
                        PG_BEFORE, SEARCHER, pattern, 50, ascii_uppercase, ascii_lowercase
                    )

            ways: dict[str, Callable[[str], Awaitable[object]]] = {
                "before": pg_scan,
                "after": partial(_search, pg_store),
            }
            out["postgres"] = await _compare(pg_store, ways, rounds, pool, log)
        out["postgres"]["backfill 10 MB"] = await _pg_backfill(dsn)
        for name in ("corpus", f"{thread:,} messages"):
            dsn = cluster.create_database()
            async with open_postgres(dsn, size=4) as pg:
                if name == "corpus":
                    await _record_corpus(PgStore(pg))
                else:
                    await _record_thread(PgStore(pg), pool, thread)
            out["postgres"][f"backfill {name}"] = await _pg_backfill(dsn)
            log(f"search: PostgreSQL backfill of the {name}: {out['postgres'][f'backfill {name}']}")
    # Fsync on, as SQLite's synchronous=FULL: each commit of either is durable.
    async with _cluster(durable=True) as cluster:
        out["recording"] = await record_cost(folder, cluster, pool, plan["record"], log)
    out["load_after"] = os.getloadavg()
    return out


def _mb(value: int) -> str:
    return f"{value / MB:.1f} MB"


def render(section: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    if not section:
        return []
    sqlite, pg = section["sqlite"], section["postgres"]
    lines = [
        "## Search: PostgreSQL before and after its trigram index, SQLite's scan",
        "",
        f"One tenant's {section['filled']['messages']:,} messages"
        f" ({_mb(section['filled']['bytes'])} of corpus text in {SESSIONS} sessions); median of"
        f" {section['rounds']} searches each. PostgreSQL before: LIKE over every message of the"
        " tenant (the scan, folding with `translate`); after: the pg_trgm index, LIKE checking"
        " its candidates. SQLite: its search as it runs, the scan (LIKE over every message of"
        " the tenant, on a connection of its own, stopped at 2 s). Load average"
        f" {'/'.join(f'{x:.1f}' for x in section['load_before'])} before,"
        f" {'/'.join(f'{x:.1f}' for x in section['load_after'])} after."
        " `python -m bench --only search`.",
        "",
        "| query | SQLite scan ms | PostgreSQL before ms | PostgreSQL after ms |",
        "|---|---:|---:|---:|",
    ]
    for name in _QUERY_NAMES:
        lines.append(
            f"| {name} | {sqlite[name]['scan_ms']} | {pg[name]['before_ms']} |"
            f" {pg[name]['after_ms']} |"
        )
    before, after, scan = (
        pg["view beside search before"],
        pg["view beside search after"],
        sqlite["view beside search scan"],
    )
    lines += [
        "",
        "The other tenant's view (last ten entries) while the 200-character search runs without"
        " pause (p50 / max ms):",
        "",
        "| | SQLite | PostgreSQL |",
        "|---|---:|---:|",
        f"| alone | {sqlite['view alone_ms']} | {pg['view alone_ms']} |",
        f"| beside the scan | {scan['p50_ms']} / {scan['max_ms']} |"
        f" {before['p50_ms']} / {before['max_ms']} |",
        f"| beside the indexed search | — | {after['p50_ms']} / {after['max_ms']} |",
        "",
        "Moving the index off the write path on a database of version 7 (migration 8: the"
        " index on `messages` dropped, every message queued): the seconds the first start"
        " takes, the seconds until the indexer has indexed every message, and the database's"
        " size before → after (the folded texts are kept a second time, in `search_texts`).",
        "",
        "| database | start s | indexed s | size |",
        "|---|---:|---:|---:|",
    ]
    for name in ("10 MB", "corpus", f"{section['thread']:,} messages"):
        p = pg[f"backfill {name}"]
        lines.append(
            f"| {name} | {p['seconds']} | {p.get('indexed_seconds', '–')} |"
            f" {_mb(p['bytes_before'])} → {_mb(p['bytes_after'])} |"
        )
    recording = section.get("recording")
    if recording and "postgres, index after the write (now)" in recording:
        sqlite = recording["sqlite"]
        lines += [
            "",
            f"What the index costs a write: {recording['messages']:,} corpus messages recorded in"
            f" batches of 1,000, then {recording['steps']} agent steps of 5 messages, each batch"
            " and step recorded on every store in turn (ratios to SQLite in the same rounds),"
            " every commit durable (SQLite synchronous=FULL, PostgreSQL fsync on)."
            " Where the index is kept after the write, what each write queued is indexed right"
            " after it, outside its time and timed apart (the indexer does it at the writes'"
            " next pause, or 5 s after the first at the latest).",
            "",
            "| | batches s | × SQLite | batch p50 ms | step p50 ms | × SQLite | indexing s |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| SQLite (no index) | {sqlite['batches_s']} | 1.00× | {sqlite['batch_p50_ms']} |"
            f" {sqlite['step_p50_ms']} | 1.00× | – |",
        ]
        for way in PG_WAYS:
            r = recording[way]
            indexing = {
                "postgres, index after the write (now)": r["indexing_s"],
                "postgres, index on messages (before)": "in the write",
            }.get(way, "none")
            lines.append(
                f"| PostgreSQL, {way.removeprefix('postgres, ')} | {r['batches_s']} |"
                f" {r['batches_vs_sqlite']:.2f}× | {r['batch_p50_ms']} | {r['step_p50_ms']} |"
                f" {r['step_vs_sqlite']:.2f}× | {indexing} |"
            )
    elif recording:  # a run from before the index moved (issue 23)
        lines += [
            "",
            f"What the index costs a write: {recording['messages']:,} corpus messages recorded in"
            " batches of 1,000 (seconds), then single agent steps of 5 messages (p50 ms).",
            "",
            "| | batches s | step ms |",
            "|---|---:|---:|",
        ]
        for key, name in (
            ("postgres without index", "PostgreSQL without the index"),
            ("postgres with index", "PostgreSQL with it"),
            ("sqlite", "SQLite (no index)"),
        ):
            lines.append(
                f"| {name} | {recording[key]['batches_s']} | {recording[key]['step_p50_ms']} |"
            )
    return [*lines, "", NOT_ADOPTED, ""]
