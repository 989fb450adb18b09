"""storage.postgres: the PostgreSQL implementation of `frs.ports.Store` (asyncpg, the extra
`frs-mcp[postgres]`): schema and migrations, the pool, and the shared reads and writes
(`storage.reads`, `storage.writes`) in PostgreSQL's dialect (`storage.postgres.dialect`)."""

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
from storage.postgres.dialect import POSTGRES
from storage.postgres.notices import Notices
from storage.postgres.schema import MIGRATIONS
from storage.postgres.writes import PgWrites
from storage.queries import NEWEST_OF_CONVERSATION
from storage.reads import StoreReader
from storage.rows import newest_from_row

__all__ = [
    "MIGRATIONS",
    "Notices",
    "PgDatabase",
    "PgReader",
    "PgStore",
    "PgTx",
    "connect_postgres",
    "is_postgres",
    "open_postgres",
    "redact",
]


class PgReader(StoreReader):
    """Read queries over one asyncpg connection inside a transaction someone else opened."""

    dialect = POSTGRES


class PgTx(PgWrites):
    """Reads and writes inside one READ COMMITTED transaction that locks what it finds (those
    on a recording's path in fewer statements: `storage.postgres.writes`)."""

    dialect = POSTGRES


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
