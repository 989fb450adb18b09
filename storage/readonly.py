"""The database opened to read only, for the web viewer: it never writes, not even a migration.

SQLite opens the file with `mode=ro`, so a write would fail in the engine itself, whatever the
code above asks. A stdio server writing beside it is the common case: in WAL mode a reader sees
the last committed state and never blocks the writer. A schema this frs-mcp does not know, or
one it would first have to migrate, is refused with what to do, since migrating is a write.

Reading a WAL-mode file makes SQLite create its `-wal` and `-shm` beside it, and a read-only
connection cannot remove them when it closes. Where the viewer found none, it leaves none: on
closing, the engine's own last-connection cleanup removes them (`_leave_as_found`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from urllib.parse import quote

import aiosqlite
import anyio

from frs.errors import StoreUnavailable
from storage.db import BUSY_TIMEOUT_MS, read_bounded, store_error
from storage.header import read_header
from storage.migrations import APPLICATION_ID, MIGRATIONS, SchemaTooNew, foreign_reason
from storage.stores import SqliteReader


class NotReadable(StoreUnavailable):
    """The file cannot be read as an frs-mcp database as it is; the text says what to do."""


class ReadOnlyStore:
    """`snapshot()` of `frs.ports.Store`, over one read-only connection."""

    def __init__(self, conn: aiosqlite.Connection, path: str) -> None:
        self.path = path
        self._conn = conn
        self._lock = anyio.Lock()
        self._search_lock = anyio.Lock()

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[SqliteReader]:
        """A snapshot for a search: on a read-only connection of its own, so a long search
        never holds up the other pages, and stopped after `seconds` (`SearchTooSlow`)."""
        async with self._search_lock:
            conn = await _open(Path(self.path))  # for this search only: closed after it
            try:
                async with read_bounded(conn, seconds):
                    yield SqliteReader(conn)
            finally:
                with anyio.CancelScope(shield=True):
                    await conn.close()

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteReader]:
        """One read transaction: every query inside sees the same committed state."""
        async with self._lock:
            try:
                await self._conn.execute("begin")
                yield SqliteReader(self._conn)
            except sqlite3.Error as exc:
                raise store_error(exc) from exc
            finally:
                with anyio.CancelScope(shield=True):
                    await self._conn.rollback()


async def _open(file: Path, immutable: bool = False) -> aiosqlite.Connection:
    """A read-only connection to `file` (`immutable`: one that takes no locks and creates no
    files, for a file it will only refuse)."""
    uri = _uri(file) + ("&immutable=1" if immutable else "")
    try:
        conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise store_error(exc) from exc
    try:
        await conn.execute(f"pragma busy_timeout = {BUSY_TIMEOUT_MS:d}")
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await conn.close()
        if isinstance(exc, sqlite3.Error):
            raise NotReadable(f"{file} cannot be read as an SQLite database: {exc}") from exc
        raise
    return conn


def _uri(path: Path, mode: str = "ro") -> str:
    """A `file:` URI that opens `path` read-only (or in `mode`); `quote` keeps `?` and `#` in
    a name from being read as the URI's query or fragment."""
    return f"file:{quote(str(path))}?mode={mode}"


