"""Search through the trigram index answers exactly as the scan it replaces, on both engines.

A corpus thread per transcript (tests/data/corpus), in two tenants, plus a session of texts
chosen to trip a search up (wildcards, quotes, U+0000, letters that fold outside ASCII); each
query is answered by `search_sessions` (through the index where it applies) and by the scan's
own statement (`SCAN`, today's LIKE over every message of the tenant), and the two must name
the same sessions in the same order. The plans show the index read; SQLite's triggers keep it
in step; an old database (SQLite 9, PostgreSQL 4) gets it built and searches the same; a
failed migration leaves version 9; a PostgreSQL role refused `CREATE EXTENSION` logs one line
and keeps the scan, and the next start after the grant builds the index.
"""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import asyncpg
import pytest

from bench.corpus import load_corpus
from frs import NewMessage, ReasoningService
from frs.errors import StoreUnavailable
from frs.model import Scope
from storage import SqliteStore, open_database
from storage import search as sqlite_search
from storage.postgres import PgStore, open_postgres
from storage.postgres import search as pg_search
from tests.pg import Cluster

LOCAL = "local"
TENANTS = (LOCAL, "other")
#: Texts a search could get wrong: LIKE's wildcards and escape, FTS5's quote, U+0000 (LIKE
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


class Engine(Protocol):
    """One backend's raw connections: the search as the store runs it, the scan, the plans."""

    async def indexed(self, tenant: str, text: str, limit: int) -> list[str]: ...
    async def scan(self, tenant: str, text: str, limit: int) -> list[str]: ...
    async def plan(self, text: str) -> str: ...


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


async def fill(service: ReasoningService, transcripts: int | None = None) -> list[str]:
    """The corpus (its first `transcripts`), a thread per transcript in alternating tenants,
    and the awkward texts in a session of each tenant (one squashed: a squashed original is
    still found); every text."""
    texts: list[str] = []
    for n, transcript in enumerate(load_corpus()[:transcripts]):
        scoped = service.for_scope(Scope(tenant=TENANTS[n % 2]))
        await scoped.start_session(f"corpus {transcript.name}")
        await scoped.record([line.to_new() for line in transcript.lines])
        texts += [line.content for line in transcript.lines if line.content]
    for tenant in TENANTS:
        scoped = service.for_scope(Scope(tenant=tenant))
        await scoped.start_session(f"awkward {tenant} Title_%")
        await scoped.record([NewMessage("user", text) for text in AWKWARD])
        await scoped.compress_ranges([(1, 2, "the summary of two awkward ones")])
    return [*texts, *AWKWARD]


async def same_answers(engine: Engine, asked: Sequence[str]) -> int:
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


class SqliteEngine:
    def __init__(self, db: Any) -> None:
        self.db = db

    async def indexed(self, tenant: str, text: str, limit: int) -> list[str]:
        # The index is read whenever the query has a trigram: MATCH cannot be planned away.
        async with SqliteStore(self.db).searching(60) as reader:
            return [s.id for s in await reader.search_sessions(tenant, text, limit)]

    async def scan(self, tenant: str, text: str, limit: int) -> list[str]:
        async with self.db.searching(60) as conn:
            pattern = sqlite_search.like_pattern(text)
            rows = await conn.execute_fetchall(sqlite_search.SCAN, (tenant, pattern, limit))
        return [row[0] for row in rows]

    async def plan(self, text: str) -> str:
        query = sqlite_search.trigram_query(text)
        assert query is not None
        async with self.db.searching(60) as conn:
            rows = await conn.execute_fetchall(
                f"explain query plan {sqlite_search.INDEXED}",
                ("local", sqlite_search.like_pattern(text), 10, query),
            )
        return "\n".join(str(row[3]) for row in rows)


class PgEngine:
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
async def opened(backend: str, where: str) -> AsyncIterator[tuple[Any, Engine]]:
    if backend == "sqlite":
        async with open_database(where) as db:
            yield SqliteStore(db), SqliteEngine(db)
    else:
        async with open_postgres(where, size=4) as pg:
            yield PgStore(pg), PgEngine(pg)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """An engine's name and a new database of it."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "search.db")
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return "postgres", cluster.create_database()


#: The index against its content table, row by row (SQLITE_CORRUPT_VTAB where they differ).
INTEGRITY_CHECK = (
    "insert into messages_search (messages_search, rank) values ('integrity-check', 1)"
)
LONG = "Traceback (most recent call last):"


class TestSameAnswers:
    async def test_the_index_answers_every_query_as_the_scan_does_on_the_corpus(
        self, backend: tuple[str, str]
    ) -> None:
        async with opened(*backend) as (store, engine):
            texts = await fill(ReasoningService(store))
            # PostgreSQL's scan is slow (translate over every text): fewer queries there.
            asked = queries(texts, 150 if backend[0] == "sqlite" else 20)
            found = await same_answers(engine, asked)
        assert found > 20  # most queries are cut from the texts: they find their session

    async def test_the_plan_reads_the_trigram_index(self, backend: tuple[str, str]) -> None:
        async with opened(*backend) as (store, engine):
            await fill(ReasoningService(store))
            plan = await engine.plan(LONG)
        if backend[0] == "sqlite":
            assert "SCAN f VIRTUAL TABLE INDEX" in plan, plan
            assert "SEARCH m USING INTEGER PRIMARY KEY" in plan, plan
        else:
            assert "Bitmap Index Scan on messages_search" in plan, plan
            assert "Seq Scan on messages" not in plan, plan

    async def test_only_ascii_letters_fold_through_the_index_too(
        self, backend: tuple[str, str]
    ) -> None:
        async with opened(*backend) as (store, _):
            service = ReasoningService(store)
            for title, text in (("lower", "été straße σίσυφος"), ("upper", "ÉTÉ STRASSE ΣΊΣΥΦΟΣ")):
                await service.start_session(title)
                await service.record([NewMessage("user", f"{text} Mixed CASE ascii")])
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

    def test_short_queries_and_queries_pg_trgm_cannot_narrow_take_the_scan(self) -> None:
        assert sqlite_search.trigram_query("ab") is None
        assert sqlite_search.trigram_query("a\x00bcd") is None
        assert sqlite_search.trigram_query('a"bc a') == '"a""b" AND """bc" AND "bc " AND "c a"'
        assert sqlite_search.trigram_query("aaaa") == '"aaa"'
        assert not pg_search.uses_index("ab")
        assert not pg_search.uses_index("%%% ___ !!!")
        assert not pg_search.uses_index("a b c d e")
        assert pg_search.uses_index("x ÉTÉ")


