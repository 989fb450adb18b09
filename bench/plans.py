"""SQLite query plans of the statements the hot operations really issue, on a 100k thread.

The service runs each operation through the real `storage` readers and writers, over a
connection wrapper that notes every statement and its parameters. Each distinct statement is
then explained (EXPLAIN QUERY PLAN, same parameters) on the same database file. A plan line
with SCAN (a full pass over a table or index) or TEMP B-TREE (a sort) is flagged.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.latency import SUMMARY
from bench.tokens import view_fields, view_options
from frs import (
    Env,
    Message,
    NewMessage,
    SessionId,
    ToolCall,
    ViewOptions,
    pages,
    recording,
    sessions,
    squashes,
    viewing,
)
from frs.raw import Raw
from storage import SqliteStore, open_database
from storage.db import Database
from storage.stores import SqliteReader, SqliteTx

_SKIP = re.compile(r"^\s*(begin|commit|rollback|pragma|savepoint|release)\b", re.I)


class _Recorder:
    """An aiosqlite connection that notes each statement before running it."""

    def __init__(self, conn: Any, note: Callable[[str, Sequence[Any]], None]) -> None:
        self._conn = conn
        self._note = note

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        self._note(sql, parameters)
        return self._conn.execute(sql, parameters)

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        self._note(sql, parameters)
        return await self._conn.execute_fetchall(sql, parameters)

    async def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        if rows:
            self._note(sql, rows[0])
        return await self._conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _TracingStore:
    """`frs.ports.Store` over the real readers and writers, on a recording connection."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.op = ""
        self.seen: dict[str, dict[str, Any]] = {}

    def note(self, sql: str, parameters: Sequence[Any]) -> None:
        if _SKIP.match(sql):
            return
        key = " ".join(sql.split())
        entry = self.seen.setdefault(key, {"sql": key, "params": list(parameters), "ops": []})
        if self.op not in entry["ops"]:
            entry["ops"].append(self.op)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        async with self.db.transaction() as conn:
            yield SqliteTx(_Recorder(conn, self.note))

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteReader]:
        async with self.db.snapshot() as conn:
            yield SqliteReader(_Recorder(conn, self.note))

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[SqliteReader]:
        async with self.db.searching(seconds) as conn:
            yield SqliteReader(_Recorder(conn, self.note))

    async def newest_entries(
        self, tenant: str, interface: str, conversation: str, count: int | None
    ) -> list[Message | Raw]:
        # One statement outside a transaction; not a plan this bench lists.
        return await SqliteStore(self.db).newest_entries(tenant, interface, conversation, count)


def _flags(plan: list[str]) -> list[str]:
    flagged = []
    for line in plan:
        upper = line.upper()
        # SCAN CONSTANT ROW is the one-row frame of a select of scalar subqueries, not a pass
        # over a table; every other SCAN is.
        if "TEMP B-TREE" in upper or re.search(r"\bSCAN\b(?! CONSTANT ROW)", upper):
            flagged.append(line)
    return flagged


def explain(db: Path, statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    try:
        out = []
        for entry in statements:
            try:
                rows = conn.execute(
                    "explain query plan " + entry["sql"], entry["params"]
                ).fetchall()
                plan = [str(row[3]) for row in rows]
            except sqlite3.Error as exc:
                plan = [f"(could not explain: {exc})"]
            out.append(
                {
                    **entry,
                    "params": [_short(p) for p in entry["params"]],
                    "plan": plan,
                    "flags": _flags(plan),
                }
            )
        return out
    finally:
        conn.close()


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > 40:
        return value[:37] + "..."
    return value


async def run(db: Path, session: str, size: int, log: Callable[[str], None]) -> dict[str, Any]:
    sid = SessionId(session)
    mid = 5 * ((size // 2) // 5) + 1
    async with open_database(db) as database:
        store = _TracingStore(database)
        env = Env(store)
        store.op = "start_session"
        scratch = (await sessions.start(env, title="plans scratch")).session.id

        async def step(name: str, action: Callable[[], Any]) -> None:
            store.op = name
            await action()

        await step("view last 50", lambda: viewing.view(env, ViewOptions(last=50), sid))
        await step(
            "view window from a position",
            lambda: viewing.view(env, ViewOptions(start=mid, end=mid + 49), sid),
        )
        await step(
            "view by lane (roles=[user], last=5)",
            lambda: viewing.view(env, ViewOptions(roles=("user",), last=5), sid),
        )
        if "budget_tokens" in view_fields():
            options = view_options(budget_tokens=4_000)
            await step("view budget_tokens=4000", lambda: viewing.view(env, options, sid))
        store.op = "compress_range (pair partners)"
        squash = await squashes.compress_range(env, mid, mid + 9, SUMMARY, session_id=sid)
        store.op = "restore"
        await squashes.restore(env, f"SQ.{squash.squash.n}", session_id=sid)
        store.op = "compress_last"
        squash = await squashes.compress_last(env, 5, SUMMARY, session_id=sid)
        store.op = "restore"
        await squashes.restore(env, f"SQ.{squash.squash.n}", session_id=sid)
        await step(
            "get_alias (message by number)",
            lambda: pages.get_alias(env, f"M.{mid}", session_id=sid),
        )
        store.op = "record"
        call = ToolCall("p1", "bash", "{}")
        await recording.record(
            env,
            [
                NewMessage(role="user", content="plans"),
                NewMessage(role="assistant", content="run", tool_calls=(call,)),
            ],
            scratch,
        )
        # A result recorded in a later call than its tool call: pairing looks the call up.
        await recording.record(
            env, [NewMessage(role="tool", content="ok", name="bash", tool_call_id="p1")], scratch
        )
    explained = explain(db, list(store.seen.values()))
    log("plans: done")
    return {
        "size": size,
        "sqlite_stat1": _has_stats(db),
        "statements": explained,
        "flagged": sum(1 for e in explained if e["flags"]),
    }


def _has_stats(db: Path) -> bool:
    conn = sqlite3.connect(db)
    try:
        found = conn.execute("select 1 from sqlite_master where name = 'sqlite_stat1'").fetchone()
        return found is not None
    finally:
        conn.close()