async def _check_version(conn: aiosqlite.Connection, path: Path) -> None:
    """Refuse what the viewer cannot show, with the advice that fits what the server would do
    with the same file: start it to create or migrate the schema only where it would."""
    rows = list(await conn.execute_fetchall("pragma user_version"))
    found = int(rows[0][0]) if rows else 0
    stamp = list(await conn.execute_fetchall("pragma application_id"))
    application_id = int(stamp[0][0]) if stamp else 0
    tables = {
        str(row[0])
        for row in await conn.execute_fetchall(
            "select name from sqlite_master where type = 'table'"
        )
    }
    newest = len(MIGRATIONS)
    # In the server's order (`storage.db._refuse_unusable`): the stamp, the version, the tables.
    stamped = foreign_reason(application_id, set())
    if stamped is None and found > newest:
        raise SchemaTooNew(found=found, supported=newest)
    reason = stamped or foreign_reason(application_id, tables)
    if reason is not None:
        # The server refuses it too ("not an frs-mcp database"): no advice to start it there.
        raise NotReadable(
            f"{path} is not an frs-mcp database: {reason}. Pass the --db file your frs-mcp "
            "server uses."
        )
    if found == 0:
        raise NotReadable(
            f"{path} holds no frs-mcp data yet (schema version 0). Start the server on it "
            f"once (frs-mcp --db {path}) to create the schema, or pass the --db "
            "file your server uses."
        )
    if not {"sessions", "messages", "changes"} <= tables:
        shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise NotReadable(
            f"{path} is not an frs-mcp database (schema version {found}, tables: "
            f"{shown or 'none'}). Pass the --db file your frs-mcp server uses."
        )
    if found < newest:
        raise NotReadable(
            f"{path} has schema version {found}; this viewer reads version {newest}. The viewer "
            f"never writes, so it does not migrate: start the server on it once (frs-mcp --db "
            f"{path}), which migrates it, then open the viewer again."
        )


@asynccontextmanager
async def open_readonly(path: str | os.PathLike[str]) -> AsyncIterator[ReadOnlyStore]:
    """Open the database at `path` read-only; refuse a missing file, a schema this frs-mcp
    does not read as it is, or a file that is not a database (`NotReadable`, `SchemaTooNew`)."""
    file = Path(path).expanduser()  # noqa: ASYNC240 - once at startup, before serving
    if not file.is_file():
        raise NotReadable(
            f"no database at {file}: start frs-mcp once to create it, or pass --db with the "
            "file your server uses (default $FRS_DB, else ~/.local/share/frs-mcp/frs.db)."
        )
    # A file about to be refused (its header, read from the bytes, names another version or
    # another application) is checked on an immutable connection, which creates no -wal or
    # -shm beside a WAL-mode file: the refusal leaves it exactly as it was.
    header = read_header(file)
    refused = header is not None and (
        header.user_version != len(MIGRATIONS) or header.application_id not in (0, APPLICATION_ID)
    )
    # Neither there: no connection has the file open in WAL mode now (one that had would
    # have made them), so whatever the viewer's reads add beside it is the viewer's to remove.
    found_none = not any(_beside(file, suffix).exists() for suffix in _WAL_FILES)
    conn = await _open(file, immutable=refused)
    try:
        await _check_version(conn, file)
        if refused:  # the header and the engine disagree: read it as any other
            with anyio.CancelScope(shield=True):
                await conn.close()
            conn = await _open(file)
    except sqlite3.Error as exc:
        with anyio.CancelScope(shield=True):
            await conn.close()
        raise NotReadable(f"{file} cannot be read as an SQLite database: {exc}") from exc
    except BaseException:
        with anyio.CancelScope(shield=True):
            await conn.close()
        raise
    try:
        yield ReadOnlyStore(conn, str(file))
    finally:
        with anyio.CancelScope(shield=True):
            await conn.close()
            if found_none:
                await anyio.to_thread.run_sync(_leave_as_found, file)


_WAL_FILES = ("-wal", "-shm")


def _beside(file: Path, suffix: str) -> Path:
    return file.with_name(file.name + suffix)


def _leave_as_found(file: Path) -> None:
    """Remove the empty `-wal` and the `-shm` the viewer's reads made beside `file`: one read on
    a read-write connection, whose close is SQLite's own last-connection cleanup. Under the
    engine's locks, it removes them only if no other connection (a server started since) has
    the file open, and the WAL is empty, so nothing of the database itself is written."""
    wal = _beside(file, "-wal")
    try:
        if wal.stat().st_size != 0:  # a server wrote since: the files are its, not ours
            return
        conn = sqlite3.connect(_uri(file, "rw"), uri=True)
    except (OSError, sqlite3.Error):
        return  # gone already, or not ours to open for writing: leave them
    try:
        with suppress(sqlite3.Error):  # opening the WAL is what makes the close tidy it
            conn.execute("pragma schema_version").fetchall()
    finally:
        conn.close()