class TestSqliteIndexInStep:
    async def test_triggers_follow_records_removals_squashes_and_edits(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            store = SqliteStore(db)
            service = ReasoningService(store)
            await service.start_session("kept in step")
            await service.record([NewMessage("user", f"message number {n}") for n in range(9)])
            await service.record([NewMessage("user", "the newest, then removed")])
            await service.remove_newest()
            await service.compress_ranges([(2, 5, "a summary of four")])
            async with db.transaction() as conn:
                await conn.execute(
                    "update messages set content = 'edited text' where content = ?",
                    ("message number 7",),
                )
            async with store.searching(60) as reader:

                async def found(text: str) -> int:
                    return len(await reader.search_sessions("local", text, 5))

                counts = [
                    await found(text)
                    for text in ("number 3", "summary of four", "then removed", "number 7")
                ]
                assert counts == [1, 1, 0, 0]
                assert await found("EDITED TEXT") == 1
            async with db.transaction() as conn:
                await conn.execute(INTEGRITY_CHECK)


def downgrade_sqlite(path: Path) -> None:
    """The file as version 9 left it: no search index."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for trigger in ("insert", "update", "delete"):
            conn.execute(f"drop trigger messages_search_{trigger}")
        conn.execute("drop table messages_search")
        conn.execute("pragma user_version = 9")
    finally:
        conn.close()


def schema_of(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return [tuple(row) for row in conn.execute("select type, name from sqlite_master")]
    finally:
        conn.close()


class TestSqliteMigration:
    async def test_a_version_9_database_is_indexed_and_searches_the_same(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            texts = await fill(ReasoningService(SqliteStore(db)))
        downgrade_sqlite(path)
        assert "messages_search" not in {name for _, name in schema_of(path)}
        async with open_database(path) as db:
            assert await db.user_version() == 10
            store = SqliteStore(db)
            assert await same_answers(SqliteEngine(db), queries(texts, 20)) > 20
            async with db.transaction() as conn:
                await conn.execute(INTEGRITY_CHECK)
            async with store.searching(60) as reader:
                assert [s.title for s in await reader.search_sessions("other", "été Été", 5)] == [
                    "awkward other Title_%"
                ]

    async def test_a_failure_at_its_last_statement_leaves_version_9_and_no_index(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            await fill(ReasoningService(SqliteStore(db)))
        downgrade_sqlite(path)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            # The migration's last statement makes this trigger: it fails after the index
            # was created and filled.
            conn.execute(
                "create trigger messages_search_delete after delete on sessions begin select 1; end"
            )
            messages = conn.execute(
                "select count(*), sum(length(content)) from messages"
            ).fetchall()
        finally:
            conn.close()
        before = schema_of(path)
        with pytest.raises(StoreUnavailable, match="messages_search_delete already exists"):
            async with open_database(path):
                pass
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            assert conn.execute("pragma user_version").fetchone() == (9,)
            again = conn.execute("select count(*), sum(length(content)) from messages").fetchall()
        finally:
            conn.close()
        assert schema_of(path) == before
        assert again == messages


async def psql_as(dsn: str, sql: str) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


class TestPostgresMigration:
    async def test_a_version_4_database_is_indexed_and_searches_the_same(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with open_postgres(dsn, size=4) as db:
            texts = await fill(ReasoningService(PgStore(db)), SMALL)
        await psql_as(dsn, "drop index messages_search")
        await psql_as(dsn, "delete from schema_migrations where version = 5")
        async with open_postgres(dsn, size=4) as db:
            assert await psql_as(dsn, "select max(version) from schema_migrations") == 5
            assert await psql_as(dsn, "select to_regclass('messages_search') is not null")
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
                texts = await fill(ReasoningService(store))
                assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8
        refusals = [r.getMessage() for r in caplog.records if "pg_trgm" in r.getMessage()]
        assert len(refusals) == 1, refusals
        assert refusals[0].startswith("search scans every message (no trigram index)")
        assert "permission denied to create extension" in refusals[0]
        assert not await psql_as(dsn, "select to_regclass('messages_search') is not null")
        assert await psql_as(dsn, "select max(version) from schema_migrations") == 5
        caplog.clear()
        pg_cluster.psql(f"grant create on database {name} to {role}")
        with caplog.at_level(logging.INFO, logger="storage.postgres"):
            async with open_postgres(plain, size=4) as db:
                assert await same_answers(PgEngine(db), queries(texts, 8, FEW)) > 8
        assert await psql_as(dsn, "select to_regclass('messages_search') is not null")
        assert "built the trigram index for search (messages_search)" in caplog.messages
