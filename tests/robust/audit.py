"""Read a database (a SQLite file with the standard `sqlite3` module, or a PostgreSQL one
through tests/pgsync.py) and check what must always hold.

The invariants are the store's promises, checked on the rows rather than through the code that
wrote them: integrity, counters that agree with the rows, every squashed message held by exactly
one active squash, one change-log row per revision, and acknowledged writes still present.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from tests.pgsync import SyncPg

BLOCK_BITS = 10  # storage.blocks counts live entries per 1024 ords
LANE_COLUMNS = ("system", "user", "assistant", "tool", "summary")


#: A database under test: a SQLite file, or a postgresql:// connection string.
Target = Path | str


def is_postgres(target: Target) -> bool:
    return str(target).startswith("postgresql://")


@contextmanager
def open_file(path: Target) -> Iterator[Any]:
    """A connection answering `execute(sql, params)` with `?` placeholders, on either backend."""
    if is_postgres(path):
        with SyncPg(str(path)) as pg:
            yield pg
        return
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("pragma busy_timeout = 10000")
        yield conn


@dataclass
class Acknowledged:
    """What the server confirmed to a client: each must be found in the file afterwards."""

    messages: dict[tuple[str, int], str] = field(default_factory=dict)  # (session, number): text
    squashes: dict[tuple[str, int], str] = field(default_factory=dict)  # (session, n): summary
    restores: set[tuple[str, int]] = field(default_factory=set)  # (session, n)
    changes: dict[tuple[str, int], str] = field(default_factory=dict)  # (session, rev): prefix

    def merge(self, other: Acknowledged) -> None:
        self.messages.update(other.messages)
        self.squashes.update(other.squashes)
        self.restores |= other.restores
        self.changes.update(other.changes)


def has_sessions(target: Target) -> bool:
    """Whether the database exists and holds the sessions table (a server killed while it
    started may have left neither)."""
    if not is_postgres(target):
        if not Path(target).exists():
            return False
        sql = "select count(*) from sqlite_master where name = 'sessions'"
    else:
        sql = "select count(*) from pg_tables where tablename = 'sessions'"
    with open_file(target) as conn:
        return bool(conn.execute(sql).fetchone()[0])


def check_integrity(conn: Any) -> None:
    if isinstance(conn, SyncPg):  # PostgreSQL checks its keys on every write
        assert conn.execute("select count(*) from sessions").fetchone() is not None
        return
    assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
    assert conn.execute("pragma foreign_key_check").fetchall() == []


def check_session(conn: Any, session_id: str) -> None:
    """Every invariant of one session's rows; fails with a message naming the broken one."""
    (revision, live_count, next_number, next_squash, *lanes) = conn.execute(
        "select revision, live_count, next_number, next_squash,"
        + ", ".join(f"live_{lane}" for lane in LANE_COLUMNS)
        + " from sessions where id = ?",
        (session_id,),
    ).fetchone()

    # One change-log row per committed revision, numbered 1..revision.
    logged = [
        r
        for (r,) in conn.execute(
            "select revision from changes where session_id = ? order by revision", (session_id,)
        )
    ]
    assert logged == list(range(1, revision + 1)), (
        f"session {session_id}: revision {revision} but change rows {logged[:5]}..{logged[-5:]}"
    )

    # Live entries: ordered by ord, spans disjoint, counters equal to the rows.
    live = conn.execute(
        "select number, ord, ord_last, lane from messages"
        " where session_id = ? and live = 1 and number is not null order by ord",
        (session_id,),
    ).fetchall()
    assert len(live) == live_count, f"session {session_id}: live_count {live_count} != {len(live)}"
    for (_, _, last, _), (number, first, _, _) in pairwise(live):
        assert last < first, f"session {session_id}: entry {number} overlaps the one before it"
    by_lane = Counter(lane for *_, lane in live)
    assert [by_lane[lane] for lane in LANE_COLUMNS] == lanes, (
        f"session {session_id}: lane counters {lanes} != rows {by_lane}"
    )
    blocks = dict(
        conn.execute(
            "select block, live from blocks where session_id = ? and live != 0", (session_id,)
        ).fetchall()
    )
    assert blocks == dict(Counter(ord_ >> BLOCK_BITS for _, ord_, _, _ in live)), (
        f"session {session_id}: block counts disagree with the live rows"
    )

    top = conn.execute(
        "select coalesce(max(number), 0) from messages where session_id = ?", (session_id,)
    ).fetchone()[0]
    assert top < next_number, f"session {session_id}: number {top} >= next_number {next_number}"
    top_squash = conn.execute(
        "select coalesce(max(n), 0) from squashes where session_id = ?", (session_id,)
    ).fetchone()[0]
    assert top_squash < next_squash, f"session {session_id}: SQ.{top_squash} >= next_squash"

    # Squashed messages: each held by exactly one active squash, or the summary of a restored one.
    holders = Counter(
        number
        for (number,) in conn.execute(
            "select m.number from squash_members m join squashes q"
            " on q.session_id = m.session_id and q.n = m.n"
            " where m.session_id = ? and q.restored_at is null",
            (session_id,),
        )
    )
    dissolved = {
        number
        for (number,) in conn.execute(
            "select summary_number from squashes where session_id = ? and restored_at is not null",
            (session_id,),
        )
    }
    squashed = [
        number
        for (number,) in conn.execute(
            "select number from messages where session_id = ? and live = 0"
            " and number is not null and kind != 'thinking'",
            (session_id,),
        )
    ]
    for number in squashed:
        if number in dissolved:
            assert holders[number] == 0, f"M.{number}: summary of a restored squash is still held"
        else:
            assert holders[number] == 1, f"M.{number}: squashed but held by {holders[number]}"
    live_numbers = {number for number, *_ in live}
    assert not live_numbers & set(holders), f"session {session_id}: a live entry is held"

    # Every squash: its members and its summary are where its state says.
    for n, summary_number, count, restored_at in conn.execute(
        "select n, summary_number, count, restored_at from squashes where session_id = ?",
        (session_id,),
    ).fetchall():
        members = conn.execute(
            "select count(*) from squash_members where session_id = ? and n = ?", (session_id, n)
        ).fetchone()[0]
        assert members == count, f"SQ.{n}: {members} member rows for count {count}"
        summary = conn.execute(
            "select kind from messages where session_id = ? and number = ?",
            (session_id, summary_number),
        ).fetchone()
        assert summary == ("summary",), f"SQ.{n}: summary M.{summary_number} missing"
        if restored_at is not None:
            assert summary_number not in live_numbers, f"SQ.{n} restored but its summary is live"


