"""PostgreSQL plans of the statements the hot operations really issue, on a 100k thread.

As bench/plans.py does for SQLite: the service runs each operation through the real
`storage.postgres` readers and writers over a connection that notes every statement and its
parameters; each distinct statement is then explained (EXPLAIN, same parameters, after
ANALYZE) on the same database. A sequential scan of a table holding more than 10,000 rows is
flagged; one of a small table (`blocks` has a row per 1,024 ords) is the planner's right call.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from bench.latency import SUMMARY
from bench.threads import STEP
from frs import (
    Env,
    Message,
    NewMessage,
    SessionId,
    ViewOptions,
    pages,
    recording,
    squashes,
    viewing,
)
from frs.raw import Raw
from storage.postgres import PgDatabase, PgReader, PgStore, PgTx, open_postgres

_SEQ_SCAN = re.compile(r"Seq Scan on (\w+)")
BIG = 10_000
_SKIP = re.compile(r"^\s*select pg_advisory", re.I)


class _Recorder:
    """An asyncpg connection that notes each statement before running it."""

    def __init__(self, conn: Any, op: list[str], seen: dict[str, dict[str, Any]]) -> None:
        self._conn, self._op, self._seen = conn, op, seen

    def _note(self, sql: str, params: Sequence[Any]) -> None:
        if not _SKIP.match(sql):
            entry = self._seen.setdefault(sql, {"params": list(params), "ops": []})
            if self._op[0] not in entry["ops"]:
                entry["ops"].append(self._op[0])

    async def fetch(self, sql: str, *params: Any) -> Any:
        self._note(sql, params)
        return await self._conn.fetch(sql, *params)

    async def fetchrow(self, sql: str, *params: Any) -> Any:
        self._note(sql, params)
        return await self._conn.fetchrow(sql, *params)

    async def fetchval(self, sql: str, *params: Any) -> Any:
        self._note(sql, params)
        return await self._conn.fetchval(sql, *params)

    async def execute(self, sql: str, *params: Any) -> Any:
        self._note(sql, params)
        return await self._conn.execute(sql, *params)

    async def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        if rows:
            self._note(sql, rows[0])
        return await self._conn.executemany(sql, rows)


class _TracingStore:
    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self.op = [""]
        self.seen: dict[str, dict[str, Any]] = {}

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PgTx]:
        async with self.db.transaction() as conn:
            yield PgTx(_Recorder(conn, self.op, self.seen))

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PgReader]:
        async with self.db.snapshot() as conn:
            yield PgReader(_Recorder(conn, self.op, self.seen))

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[PgReader]:
        async with self.db.searching(seconds) as conn:
            yield PgReader(_Recorder(conn, self.op, self.seen))

    async def newest_entries(
        self, tenant: str, interface: str, conversation: str, count: int | None
    ) -> list[Message | Raw]:
        # One statement outside a transaction; not a plan this bench lists.
        return await PgStore(self.db).newest_entries(tenant, interface, conversation, count)


async def explain_hot_statements(dsn: str, sid: SessionId, size: int) -> dict[str, Any]:
    """Every distinct statement of the hot operations on session `sid` and its plan."""
    mid = (size // 2 // STEP) * STEP + 1
    async with open_postgres(dsn, size=2) as db:
        store = _TracingStore(db)
        env = Env(store)
        operations: list[tuple[str, Any]] = [
            ("view last=50", lambda: viewing.view(env, ViewOptions(last=50), sid)),
            (
                "view roles=user last=5",
                lambda: viewing.view(env, ViewOptions(roles=("user",), last=5), sid),
            ),
            ("view budget 4000", lambda: viewing.view(env, ViewOptions(budget_tokens=4_000), sid)),
            ("get_alias M.n", lambda: pages.get_alias(env, f"M.{mid + 2}", session_id=sid)),
            ("record 1", lambda: recording.record(env, [NewMessage("user", "plan check")], sid)),
        ]
        for name, make in operations:
            store.op[0] = name
            await make()
        store.op[0] = "compress_range + restore"
        done = await squashes.compress_range(env, mid, mid + 9, SUMMARY, session_id=sid)
        await squashes.restore(env, done.squash.alias, sid)
        store.op[0] = "compress_last + restore"
        done = await squashes.compress_last(env, 5, SUMMARY, sid)
        await squashes.restore(env, done.squash.alias, sid)
    return await _explain(dsn, store.seen)


async def _explain(dsn: str, seen_statements: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """EXPLAIN each statement with the parameters it ran with, after ANALYZE."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("analyze")
        sizes = {
            row[0]: row[1]
            for row in await conn.fetch(
                "select relname::text, reltuples::bigint from pg_class where relkind = 'r'"
            )
        }
        statements = []
        for sql, seen in seen_statements.items():
            rows = await conn.fetch(f"explain {sql}", *seen["params"])
            plan = [row[0] for row in rows]
            statements.append(
                {
                    "sql": sql,
                    "ops": seen["ops"],
                    "plan": plan,
                    "flagged": [
                        line.strip()
                        for line in plan
                        if (scan := _SEQ_SCAN.search(line)) and sizes.get(scan.group(1), 0) > BIG
                    ],
                }
            )
    finally:
        await conn.close()
    return {
        "statements": statements,
        "flagged": sum(1 for s in statements if s["flagged"]),
    }
