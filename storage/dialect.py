"""What differs between the SQL engines the store runs on: `Dialect`, and SQLite's.

The readers and writers (`storage.reads`, `storage.writes`) are written once, their statements
in PostgreSQL's numbered placeholders (`$1`, `$2`, a number used as often as needed); a dialect
runs them on its engine's connection, and supplies the few fragments that differ: index hints,
row locks, a statement over many rows, and search (PostgreSQL's reads an index). PostgreSQL's is
`storage.postgres.dialect`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

from frs.model import Session
from storage.rows import SESSION_COLUMNS, session_from_row

#: Values per `matching` condition: well under SQLite's oldest limit of 999 bound parameters,
#: and one statement for a typical batch.
_VALUES_PER_STATEMENT = 500
_MARK = re.compile(r"\$(\d+)")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class Dialect(Protocol):
    """One engine's way of running the shared statements; `conn` is its driver's connection."""

    @property
    def no_limit(self) -> int | None:
        """What a `limit` parameter takes to mean no limit."""
        ...

    def sql(self, statement: str) -> str:
        """`statement` (written with `$n` placeholders) as this engine takes it."""
        ...

    async def all(self, conn: Any, statement: str, params: Sequence[Any]) -> list[Any]:
        """Every row of `statement`."""
        ...

    async def one(self, conn: Any, statement: str, params: Sequence[Any]) -> Any:
        """The first row of `statement`, or None."""
        ...

    async def run(self, conn: Any, statement: str, params: Sequence[Any]) -> None:
        """Run `statement` for its effect."""
        ...

    async def run_many(self, conn: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run `statement` once per row of parameters (at least one row)."""
        ...

    def each_number(self, mark: int) -> str:
        """What follows a column's name in a condition that holds for each whole number of the
        list parameter `$mark`, in a statement run by `run_each` (which binds the list)."""
        ...

    def rows_of(self, fixed: int, columns: int) -> str:
        """The rows an `insert … <rows>` run by `run_each` adds: parameters `$1`..`$fixed` in
        every row, then one whole number from each of `columns` list parameters."""
        ...

    async def run_each(
        self, conn: Any, statement: str, fixed: Sequence[Any], columns: Sequence[Sequence[Any]]
    ) -> None:
        """Run `statement` (built with `each_number` or `rows_of`) with the `fixed` parameters
        for every row across `columns` (lists of one length); nothing when they are empty."""
        ...

    def matching(
        self, column: str, mark: int, values: Sequence[str]
    ) -> list[tuple[str, list[Any]]]:
        """Conditions that together match `column` with each of `values`, one per statement,
        with the parameters each takes from `$mark` on; none for no values."""
        ...

    def indexed_by(self, index: str) -> str:
        """A hint after a table's name (with its alias) that the query reads it by `index`."""
        ...

    def for_update(self, table: str = "") -> str:
        """The ending of a finder's query in a transaction that locks the rows it finds (those
        of the alias `table` in a join)."""
        ...

    async def lock(self, conn: Any, key: str) -> None:
        """Hold a lock named `key` until the transaction ends."""
        ...

    async def search_sessions(self, conn: Any, tenant: str, text: str, limit: int) -> list[Session]:
        """`ThreadReader.search_sessions`: how the engine finds `text` (`like_pattern`) in a
        tenant's titles and messages, newest first."""
        ...


def like_pattern(text: str) -> str:
    """`%text%` for LIKE over text folded to lower case (ASCII letters only): ASCII letters
    lowered, LIKE's wildcards and its escape character (`\\`) escaped to match themselves."""
    return "%" + re.sub(r"([\\%_])", r"\\\1", text.translate(_ASCII_LOWER)) + "%"


_SEARCH = (
    f"select {SESSION_COLUMNS} from sessions s where s.tenant = $1"
    " and (title like $2 escape '\\' or exists (select 1 from messages m"
    " where m.session_id = s.id and m.content like $2 escape '\\'))"
    " order by updated_at desc, id limit $3"
)


@cache
def _numbered(statement: str) -> str:
    return _MARK.sub(r"?\1", statement)


class SqliteDialect:
    """SQLite through aiosqlite: `?n` placeholders, a list of rows by `executemany`; one writer
    at a time (`BEGIN IMMEDIATE`), so nothing to lock per row."""

    no_limit = -1

    def sql(self, statement: str) -> str:
        # `?n` binds the n-th parameter however often it stands; `$n` would name a parameter,
        # and SQLite numbers named ones by first appearance.
        return _numbered(statement)

    async def all(self, conn: Any, statement: str, params: Sequence[Any]) -> list[Any]:
        return list(await conn.execute_fetchall(_numbered(statement), params))

    async def one(self, conn: Any, statement: str, params: Sequence[Any]) -> Any:
        # One trip to the connection's thread; a cursor's execute/fetchone/close costs three.
        rows = await conn.execute_fetchall(_numbered(statement), params)
        return rows[0] if rows else None

    async def run(self, conn: Any, statement: str, params: Sequence[Any]) -> None:
        await conn.execute(_numbered(statement), params)

    async def run_many(self, conn: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        await conn.executemany(_numbered(statement), rows)

    def each_number(self, mark: int) -> str:
        return f" = ${mark}"

    def rows_of(self, fixed: int, columns: int) -> str:
        return "values (" + ", ".join(f"${i}" for i in range(1, fixed + columns + 1)) + ")"

    async def run_each(
        self, conn: Any, statement: str, fixed: Sequence[Any], columns: Sequence[Sequence[Any]]
    ) -> None:
        rows = [(*fixed, *row) for row in zip(*columns, strict=True)]
        if rows:
            await conn.executemany(_numbered(statement), rows)

    def matching(
        self, column: str, mark: int, values: Sequence[str]
    ) -> list[tuple[str, list[Any]]]:
        found = []
        for start in range(0, len(values), _VALUES_PER_STATEMENT):
            chunk = list(values[start : start + _VALUES_PER_STATEMENT])
            marks = ", ".join(f"${i}" for i in range(mark, mark + len(chunk)))
            found.append((f"{column} in ({marks})", chunk))
        return found

    def indexed_by(self, index: str) -> str:
        # Without statistics SQLite may pick another index and scan the whole thread.
        return f" indexed by {index}"

    def for_update(self, table: str = "") -> str:
        return ""

    async def lock(self, conn: Any, key: str) -> None:
        """Nothing to take: the transaction holds the database's one write lock already."""

    async def search_sessions(self, conn: Any, tenant: str, text: str, limit: int) -> list[Session]:
        # A bounded scan on a connection of its own (`Database.searching`); LIKE folds ASCII
        # letters itself, and only those, as the port promises.
        rows = await self.all(conn, _SEARCH, (tenant, like_pattern(text), limit))
        return [session_from_row(row) for row in rows]


SQLITE = SqliteDialect()
