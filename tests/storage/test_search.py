"""Search on both engines: PostgreSQL's trigram index answers exactly as the scan it replaces;
SQLite's search is the bounded scan, and stays one (issue 23: the index did not pay there).

PostgreSQL: a corpus thread per transcript (tests/data/corpus), in two tenants, plus a session
of texts chosen to trip a search up (wildcards, quotes, U+0000, letters that fold outside
ASCII); each query is answered by `search_sessions` (through the index where it applies) and
by the scan's own statement (`SCAN`, LIKE over every message of the tenant), and the two must
name the same sessions in the same order, whether the messages wait to be indexed, are half
indexed or all. The index is kept off the write path: a write queues, the indexer empties the
queue by itself, a deleted message leaves both. The plan shows the index read; a database of
version 7 (the index on `messages`) moves to it and searches the same, one whose index is gone
gets it back; a role refused `CREATE EXTENSION` logs one line and keeps the scan, and the next
start after the grant builds the index. Both engines:
only ASCII letters fold, LIKE's wildcards match themselves, a tenant finds only its own
sessions. SQLite: a fresh database has no search index and no trigger on `messages`.
"""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest

from bench.corpus import load_corpus
from bench.search import BACK_TO_7
from frs import AskedRange, Env, NewMessage, recording, sessions, squashes
from frs.model import Scope
from storage import SqliteStore, open_database
from storage.postgres import PgStore, connect_postgres, open_postgres
from storage.postgres import indexer as pg_indexer
from storage.postgres import search as pg_search
from storage.postgres.schema import MIGRATIONS
from tests.pg import Cluster

LATEST = len(MIGRATIONS)  # the PostgreSQL schema version a migrated database has

LOCAL = "local"
TENANTS = (LOCAL, "other")
#: Texts a search could get wrong: LIKE's wildcards and escape, a quote, U+0000 (LIKE
#: reads up to it), letters whose case folds outside ASCII (only ASCII folds), whitespace.
AWKWARD = (
    'Parser 100% done_x, a \\ backslash and a "quoted" word',
    "before the nul\x00after the nul",
    "ÉTÉ été Été: straße STRASSE \u212a kelvin KELVIN \u01c5 dz",
    "tabs\tand\nnew lines   and  spaces 🙂🙂🙂 emoji",
    "ΣΊΣΥΦΟΣ σίσυφος ς",
)
CRAFTED = (
    "%",
    "_",
    "\\",
    "100%",
    "0% d",
    "e_x",
    '"quoted"',
    'a "q',
    "nul",
    "nul\x00aft",
    "after the",
    "été",
    "ÉTÉ",
    "Été",
    "ete",
    "STRASSE",
    "strasse",
    "straße",
    "kelvin",
    "\u212a",
    "k",
    "ǆ",
    "\u01c5 d",
    "σίσυφος",
    "ΣΊΣΥΦΟΣ",
    "   ",
    "\n",
    "\tand\n",
    "🙂🙂",
    "🙂🙂🙂",
    "a phrase found nowhere at all",
    "ab",
    "a",
)


#: The corpus's first transcripts (350 kB of its 1 MB) and a few of the crafted queries, for
#: the tests of PostgreSQL's migration, whose scans are slow.
SMALL = 10
FEW = ("100%", "e_x", "été", "nul\x00aft", "ab")


def queries(
    texts: Sequence[str], count: int, crafted: Sequence[str] = CRAFTED, seed: int = 23
) -> list[str]:
    """Substrings of the texts, 3 to 200 characters at random places, some with the case of
    their ASCII letters swapped; then the crafted ones."""
    pick = random.Random(seed)
    found: list[str] = []
    long_enough = [t for t in texts if len(t) >= 3]
    for _ in range(count):
        text = pick.choice(long_enough)
        size = min(len(text), pick.choice((3, 4, 5, 8, 13, 30, 80, 200)))
        start = pick.randrange(len(text) - size + 1)
        query = text[start : start + size]
        if pick.random() < 0.3:
            query = "".join(c.swapcase() if c.isascii() else c for c in query)
        found.append(query)
    return [*found, *crafted]


