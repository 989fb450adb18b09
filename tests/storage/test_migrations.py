"""Schema migrations: a fresh database reaches the newest version, a rerun changes nothing, an
upgrade from every shipped version keeps its data, a failed migration leaves `user_version`
(and the schema) as they were, and a database from a newer frs-mcp is refused untouched.

Databases are prepared with the standard `sqlite3` module, so each test controls exactly which
version and which rows a file holds before `open_database` sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import sys
import threading
from pathlib import Path

import anyio
import pytest

from frs import (
    AskedRange,
    Env,
    NewMessage,
    SessionId,
    StoreUnavailable,
    ToolCall,
    ViewOptions,
    pages,
    recording,
    sessions,
    squashes,
    viewing,
)
from frs.model import Scope
from frs.originals import render_originals
from frs.text import estimate_tokens
from storage import (
    APPLICATION_ID,
    MIGRATIONS,
    ForeignDatabase,
    SchemaTooNew,
    SqliteStore,
    migrate,
    open_database,
)
from storage.migrations import BACKFILLS

LATEST = len(MIGRATIONS)
_CREATED = re.compile(r"^create (?:unique )?(?:table|index) (\w+)", re.IGNORECASE)
_DROPPED = re.compile(r"^drop table (\w+)", re.IGNORECASE)
_RENAMED = re.compile(r"^alter table (\w+) rename to (\w+)", re.IGNORECASE)
# Rows valid in the schema of version 1, which later migrations must keep readable: a session
# with two live messages, its block count, and the current-session marker.
SEED_V1 = (
    "insert into sessions (id, title, revision, next_number, live_count, live_tokens,"
    " live_user, recorded, created_at, updated_at)"
    " values ('old', 'Old thread', 1, 3, 2, 4, 2, 2, '2024-01-01', '2024-01-01')",
    "insert into messages (session_id, number, ord, ord_last, live, role, kind, lane, content,"
    " created_at, sha256, tokens) values"
    " ('old', 1, 1, 1, 1, 'user', 'message', 'user', 'kept one', '2024-01-01', 'a1', 2),"
    " ('old', 2, 2, 2, 1, 'user', 'message', 'user', 'kept two', '2024-01-01', 'b2', 2)",
    "insert into blocks (session_id, block, live) values ('old', 0, 2)",
)
# The current-session marker: one per database before version 6, one per scope from it on.
MARK_V1 = "insert into current_session (id, session_id) values (1, 'old')"
MARK_V6 = (
    "insert into current_sessions (tenant, client, session_id) values ('local', 'default', 'old')"
)


def seed(version: int) -> tuple[str, ...]:
    """SEED_V1 and the marker, as a database at `version` holds them."""
    return (*SEED_V1, MARK_V6 if version >= 6 else MARK_V1)


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def journal_mode(path: Path) -> str:
    with contextlib.closing(connect(path)) as conn:
        return str(conn.execute("pragma journal_mode").fetchone()[0])


async def open_then_cancel(path: Path, after: float) -> None:
    with anyio.move_on_after(after):
        async with open_database(path):
            await anyio.sleep(1)


def aiosqlite_workers() -> list[threading.Thread]:
    return [
        thread
        for thread in threading.enumerate()
        if thread.name.endswith("(_connection_worker_thread)") and thread.is_alive()
    ]


def build_at(path: Path, version: int) -> None:
    """A database file whose schema is exactly that of `version`."""
    conn = connect(path)
    try:
        for statements in MIGRATIONS[:version]:
            for sql in statements:
                conn.execute(sql)
        conn.execute(f"pragma user_version = {version:d}")
        if version == 0:
            # Tables in a file frs-mcp never migrated are another application's, unless the
            # file carries our stamp: these tests add tables to a file of ours.
            conn.execute(f"pragma application_id = {APPLICATION_ID:d}")
    finally:
        conn.close()


def run(path: Path, *statements: str) -> None:
    conn = connect(path)
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def version_of(path: Path) -> int:
    conn = connect(path)
    try:
        return int(conn.execute("pragma user_version").fetchone()[0])
    finally:
        conn.close()


def rows_of(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = connect(path)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def schema_of(path: Path) -> list[tuple[str, str, str | None]]:
    conn = connect(path)
    try:
        rows = conn.execute("select type, name, sql from sqlite_master order by type, name")
        return [(row[0], row[1], row[2]) for row in rows]
    finally:
        conn.close()


def names_standing() -> set[str]:
    """Tables and indexes the migrations leave, following their drops and renames."""
    standing: set[str] = set()
    for statements in MIGRATIONS:
        for sql in statements:
            if created := _CREATED.match(sql.strip()):
                standing.add(created[1])
            elif dropped := _DROPPED.match(sql.strip()):
                standing.discard(dropped[1])
                # Dropping a table drops its indexes; the migration makes them again if needed.
                standing -= {n for n in standing if n.startswith(dropped[1] + "_")}
            elif renamed := _RENAMED.match(sql.strip()):
                standing.discard(renamed[1])
                standing.add(renamed[2])
    return standing


_ADDED = re.compile(r"alter table (\w+) add column (\w+)")


def names_created_by(version: int) -> list[str]:
    """Tables and indexes migration `version` (1-based) creates, in order."""
    found = (_CREATED.match(sql.strip()) for sql in MIGRATIONS[version - 1])
    return [match[1] for match in found if match]


class TestFreshDatabase:
    async def test_reaches_the_newest_version_with_every_table(self, tmp_path: Path) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            assert await db.user_version() == LATEST
        tables = {name for kind, name, _ in schema_of(path) if kind == "table"}
        assert version_of(path) == LATEST
        assert {
            "sessions",
            "messages",
            "calls",
            "blocks",
            "squashes",
            "squash_members",
            "plan_steps",
            "checkpoints",
            "changes",
            "current_sessions",
        } <= tables
        assert names_standing() <= {name for _, name, _ in schema_of(path)}

    async def test_reopening_changes_neither_version_nor_schema_nor_data(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            env = Env(SqliteStore(db))
            session = (await sessions.start(env, "kept")).session
            await recording.record(env, [NewMessage("user", "still here")])
        schema, version = schema_of(path), version_of(path)
        async with open_database(path) as db:
            assert await migrate(db) == LATEST  # a second run in the same process, too
            again = Env(SqliteStore(db))
            found = await sessions.get_session(again, session.id)
            page = await pages.get_alias(again, "M.1", session_id=session.id)
        assert (schema_of(path), version_of(path)) == (schema, version)
        assert (found.title, found.revision, page.text) == ("kept", 1, "still here")

    async def test_several_connections_migrating_at_once_all_succeed(self, tmp_path: Path) -> None:
        # SQLite refuses the switch to WAL on a new file at once, busy timeout or not, while
        # another connection switches it: about 1 open in 50 failed this way before the retry,
        # so many rounds of four make the race all but certain to show.
        rounds, width = 30, 4
        reached: list[int] = []

        async def open_one(path: Path) -> None:
            async with open_database(path) as db:
                reached.append(await db.user_version())

        for round_ in range(rounds):
            async with anyio.create_task_group() as group:
                for _ in range(width):
                    group.start_soon(open_one, tmp_path / f"frs-{round_}.db")
        assert reached == [LATEST] * (rounds * width)
        assert {journal_mode(tmp_path / f"frs-{n}.db") for n in range(rounds)} == {"wal"}

    def test_an_open_cancelled_at_any_point_leaves_no_worker_behind(self, tmp_path: Path) -> None:
        # A worker still running after a cancelled open reports later to an event loop that is
        # closed by then: a traceback in whatever runs next, as a CI run once showed. Each open
        # runs in its own event loop, closed as soon as the cancelled open returns.
        before = set(aiosqlite_workers())
        stray: list[BaseException | None] = []
        hook = threading.excepthook
        threading.excepthook = lambda args: stray.append(args.exc_value)
        try:
            for step in range(60):
                asyncio.run(open_then_cancel(tmp_path / f"frs-{step}.db", step * 0.0003))
                for worker in set(aiosqlite_workers()) - before:
                    worker.join(5)  # a stopped worker ends within microseconds
        finally:
            threading.excepthook = hook
        assert stray == []
        assert set(aiosqlite_workers()) - before == set()


class TestNewerDatabase:
    async def test_is_refused_naming_both_versions_and_left_untouched(self, tmp_path: Path) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path):
            pass
        run(path, f"pragma user_version = {LATEST + 3:d}")
        before = path.read_bytes()
        with pytest.raises(SchemaTooNew) as caught:
            async with open_database(path):
                pass
        assert (caught.value.found, caught.value.supported) == (LATEST + 3, LATEST)
        assert f"schema version {LATEST + 3}" in str(caught.value)
        assert f"versions up to {LATEST}" in str(caught.value)
        assert path.read_bytes() == before
        assert version_of(path) == LATEST + 3

    async def test_a_live_wal_database_is_refused_with_its_three_files_byte_identical(
        self, tmp_path: Path
    ) -> None:
        # A newer frs-mcp's database as it is while that server runs (or after it was killed):
        # WAL mode, the newest changes still in -wal, and -shm. Opened read-write, the refusal
        # checkpointed the WAL into the main file and deleted -wal and -shm.
        path = tmp_path / "frs.db"
        async with open_database(path):
            pass
        script = (
            "import os, sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('pragma wal_autocheckpoint = 0')\n"
            f"c.execute('pragma user_version = {LATEST + 3:d}')\n"
            "c.execute('create table later (x)')\n"
            "os._exit(0)\n"  # no close, so no checkpoint: -wal and -shm stay
        )
        await anyio.run_process([sys.executable, "-c", script, str(path)])
        files = [path, tmp_path / "frs.db-wal", tmp_path / "frs.db-shm"]
        before = [file.read_bytes() for file in files]
        assert before[1], "the newer changes are in the WAL"
        with pytest.raises(SchemaTooNew) as caught:
            async with open_database(path):
                pass
        assert caught.value.found == LATEST + 3
        assert [file.read_bytes() for file in files] == before


def files_of(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir())}


class TestApplicationId:
    async def test_new_and_older_databases_are_stamped(self, tmp_path: Path) -> None:
        new, old = tmp_path / "new.db", tmp_path / "old.db"
        build_at(old, LATEST)
        run(old, *seed(LATEST))
        for path in (new, old):
            async with open_database(path):
                pass
            assert rows_of(path, "pragma application_id") == [(APPLICATION_ID,)]
        async with open_database(old) as db:  # and opened again as ours
            assert await db.user_version() == LATEST

    async def test_another_applications_stamped_file_is_refused_untouched(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "photos.db"
        run(path, "pragma application_id = 305419896", "create table photos (x)")
        before = files_of(path)
        with pytest.raises(ForeignDatabase) as caught:
            async with open_database(path):
                pass
        assert str(caught.value) == (
            f"{path} is not an frs-mcp database: its application_id is 0x12345678, not "
            "frs-mcp's. Nothing was changed. Point --db (or FRS_DB) at a new file name, or "
            "leave it out to use the default database."
        )
        assert files_of(path) == before

    async def test_an_unstamped_file_of_other_tables_is_refused_untouched(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "notes.db"
        run(path, "pragma user_version = 3", "create table notes (x)", "create table tags (y)")
        before = files_of(path)
        with pytest.raises(ForeignDatabase, match=r"it holds other tables \(notes, tags\)"):
            async with open_database(path):
                pass
        assert files_of(path) == before

    async def test_a_relative_path_with_uri_characters_is_refused_the_same_way(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        folder = tmp_path / "odd?name#here"
        folder.mkdir()
        run(folder / "notes.db", "create table notes (x)")
        monkeypatch.chdir(tmp_path)
        # Named by its absolute path: the host's working directory is not the user's.
        where = re.escape(str(folder / "notes.db"))
        with pytest.raises(ForeignDatabase, match=rf"^{where} is not an frs-mcp"):
            async with open_database("odd?name#here/notes.db"):
                pass


class TestFailedMigration:
    async def test_a_conflicting_table_leaves_version_zero_and_no_new_tables(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        build_at(path, 0)
        run(path, "create table sessions (id integer primary key, note text)")
        before = schema_of(path)
        # The store reports the engine's failure in the domain's terms, with SQLite's words.
        with pytest.raises(StoreUnavailable, match="table sessions already exists"):
            async with open_database(path):
                pass
        assert version_of(path) == 0
        assert schema_of(path) == before

    @pytest.mark.parametrize("version", range(LATEST))
    async def test_a_migration_failing_on_its_last_statement_rolls_back_whole(
        self, tmp_path: Path, version: int
    ) -> None:
        path = tmp_path / "frs.db"
        build_at(path, version)
        existing = {name for _, name, _ in schema_of(path)}
        # A rebuild re-creates indexes that already exist: collide with its last new object.
        names = [n for n in names_created_by(version + 1) if n not in existing]
        if names:
            # A table under the name of the migration's last new object: everything before it
            # runs, then that statement fails, and all of it must roll back.
            run(path, f"create table {names[-1]} (x)")
            failure: tuple[type[Exception], ...] = (StoreUnavailable,)
            says = "already"
        elif MIGRATIONS[version] and (added := _ADDED.match(MIGRATIONS[version][-1].strip())):
            # A migration that adds a column: the column is there already, so its last
            # statement fails.
            run(path, f"alter table {added[1]} add column {added[2]} text")
            failure = (StoreUnavailable,)
            says = "duplicate column"
        else:
            # A migration that is only a backfill fails on a row it cannot read.
            assert version + 1 in BACKFILLS, f"migration {version + 1} can fail in no way here"
            run(path, *SEED_V1, "update messages set tool_calls = 'not JSON' where number = 2")
            failure = (ValueError,)
            says = "Expecting value"
        before = schema_of(path)
        data = rows_of(path, "select number, tokens from messages") if not names else []
        with pytest.raises(failure, match=says):
            async with open_database(path):
                pass
        assert version_of(path) == version
        assert schema_of(path) == before
        assert (rows_of(path, "select number, tokens from messages") if not names else []) == data


class TestBackfill:
    async def test_token_figures_are_estimated_again_by_the_calibrated_estimator(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        build_at(path, 4)
        run(path, *seed(4))  # tokens 2 and 2: "kept one" and "kept two" at bytes / 4
        async with open_database(path) as db:
            assert await db.user_version() == LATEST
        tokens = rows_of(path, "select number, tokens from messages order by number")
        live = rows_of(path, "select live_tokens from sessions where id = 'old'")
        assert tokens == [(1, estimate_tokens("kept one")), (2, estimate_tokens("kept two"))]
        assert live == [(estimate_tokens("kept one") + estimate_tokens("kept two"),)]

    async def test_squashes_made_before_7_get_their_members_starts_and_length(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            env = Env(SqliteStore(db))
            calls = (ToolCall("c1", "bash", '{"cmd": "ls"}'),)
            await recording.record(
                env,
                [
                    NewMessage("user", "first\n[not a header]"),
                    NewMessage("assistant", "running", tool_calls=calls),
                    NewMessage("tool", "a\nb", name="bash", tool_call_id="c1"),
                    *(NewMessage("user", f"more {i}") for i in range(6)),
                ],
            )
            await squashes.compress_ranges(env, [AskedRange(4, 6, "inner")])
            await squashes.compress_ranges(env, [AskedRange(1, 5, "outer")])
        layout = "select n, seq, at from squash_members order by n, seq"
        made, lengths = rows_of(path, layout), rows_of(path, "select n, chars from squashes")
        # The file as version 6 left it: neither column, nor the index (nor 8's raw items,
        # nor 9's gateway calls, nor 10's automatic squashes, nor 11's compactions, nor 12's
        # gateway turns).
        run(
            path,
            "drop table gateway_calls",
            "drop table compactions",
            "drop table gateway_turns",
            "alter table squashes drop column automatic",
            "alter table messages drop column raw",
            "drop index squash_members_at",
            "alter table squash_members drop column at",
            "alter table squashes drop column chars",
            "pragma user_version = 6",
        )
        async with open_database(path) as db:
            assert await db.user_version() == LATEST
            store = SqliteStore(db)
            env = Env(store)
            page = await pages.get_alias(env, "SQ.2", offset=7, max_chars=50)
            sid = (await sessions.ensure(env)).id
            async with store.snapshot() as reader:
                whole = render_originals(await reader.squash_members(sid, 2))
        assert rows_of(path, layout) == made
        assert rows_of(path, "select n, chars from squashes") == lengths
        assert lengths[1] == (2, len(whole))
        assert page.text == whole[7:57]


class TestScopes:
    async def test_sessions_become_the_local_tenants_and_the_marker_the_default_clients(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "frs.db"
        build_at(path, 5)
        run(path, *seed(5))  # two originals of 2 tokens each, marked current
        async with open_database(path) as db:
            assert await db.user_version() == LATEST
            default = Env(SqliteStore(db))
            named = default.for_scope(Scope(client="claude-ai"))
            current = await sessions.find_current_session(default)
            continued = await sessions.find_current_session(
                named
            )  # it never chose one: the default's
            await sessions.start(named, "its own")
            own = await sessions.find_current_session(named)
            still = await sessions.find_current_session(default)
        assert rows_of(
            path, "select id, tenant, recorded_tokens from sessions where id = 'old'"
        ) == [("old", "local", 4)]
        assert rows_of(
            path, "select tenant, client, session_id from current_sessions where client = 'default'"
        ) == [("local", "default", "old")]
        assert current is not None
        assert continued == current
        assert own is not None
        assert own.title == "its own"
        assert still == current


class TestUpgrade:
    @pytest.mark.parametrize("version", range(LATEST + 1))
    async def test_an_upgrade_from_each_shipped_version_keeps_its_data(
        self, tmp_path: Path, version: int
    ) -> None:
        path = tmp_path / "frs.db"
        build_at(path, version)
        # A table of the user's own survives any migration; from version 1 on, a thread too.
        run(path, "create table keep (note text)", "insert into keep values ('mine')")
        if version >= 1:
            run(path, *seed(version))
        async with open_database(path) as db:
            assert await db.user_version() == LATEST
            env = Env(SqliteStore(db))
            if version >= 1:
                view = await viewing.view(env, ViewOptions(), SessionId("old"))
                page = await pages.get_alias(env, "M.2", session_id=SessionId("old"))
                current = (await sessions.ensure(env)).id
        assert rows_of(path, "select note from keep") == [("mine",)]
        if version >= 1:
            assert view.split("\n")[:3] == [
                'Thread "Old thread"',
                "[1] User: kept one",
                "[2] User: kept two",
            ]
            assert page.text == "kept two"
            assert current == "old"
