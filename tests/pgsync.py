"""A blocking connection to a PostgreSQL database for test audits, shaped like the few
`sqlite3.Connection` calls they make (`execute(sql, params)` then `fetchone`, `fetchall` or
iteration), so one audit reads either backend. SQL is written with `?` placeholders, as for
SQLite; text is read through the store's own escape of U+0000 (storage/postgres).

asyncpg runs on an event loop of its own, in a thread, so the audit can be called from sync
code and from inside an async test alike.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import asyncpg

from storage.postgres.database import _setup

T = TypeVar("T")
_MARK = re.compile(r"\?")


def dollar_params(sql: str) -> str:
    """`?` placeholders as `$1`, `$2`, … (the audits' SQL holds no `?` in a literal)."""
    count = iter(range(1, 10_000))
    return _MARK.sub(lambda _: f"${next(count)}", sql)


class Rows:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)


class SyncPg:
    """`with SyncPg(dsn) as conn: conn.execute(sql, params).fetchall()`."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=120)

    def __enter__(self) -> SyncPg:
        self.thread.start()
        self.conn = self._run(self._connect())
        return self

    async def _connect(self) -> asyncpg.Connection:
        conn = await asyncpg.connect(self.dsn)
        await _setup(conn)
        return conn

    def __exit__(self, *_: object) -> None:
        try:
            self._run(self.conn.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        records = self._run(self.conn.fetch(dollar_params(sql), *params))
        return Rows([tuple(record) for record in records])
