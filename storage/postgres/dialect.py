"""PostgreSQL's `storage.dialect.Dialect`, through asyncpg: the shared statements as written, a
list of rows as arrays in one statement (`unnest`, `= any`), search through a trigram index
(`storage.postgres.search`), and the locks that let several instances write one database: a
transaction locks every session row its finders return (`for update`), and a get-or-create by
conversation first takes an advisory lock on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from frs.model import Session
from storage.postgres import search
from storage.postgres.text import encode_text


class PgDialect:
    """Statements on an asyncpg connection; text in arrays escaped as the codec escapes text."""

    no_limit: int | None = None  # `limit null` is no limit

    def sql(self, statement: str) -> str:
        return statement

    async def all(self, conn: Any, statement: str, params: Sequence[Any]) -> list[Any]:
        return list(await conn.fetch(statement, *params))

    async def one(self, conn: Any, statement: str, params: Sequence[Any]) -> Any:
        return await conn.fetchrow(statement, *params)

    async def run(self, conn: Any, statement: str, params: Sequence[Any]) -> None:
        await conn.execute(statement, *params)

    async def run_many(self, conn: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        await conn.executemany(statement, rows)

    def each_number(self, mark: int) -> str:
        return f" = any(${mark}::bigint[])"

    def rows_of(self, fixed: int, columns: int) -> str:
        names = ", ".join(f"c{i}" for i in range(columns))
        arrays = ", ".join(f"${fixed + i}::bigint[]" for i in range(1, columns + 1))
        scalars = "".join(f"${i}, " for i in range(1, fixed + 1))
        return f"select {scalars}{names} from unnest({arrays}) as t ({names})"

    async def run_each(
        self, conn: Any, statement: str, fixed: Sequence[Any], columns: Sequence[Sequence[Any]]
    ) -> None:
        if columns and columns[0]:
            await conn.execute(statement, *fixed, *(list(column) for column in columns))

    def matching(
        self, column: str, mark: int, values: Sequence[str]
    ) -> list[tuple[str, list[Any]]]:
        if not values:
            return []
        # Array elements bypass the connection's text codec: escaped here, as stored.
        return [(f"{column} = any(${mark}::text[])", [[encode_text(v) for v in values]])]

    def indexed_by(self, index: str) -> str:
        return ""  # the planner has statistics

    def for_update(self, table: str = "") -> str:
        return f" for update of {table}" if table else " for update"

    async def lock(self, conn: Any, key: str) -> None:
        await conn.execute("select pg_advisory_xact_lock(hashtextextended($1, 0))", key)

    async def search_sessions(self, conn: Any, tenant: str, text: str, limit: int) -> list[Session]:
        return await search.search_sessions(conn, tenant, text, limit)


POSTGRES = PgDialect()
