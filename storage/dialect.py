"""What differs between the SQL engines the store runs on: `Dialect`, and SQLite's.

The readers and writers (`storage.reads`, `storage.writes`) are written once, their statements
in PostgreSQL's numbered placeholders (`$1`, `$2`, a number used as often as needed); a dialect
runs them on its engine's connection, and supplies the few fragments that differ: index hints,
row locks, case folding, a statement over many rows. PostgreSQL's is `storage.postgres.dialect`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

#: Values per `matching` condition: well under SQLite's oldest limit of 999 bound parameters,
#: and one statement for a typical batch.
_VALUES_PER_STATEMENT = 500
_MARK = re.compile(r"\$(\d+)")


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

    def fold(self, expression: str) -> str:
        """`expression` with ASCII letters in lower case, as `like` compares it."""
        ...


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

    def fold(self, expression: str) -> str:
        return expression  # `like` folds ASCII letters itself, and only those


SQLITE = SqliteDialect()