def check_database(path: Target) -> list[str]:
    """Integrity and every session's invariants; returns the session ids."""
    with open_file(path) as conn:
        check_integrity(conn)
        sessions = [sid for (sid,) in conn.execute("select id from sessions order by id")]
        for session_id in sessions:
            check_session(conn, session_id)
    return sessions


def check_acknowledged(path: Target, acked: Acknowledged) -> None:
    """Every write a client saw confirmed is in the file, as it was confirmed."""
    with open_file(path) as conn:
        for (session_id, number), content in acked.messages.items():
            row = conn.execute(
                "select content from messages where session_id = ? and number = ?",
                (session_id, number),
            ).fetchone()
            assert row == (content,), f"acknowledged M.{number} of {session_id} is {row}"
        for (session_id, n), summary in acked.squashes.items():
            row = conn.execute(
                "select summary from squashes where session_id = ? and n = ?", (session_id, n)
            ).fetchone()
            assert row == (summary,), f"acknowledged SQ.{n} of {session_id} is {row}"
        for session_id, n in acked.restores:
            row = conn.execute(
                "select restored_at is not null from squashes where session_id = ? and n = ?",
                (session_id, n),
            ).fetchone()
            assert row == (1,), f"acknowledged restore of SQ.{n} of {session_id} is missing"
        for (session_id, revision), prefix in acked.changes.items():
            row = conn.execute(
                "select change from changes where session_id = ? and revision = ?",
                (session_id, revision),
            ).fetchone()
            assert row is not None, f"revision {revision} of {session_id} is not logged"
            assert row[0].startswith(prefix), (
                f"revision {revision} of {session_id}: expected {prefix!r}..., found {row}"
            )


def snapshot(path: Target) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, sorted: two equal snapshots mean nothing was written."""
    tables_sql = (
        "select tablename from pg_tables where schemaname = 'public'"
        if is_postgres(path)
        else "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'"
    )
    with open_file(path) as conn:
        tables = [name for (name,) in conn.execute(tables_sql)]
        return {
            table: sorted(
                conn.execute(f'select * from "{table}"').fetchall(),
                key=repr,
            )
            for table in tables
        }
