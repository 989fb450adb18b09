"""The SQLite implementation of `frs.ports.Store`: a transaction is a `SqliteTx`
(`storage.writes`), a snapshot a `SqliteReader` (`storage.reads`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from frs.model import Message
from frs.raw import Raw
from storage.db import Database
from storage.reads import NEWEST_OF_CONVERSATION, SqliteReader
from storage.rows import newest_from_row
from storage.writes import SqliteTx

__all__ = ["SqliteReader", "SqliteStore", "SqliteTx"]


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
            NEWEST_OF_CONVERSATION,
            (tenant, interface, conversation, -1 if count is None else count),
        )
        return [newest_from_row(row) for row in reversed(rows)]
