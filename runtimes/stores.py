"""Where a runtime's conversations are kept: the store at a database path (a SQLite file, or a
``postgresql://`` URL), opened in the running event loop, and `SharedStore`, one store shared
by the conversations of one framework and opened on first use.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from frs import Env
from frs.model import Limits
from frs.ports import Store
from runtimes.internals import register_before_thread_exit
from storage import Database, SqliteStore, connect_database
from storage.postgres import PgStore, connect_postgres, is_postgres


@asynccontextmanager
async def open_store(db: str | os.PathLike[str]) -> AsyncIterator[Store]:
    """The store at `db`: PostgreSQL for a ``postgresql://`` URL (the ``postgres`` extra),
    else a SQLite file (created, with its folder, if missing); migrated; closed on exit."""
    connected = await connect_store(db)
    try:
        yield connected.store
    finally:
        await connected.close()


@dataclass(frozen=True, slots=True)
class Connected:
    """A store `connect_store` opened: `close` it in its event loop; once that loop is gone,
    `abandon` it (stops its threads or drops its connections without a loop)."""

    store: Store
    close: Callable[[], Awaitable[None]]
    abandon: Callable[[], None]


async def connect_store(db: str | os.PathLike[str]) -> Connected:
    """`open_store` for a holder that closes the store itself.

    No async generator stays suspended in between: an event loop that ends with the store
    still open has nothing of ours to finalize, and at interpreter exit the SQLite threads of
    a store never closed are stopped (below) instead of holding the process.
    """
    where = os.fspath(db)
    if is_postgres(where):
        pg = await connect_postgres(where)
        return Connected(PgStore(pg), pg.close, pg.pool.terminate)
    sqlite = await connect_database(where)
    _stop_at_exit(sqlite)

    async def close() -> None:
        _OPEN.discard(sqlite)
        await sqlite.close()

    def abandon() -> None:
        _OPEN.discard(sqlite)
        sqlite.stop()

    return Connected(SqliteStore(sqlite), close, abandon)


# aiosqlite runs each connection on a thread the interpreter waits for at exit: a runtime
# that never closes its session would hang there. Before that wait, the threads of every
# database still open are told to stop (`runtimes.internals.register_before_thread_exit`).
_OPEN: set[Database] = set()
_HOOKED: list[bool] = []


def _stop_open_databases() -> None:
    for database in list(_OPEN):
        database.stop()


def _stop_at_exit(database: Database) -> None:
    if not _HOOKED:
        register_before_thread_exit(_stop_open_databases)
        _HOOKED.append(True)
    _OPEN.add(database)


class SharedStore:
    """The store at a database path, opened on first use in the running event loop and
    shared by the conversations given it; every later use must come from the same loop
    (`close` it before that loop ends)."""

    def __init__(self, db: str | os.PathLike[str], limits: Limits | None = None) -> None:
        self.db = os.fspath(db)
        self.limits = limits or Limits()
        self._connected: Connected | None = None
        self._env: Env | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening = asyncio.Lock()

    async def env(self) -> Env:
        """The `Env` over the open store, opening it on the first call (and again in a new
        event loop once the one it was opened in has closed, as `Runner.run_sync` does)."""
        loop = asyncio.get_running_loop()
        if self._env is not None and loop is not self._loop:
            if self._loop is not None and not self._loop.is_closed():
                raise RuntimeError(
                    f"The FRS database {self.db} is open in another event loop that still "
                    "runs. Use it from one loop at a time, or close it (await "
                    "session.close()) in the loop that opened it."
                )
            if self._connected is not None:
                self._connected.abandon()
            self._connected = self._env = None
            self._opening = asyncio.Lock()
        if self._env is not None:
            return self._env
        async with self._opening:
            if self._env is None:
                self._connected = await connect_store(self.db)
                self._loop = loop
                self._env = Env(self._connected.store, self.limits)
        return self._env

    async def close(self) -> None:
        """Close the store; the next call opens it again."""
        connected, self._connected, self._env = self._connected, None, None
        if connected is not None:
            await connected.close()
