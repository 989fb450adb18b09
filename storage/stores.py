"""The SQLite implementation of `frs.ports.Store`: a transaction is a `SqliteTx`, a snapshot a
`SqliteReader`, the shared readers and writers (`storage.reads`, `storage.writes`) in SQLite's
dialect (`storage.dialect`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from frs.model import Message
from frs.raw import Raw
from storage.db import Database
from storage.dialect import SQLITE
from storage.queries import NEWEST_OF_CONVERSATION
from storage.reads import StoreReader
from storage.rows import newest_from_row
from storage.writes import StoreTx

__all__ = ["SqliteReader", "SqliteStore", "SqliteTx"]

_NEWEST = SQLITE.sql(NEWEST_OF_CONVERSATION)


class SqliteReader(StoreReader):
    """Read queries over one aiosqlite connection inside a transaction someone else opened."""

    dialect = SQLITE


class SqliteTx(StoreTx):
    """Reads and writes inside one `BEGIN IMMEDIATE` transaction."""

    dialect = SQLITE


class SqliteStore:
    """`frs.ports.Store` over a `Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        async with self.db.transaction() as conn:
            yield SqliteTx(conn)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteReader]:
        async with self.db.snapshot() as conn:
            yield SqliteReader(conn)

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[SqliteReader]:
        """A snapshot for a search: on a connection of its own, stopped after `seconds`."""
        async with self.db.searching(seconds) as conn:
            yield SqliteReader(conn)

    async def newest_entries(
        self, tenant: str, interface: str, conversation: str, count: int | None
    ) -> list[Message | Raw]:
        rows = await self.db.fetch(
            _NEWEST, (tenant, interface, conversation, SQLITE.no_limit if count is None else count)
        )
        return [newest_from_row(row) for row in reversed(rows)]
