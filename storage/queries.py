"""The statements the readers and writers share, and `Queries`: a connection and its dialect.

Statements are written once, with `$n` placeholders; `Queries.dialect` (`storage.dialect`) runs
them as its engine takes them. Values go in only as parameters; only constants (column lists,
index names, the fragments a dialect supplies) are spliced into SQL.
"""

from __future__ import annotations

from typing import Any, ClassVar

from frs.model import Message
from storage.dialect import Dialect
from storage.rows import MESSAGE_COLUMNS, SESSION_COLUMNS, message_from_row, qualified

#: The largest integer either engine stores (SQLite's INTEGER and PostgreSQL's bigint).
INT64_MAX = 2**63 - 1

SELECT_MESSAGE = f"select {MESSAGE_COLUMNS} from messages"
SESSION_BY_ID = f"select {SESSION_COLUMNS} from sessions where id = $1 and tenant = $2"
SESSION_BY_CONVERSATION = (
    f"select {SESSION_COLUMNS} from sessions where tenant = $1 and interface = $2"
    " and conversation = $3"
)
#: The session marked current for a scope; the session's own tenant is checked too, since a
#: marker may only name the tenant's own.
CURRENT_SESSION = (
    f"select {qualified(SESSION_COLUMNS, 's')} from current_sessions c"
    " join sessions s on s.id = c.session_id"
    " where c.tenant = $1 and c.client = $2 and s.tenant = c.tenant"
)
#: `Store.newest_entries` in one statement: the conversation's session found inside it.
NEWEST_OF_CONVERSATION = (
    f"{SELECT_MESSAGE} where session_id = (select id from sessions"
    " where tenant = $1 and interface = $2 and conversation = $3) and live = 1"
    " order by ord desc limit $4"
)


def marks(count: int, first: int = 1) -> str:
    """`count` placeholders from `$first` on, between commas."""
    return ", ".join(f"${i}" for i in range(first, first + count))


def insert_sql(table: str, columns: str) -> str:
    """An insert of one row into `columns` (names between commas) of `table`."""
    return f"insert into {table} ({columns}) values ({marks(columns.count(',') + 1)})"


class Queries:
    """Statements over one connection inside a transaction someone else opened; a subclass
    names its engine's `dialect`."""

    dialect: ClassVar[Dialect]

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def _all(self, sql: str, *params: Any) -> list[Any]:
        return await self.dialect.all(self.conn, sql, params)

    async def _one(self, sql: str, *params: Any) -> Any:
        return await self.dialect.one(self.conn, sql, params)

    async def _run(self, sql: str, *params: Any) -> None:
        await self.dialect.run(self.conn, sql, params)

    async def _messages(self, sql: str, *params: Any) -> list[Message]:
        return [message_from_row(row) for row in await self._all(sql, *params)]

    def _limit(self, limit: int | None) -> int | None:
        return self.dialect.no_limit if limit is None else limit
