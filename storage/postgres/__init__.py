"""storage.postgres: the PostgreSQL implementation of `frs.ports.Store` (asyncpg, the extra
`frs-mcp[postgres]`): schema and migrations, the pool, reads and writes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from frs.model import Message
from frs.raw import Raw
from storage.postgres.database import (
    PgDatabase,
    connect_postgres,
    is_postgres,
    open_postgres,
    redact,
)
from storage.postgres.reads import NEWEST_OF_CONVERSATION, PgReader
from storage.postgres.schema import MIGRATIONS
from storage.postgres.writes import PgTx
from storage.rows import newest_from_row

__all__ = [
    "MIGRATIONS",
    "PgDatabase",
    "PgReader",
    "PgStore",
    "PgTx",
    "connect_postgres",
    "is_postgres",
    "open_postgres",
    "redact",
]


class PgStore:
    """`frs.ports.Store` over a `PgDatabase`."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PgTx]:
        async with self.db.transaction() as conn:
            yield PgTx(conn)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PgReader]:
        async with self.db.snapshot() as conn:
            yield PgReader(conn)

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[PgReader]:
        """A snapshot for a search: a capped share of the pool, stopped after `seconds`."""
        async with self.db.searching(seconds) as conn:
            yield PgReader(conn)

    async def newest_entries(
        self, tenant: str, interface: str, conversation: str, count: int | None
    ) -> list[Message | Raw]:
        rows = await self.db.fetch(NEWEST_OF_CONVERSATION, tenant, interface, conversation, count)
        return [newest_from_row(row) for row in reversed(rows)]