async def fill(env: Env, transcripts: int | None = None) -> list[str]:
    """The corpus (its first `transcripts`), a thread per transcript in alternating tenants,
    and the awkward texts in a session of each tenant (one squashed: a squashed original is
    still found); every text."""
    texts: list[str] = []
    for n, transcript in enumerate(load_corpus()[:transcripts]):
        scoped = env.for_scope(Scope(tenant=TENANTS[n % 2]))
        await sessions.start(scoped, f"corpus {transcript.name}")
        await recording.record(scoped, [line.to_new() for line in transcript.lines])
        texts += [line.content for line in transcript.lines if line.content]
    for tenant in TENANTS:
        scoped = env.for_scope(Scope(tenant=tenant))
        await sessions.start(scoped, f"awkward {tenant} Title_%")
        await recording.record(scoped, [NewMessage("user", text) for text in AWKWARD])
        await squashes.compress_ranges(
            scoped, [AskedRange(1, 2, "the summary of two awkward ones")]
        )
    return [*texts, *AWKWARD]


async def same_answers(engine: PgEngine, asked: Sequence[str]) -> int:
    """Asserts index and scan agree on every query, for both tenants, and that the index's
    first answer is the scan's (the limit); the number of (query, tenant) pairs that found
    something (the test is not vacuous)."""
    found = 0
    for text in asked:
        for tenant in TENANTS:
            scanned = await engine.scan(tenant, text, 50)
            assert await engine.indexed(tenant, text, 50) == scanned, (tenant, text)
            assert await engine.indexed(tenant, text, 1) == scanned[:1], (tenant, text)
            found += bool(scanned)
    return found


class PgEngine:
    """PostgreSQL's raw connections: the search as the store runs it, the scan, the plan."""

    def __init__(self, db: Any) -> None:
        self.db = db

    async def indexed(self, tenant: str, text: str, limit: int) -> list[str]:
        async with PgStore(self.db).searching(60) as reader:
            return [s.id for s in await reader.search_sessions(tenant, text, limit)]

    async def scan(self, tenant: str, text: str, limit: int) -> list[str]:
        async with self.db.searching(60) as conn:
            pattern = pg_search.like_pattern(text)
            rows = await conn.fetch(pg_search.SCAN, tenant, pattern, limit)
        return [row[0] for row in rows]

    async def plan(self, text: str) -> str:
        async with self.db.searching(60) as conn, pg_search.reading_index(conn):
            rows = await conn.fetch(
                f"explain {pg_search.INDEXED}", "local", pg_search.like_pattern(text), 10
            )
        return "\n".join(row[0] for row in rows)


