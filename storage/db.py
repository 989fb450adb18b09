"""The SQLite database: one writer connection, one reader connection, transactions.

WAL lets the reader see the last committed state while the writer works. A lock per connection
keeps concurrent tool calls from interleaving statements; `BEGIN IMMEDIATE` takes SQLite's write
lock up front (waiting up to the busy timeout if another process holds it), and commit/rollback
are shielded from cancellation, so a cancelled call never leaves a transaction open.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
import anyio

from frs.errors import (
    SearchTooSlow,
    StoreConflict,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
)
from storage.header import read_header
from storage.internals import worker_of
from storage.migrations import (
    MIGRATIONS,
    ForeignDatabase,
    SchemaTooNew,
    foreign_reason,
    migrate,
)

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
MEMORY = ":memory:"
_PROGRESS_STEPS = 100  # virtual machine steps between two looks at a search's clock


class Database:
    """A database opened by `open_database`; use `transaction()` to write, `snapshot()` to read."""

    def __init__(
        self, path: str, writer: aiosqlite.Connection, reader: aiosqlite.Connection
    ) -> None:
        self.path = path
        self._writer = writer
        self._reader = reader
        self._write_lock = anyio.Lock()
        # An in-memory database has one connection; then reads and writes share one lock.
        self._read_lock = self._write_lock if reader is writer else anyio.Lock()
        # Searches read on a connection of their own, one at a time, so a long one never holds
        # up the pages and tools that read on `reader`.
        self._search_lock = self._read_lock if reader is writer else anyio.Lock()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any error or cancellation."""
        async with self._write_lock:
            # BEGIN is inside the try: cancelled while it waits (say, for another process's
            # lock), it still runs later on aiosqlite's thread, and the rollback queued behind
            # it closes it; outside, the connection would stay in a transaction for good.
            try:
                await self._writer.execute("begin immediate")
                yield self._writer
                with anyio.CancelScope(shield=True):
                    await self._writer.commit()
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    await self._writer.rollback()
                if isinstance(exc, sqlite3.Error):
                    raise store_error(exc) from exc
                raise

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[aiosqlite.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        async with self._read_lock:
            try:  # BEGIN inside, for the reason given in `transaction`
                await self._reader.execute("begin")
                yield self._reader
            except sqlite3.Error as exc:
                raise store_error(exc) from exc
            finally:
                with anyio.CancelScope(shield=True):
                    await self._reader.rollback()

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[aiosqlite.Connection]:
        """A read transaction for a search, on the search connection, stopped after `seconds`
        (`SearchTooSlow`)."""
        async with self._search_lock:
            if self._reader is self._writer:  # in memory: the one connection
                async with read_bounded(self._reader, seconds):
                    yield self._reader
                return
            # Opened for the search and closed after it: searches are rare (the viewer's), and
            # a connection that lives only as long as its search needs no one to close it.
            try:
                conn = await _connect(self.path)
            except sqlite3.Error as exc:
                raise store_error(exc) from exc
            try:
                async with read_bounded(conn, seconds):
                    yield conn
            finally:
                with anyio.CancelScope(shield=True):
                    await conn.close()

    async def fetch(self, sql: str, params: tuple[object, ...]) -> list[sqlite3.Row]:
        """The rows of one statement run on the reader outside any transaction: SQLite reads
        one committed state for a statement on its own, in one trip to the connection's
        thread instead of the three of a snapshot (begin, the query, rollback)."""
        async with self._read_lock:
            try:
                return list(await self._reader.execute_fetchall(sql, params))
            except sqlite3.Error as exc:
                raise store_error(exc) from exc

    async def user_version(self, conn: aiosqlite.Connection | None = None) -> int:
        async with (conn or self._writer).execute("pragma user_version") as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    def stop(self) -> None:
        """Stop the connections' threads without an event loop (the interpreter is exiting
        and nobody closed the database): SQLite finishes or rolls back on its own."""
        if self._reader is not self._writer:
            self._reader.stop()
        self._writer.stop()

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            if self._reader is not self._writer:
                await self._reader.close()
            await self._writer.close()


@asynccontextmanager
async def read_bounded(conn: aiosqlite.Connection, seconds: float) -> AsyncIterator[None]:
    """A read transaction on `conn` that SQLite interrupts once `seconds` have passed
    (`SearchTooSlow`): a progress handler looks at the clock every few thousand steps."""
    deadline = time.monotonic() + seconds
    await conn.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
    try:
        await conn.execute("begin")
        yield
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise SearchTooSlow(seconds) from exc
        raise store_error(exc) from exc
    except sqlite3.Error as exc:
        raise store_error(exc) from exc
    finally:
        with anyio.CancelScope(shield=True):
            await conn.set_progress_handler(None, 0)  # type: ignore[arg-type]  # None clears it
            await conn.rollback()


async def _connect(path: str) -> aiosqlite.Connection:
    # isolation_level=None: we begin every transaction ourselves.
    connecting = aiosqlite.connect(path, isolation_level=None)
    try:
        conn = await connecting
    except BaseException:
        # aiosqlite stops its worker thread without waiting for it; unless we wait, the thread may
        # report to an event loop that is already closed, a traceback after our one-line error.
        worker = worker_of(connecting)
        if worker is not None and worker.is_alive():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(worker.join, 5.0)
        raise
    try:
        await conn.execute(f"pragma busy_timeout = {BUSY_TIMEOUT_MS:d}")
        await conn.execute("pragma foreign_keys = on")
        if path != MEMORY:
            await _enter_wal(conn, path)
        # FULL: a recorded message survives a power cut, not only a crash of this process.
        await conn.execute("pragma synchronous = full")
    except BaseException:
        # Shielded: a cancelled open must still stop the worker thread (see above).
        with anyio.CancelScope(shield=True):
            await conn.close()
        raise
    return conn


async def _enter_wal(conn: aiosqlite.Connection, path: str) -> None:
    """Switch to WAL, retrying while another connection holds the lock, up to the busy timeout.

    SQLite answers "database is locked" to this switch at once, without its busy handler, when
    another connection is switching or migrating the same new file (several servers started
    together on a fresh database), so `busy_timeout` alone does not cover it.
    """
    deadline = anyio.current_time() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            async with conn.execute("pragma journal_mode = wal") as cursor:
                row = await cursor.fetchone()
            break
        except sqlite3.OperationalError as error:
            if not _is_busy(error) or anyio.current_time() + pause > deadline:
                raise
        await anyio.sleep(pause)
        pause = min(pause * 2, 0.1)
    mode = str(row[0]) if row else "unknown"
    if mode.lower() != "wal":
        # A file system without shared memory (some network mounts) keeps the old journal: the
        # server still works, but readers then wait for writers.
        log.warning("%s: SQLite kept journal mode %r instead of WAL", path, mode)


def store_error(error: sqlite3.Error) -> StoreError:
    """The domain's word for what SQLite said, by its result code; the message stays
    SQLite's own."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_READONLY:
        return StoreReadOnly(str(error))
    if code == sqlite3.SQLITE_FULL:
        return StoreFull(str(error))
    if code == sqlite3.SQLITE_CONSTRAINT:
        return StoreConflict(str(error))
    # Busy or locked past the timeout, an I/O error (a disk full under a quota reports one),
    # a file that cannot be opened or is not a database.
    return StoreUnavailable(str(error))


def _is_busy(error: sqlite3.OperationalError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(error) or "busy" in str(error)


async def _refuse_unusable(file: Path) -> None:
    """Refuse another application's database, or one from a newer frs-mcp, before opening it
    for writing, and leave it byte for byte: the header is read from the file's bytes
    (`storage.header`; any connection writes to a WAL database's -shm, and a read-write one
    switches the journal mode and checkpoints the WAL when it closes last)."""
    header = read_header(file)
    if header is None:
        return  # new, empty, or not SQLite: the read-write open says which, in its words
    reason = foreign_reason(header.application_id, set())
    if reason is not None:
        raise ForeignDatabase(str(file), reason)
    if header.user_version > len(MIGRATIONS):
        raise SchemaTooNew(found=header.user_version, supported=len(MIGRATIONS))
    if header.application_id == 0:
        reason = foreign_reason(0, await _tables(file))
        if reason is not None:
            raise ForeignDatabase(str(file), reason)


async def _tables(file: Path) -> set[str]:
    try:
        conn = await _connect_read_only(file)
    except sqlite3.Error:
        return set()  # unreadable: the read-write open says why
    try:
        async with conn.execute("select name from sqlite_master where type = 'table'") as cursor:
            return {str(row[0]) for row in await cursor.fetchall()}
    except sqlite3.Error:
        return set()
    finally:
        with anyio.CancelScope(shield=True):
            await conn.close()


async def _connect_read_only(file: Path) -> aiosqlite.Connection:
    # as_uri percent-encodes ? and # in names; absolute() only reads the working directory.
    uri = f"{file.absolute().as_uri()}?mode=ro"  # noqa: ASYNC240 - once at startup
    connecting = aiosqlite.connect(uri, uri=True, isolation_level=None)
    try:
        return await connecting
    except BaseException:
        worker = worker_of(connecting)  # see `_connect`
        if worker is not None and worker.is_alive():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(worker.join, 5.0)
        raise


@asynccontextmanager
async def open_database(path: str | os.PathLike[str]) -> AsyncIterator[Database]:
    """Open (creating it and its folder if needed) and migrate the database at `path`."""
    db = await connect_database(path)
    try:
        yield db
    finally:
        await db.close()


async def connect_database(path: str | os.PathLike[str]) -> Database:
    """`open_database` for a caller that closes the database itself (`Database.close`), as a
    runtime does whose session outlives any one `async with`. The log line says whether the
    file was created or opened, by its absolute path. (The command line refuses a missing
    folder other than the default database's before this: `server.locations`.)"""
    where = str(path)
    existed = True
    if where != MEMORY:
        # Absolute: the log names the file whatever folder the host started us in.
        file = Path(where).expanduser().absolute()  # noqa: ASYNC240 - once, before serving
        if not file.parent.is_dir():
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                # mkdir says "File exists" when a file stands where a folder should be.
                raise NotADirectoryError(
                    f"{file.parent} is not a folder (a file of that name is in the way)"
                ) from None
            log.info("created folder %s", file.parent)
        where = str(file)
        existed = file.exists()
        await _refuse_unusable(file)
    try:
        writer = await _connect(where)
    except sqlite3.Error as exc:
        raise store_error(exc) from exc
    reader = writer
    try:
        if where != MEMORY:
            try:
                reader = await _connect(where)
            except sqlite3.Error as exc:
                raise store_error(exc) from exc
        db = Database(where, writer, reader)
        version = await migrate(db)
        # "ready" stays last but one: the line other tools and tests look for.
        done = "opened" if existed else "created"
        log.info("database %s %s, ready (schema version %d)", where, done, version)
        return db
    except BaseException:
        with anyio.CancelScope(shield=True):
            if reader is not writer:
                await reader.close()
            await writer.close()
        raise