@asynccontextmanager
async def opened(backend: str, where: str) -> AsyncIterator[Any]:
    """A store on a new database of the engine named."""
    if backend == "sqlite":
        async with open_database(where) as db:
            yield SqliteStore(db)
    else:
        async with open_postgres(where, size=4) as pg:
            yield PgStore(pg)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """An engine's name and a new database of it."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "search.db")
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return "postgres", cluster.create_database()


LONG = "Traceback (most recent call last):"


async def counts(dsn: str) -> tuple[int, int, int]:
    """(messages, queued, indexed) of the database."""
    return (
        await psql_as(dsn, "select count(*) from messages"),
        await psql_as(dsn, "select count(*) from search_pending"),
        await psql_as(dsn, "select count(*) from search_texts"),
    )


class TestPostgresIndex:
    async def test_queued_half_and_wholly_indexed_answer_every_query_as_the_scan_does(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        db = await connect_postgres(dsn, size=4)  # a pool nobody indexes for: done here
        try:
            texts = await fill(Env(PgStore(db)))
            engine, asked = PgEngine(db), queries(texts, 10)
            stored, queued, indexed = await counts(dsn)
            assert (queued, indexed) == (stored, 0)
            found = await same_answers(engine, asked)
            await db.fetch(pg_indexer._MOVE, stored // 2)  # the oldest half
            assert await counts(dsn) == (stored, stored - stored // 2, stored // 2)
            found += await same_answers(engine, asked)
            assert await pg_indexer.SearchIndexer(db).index_queued() == stored - stored // 2
            assert await counts(dsn) == (stored, 0, stored)
            found += await same_answers(engine, asked)
        finally:
            await db.close()
        assert found > 3 * 10  # most queries are cut from the texts: they find their session

    async def test_what_a_write_queues_is_indexed_after_it_by_itself_and_leaves_when_deleted(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with open_postgres(dsn, size=4) as db:
            env = Env(PgStore(db))
            await sessions.start(env, "indexed by itself")
            await recording.record(
                env, [NewMessage("user", f"message number {n}") for n in range(30)]
            )
            with anyio.fail_after(30):  # the indexer runs once the writes pause
                while (await counts(dsn))[1]:  # noqa: ASYNC110 - another task's work
                    await anyio.sleep(0.05)
            assert await counts(dsn) == (30, 0, 30)
            await recording.remove_newest(env)
            assert await counts(dsn) == (29, 0, 29)
            async with PgStore(db).searching(60) as reader:
                assert await reader.search_sessions(LOCAL, "message number 29", 9) == []
                assert len(await reader.search_sessions(LOCAL, "message number 28", 9)) == 1

    async def test_a_message_deleted_while_queued_leaves_the_queue(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        db = await connect_postgres(dsn, size=4)
        try:
            env = Env(PgStore(db))
            await sessions.start(env, "deleted while queued")
            await recording.record(env, [NewMessage("user", f"note {n}") for n in range(3)])
            await recording.remove_newest(env)
            assert await counts(dsn) == (2, 2, 0)
            assert await pg_indexer.SearchIndexer(db).index_queued() == 2
            assert await counts(dsn) == (2, 0, 2)
        finally:
            await db.close()

    async def test_the_plan_reads_the_trigram_index(self, pg_cluster: Cluster) -> None:
        async with open_postgres(pg_cluster.create_database(), size=4) as pg:
            await fill(Env(PgStore(pg)))
            assert pg.indexer is not None
            await pg.indexer.index_queued()
            plan = await PgEngine(pg).plan(LONG)
        assert f"Bitmap Index Scan on {pg_search.SEARCH_INDEX}" in plan, plan
        assert "Seq Scan on messages" not in plan, plan
        assert "Seq Scan on search_texts" not in plan, plan

    def test_queries_pg_trgm_cannot_narrow_take_the_scan(self) -> None:
        assert not pg_search.uses_index("ab")
        assert not pg_search.uses_index("%%% ___ !!!")
        assert not pg_search.uses_index("a b c d e")
        assert pg_search.uses_index("x ÉTÉ")


class TestBothEngines:
    async def test_only_ascii_letters_fold(self, backend: tuple[str, str]) -> None:
        async with opened(*backend) as store:
            env = Env(store)
            for title, text in (("lower", "été straße σίσυφος"), ("upper", "ÉTÉ STRASSE ΣΊΣΥΦΟΣ")):
                await sessions.start(env, title)
                await recording.record(env, [NewMessage("user", f"{text} Mixed CASE ascii")])
            async with store.searching(60) as reader:

                async def titles(text: str) -> list[str]:
                    return sorted(s.title for s in await reader.search_sessions(LOCAL, text, 9))

                assert await titles("été") == ["lower"]
                assert await titles("ÉTÉ") == ["upper"]
                assert await titles("Été") == []
                assert await titles("σίσυφος") == ["lower"]
                assert await titles("strasse") == ["upper"]
                assert await titles("mixed case ASCII") == ["lower", "upper"]
                assert await titles("é straße σ") == ["lower"]

    async def test_wildcards_match_themselves_and_a_tenant_finds_only_its_own(
        self, backend: tuple[str, str]
    ) -> None:
        async with opened(*backend) as store:
            env = Env(store)
            await sessions.start(env, "wild")
            await recording.record(env, [NewMessage("user", "Parser 100% done_x, a \\ backslash")])
            await sessions.start(env, "tame")
            await recording.record(env, [NewMessage("user", "Parser 1000 doneXx, a / slash")])
            other = env.for_scope(Scope(tenant="other"))
            await sessions.start(other, "theirs")
            await recording.record(
                other, [NewMessage("user", "Parser 100% done_x, a \\ backslash")]
            )
            async with store.searching(60) as reader:

                async def titles(tenant: str, text: str) -> list[str]:
                    return sorted(s.title for s in await reader.search_sessions(tenant, text, 9))

                for text in ("100%", "0% d", "e_x", "\\", "%", "_", "100% DONE_X"):
                    assert await titles(LOCAL, text) == ["wild"], text
                assert await titles(LOCAL, "parser 100") == ["tame", "wild"]
                assert await titles("other", "parser 100") == ["theirs"]
                assert await titles("nobody", "parser") == []


def schema_of(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return [
            tuple(row) for row in conn.execute("select type, name, tbl_name from sqlite_master")
        ]
    finally:
        conn.close()


class TestSqliteScans:
    async def test_a_fresh_database_has_no_search_index_and_no_trigger_on_messages(
        self, tmp_path: Path
    ) -> None:
        # Decided in issue 23: an FTS5 trigram index cut a long search 708 -> 48 ms but made
        # every recording 4-5x slower, and SQLite's search already stalls no other tenant (its
        # own connection, a progress handler). Recording writes one row per message.
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            env = Env(SqliteStore(db))
            await sessions.start(env, "one row per message")
            await recording.record(env, [NewMessage("user", f"message {n}") for n in range(5)])
            async with SqliteStore(db).searching(60) as reader:
                assert len(await reader.search_sessions(LOCAL, "message 4", 9)) == 1
        schema = schema_of(path)
        assert not [name for _, name, _ in schema if "search" in name], schema
        assert not [name for kind, name, table in schema if kind == "trigger"], schema
        assert {kind for kind, _, table in schema if table == "messages"} <= {"table", "index"}


async def psql_as(dsn: str, sql: str) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


class TestPostgresMigration:
    async def test_a_version_7_database_moves_its_index_off_the_write_path_and_searches_the_same(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with open_postgres(dsn, size=4) as db:
            texts = await fill(Env(PgStore(db)), SMALL)
        pg_cluster.psql(BACK_TO_7, Cluster.name_of(dsn))
        db = await connect_postgres(dsn, size=4)  # migrates; indexing is done here
        try:
            assert await psql_as(dsn, "select max(version) from schema_migrations") == LATEST
            assert not await psql_as(dsn, "select to_regclass('messages_search') is not null")
            stored, queued, indexed = await counts(dsn)
            assert (queued, indexed) == (stored, 0)  # every message queued, searchable
            assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8
            await pg_indexer.SearchIndexer(db).index_queued()
            assert await counts(dsn) == (stored, 0, stored)
            assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8
        finally:
            await db.close()

    async def test_a_database_whose_index_is_gone_gets_it_back_and_searches_the_same(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with open_postgres(dsn, size=4) as db:
            texts = await fill(Env(PgStore(db)), SMALL)
        await psql_as(dsn, f"drop index {pg_search.SEARCH_INDEX}")
        async with open_postgres(dsn, size=4) as db:
            assert await psql_as(dsn, "select max(version) from schema_migrations") == LATEST
            assert await psql_as(dsn, f"select to_regclass('{pg_search.SEARCH_INDEX}') is not null")
            assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8

    async def test_a_refused_extension_logs_one_line_and_keeps_the_scan_until_granted(
        self, pg_cluster: Cluster, caplog: pytest.LogCaptureFixture
    ) -> None:
        dsn = pg_cluster.create_database()
        name = Cluster.name_of(dsn)
        role = f"plain_{name}"
        pg_cluster.psql(f"create role {role} login")
        pg_cluster.psql(f"grant create on schema public to {role}", database=name)
        plain = dsn.replace("frs@", f"{role}@", 1)
        with caplog.at_level(logging.INFO, logger="storage.postgres"):
            async with open_postgres(plain, size=4) as db:
                store = PgStore(db)
                texts = await fill(Env(store))
                assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8
        refusals = [r.getMessage() for r in caplog.records if "pg_trgm" in r.getMessage()]
        assert len(refusals) == 1, refusals
        assert refusals[0].startswith("search scans every message (no trigram index)")
        assert "permission denied to create extension" in refusals[0]
        assert not await psql_as(dsn, f"select to_regclass('{pg_search.SEARCH_INDEX}') is not null")
        assert not await psql_as(dsn, "select to_regclass('messages_search') is not null")
        assert await counts(dsn) == (await psql_as(dsn, "select count(*) from messages"), 0, 0)
        assert await psql_as(dsn, "select max(version) from schema_migrations") == LATEST
        caplog.clear()
        pg_cluster.psql(f"grant create on database {name} to {role}")
        with caplog.at_level(logging.INFO, logger="storage.postgres"):
            async with open_postgres(plain, size=4) as db:
                assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8
        assert await psql_as(dsn, f"select to_regclass('{pg_search.SEARCH_INDEX}') is not null")
        assert "built the trigram index for search (search_texts_trigrams)" in caplog.messages
