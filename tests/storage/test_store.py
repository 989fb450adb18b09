"""The SQLite store: positions at scale, and the connection and transaction guarantees.

Positions are never stored; the store maps them through per-1024-ord `blocks` counts. These
tests build a thread of a few thousand messages, squash ranges that straddle block boundaries,
empty a whole block, nest and restore, and after every step compare what the store answers
(`entries_at`, `positions_of`, windowed views in both numberings) with a brute-force
enumeration of the live rows read straight from SQL.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import aiosqlite
import anyio
import pytest

from frs import (
    Env,
    NewMessage,
    SessionId,
    ToolCall,
    ViewOptions,
    recording,
    sessions,
    squashes,
    viewing,
)
from frs.model import CallRecord
from storage import Database, SqliteStore, open_database
from storage.blocks import BLOCK_BITS
from storage.dialect import SQLITE
from storage.entries import latest_calls_sql
from tests.frs.conftest import NOW

BLOCK = 1 << BLOCK_BITS
_LABEL = re.compile(r"^\[(\d+)(?:–(\d+))?\] (?:User|Assistant|Summary[^:]*): (\S+)")


@dataclass(frozen=True, slots=True)
class Live:
    """One live entry as SQL stores it."""

    ord: int
    ord_last: int
    tag: str  # the first word of its content: m00042 for message 42, S<n> for a summary
    tokens: int


@asynccontextmanager
async def opened(path: Path) -> AsyncIterator[tuple[Database, Env]]:
    async with open_database(path) as db:
        yield db, Env(SqliteStore(db), clock=lambda: NOW)


def messages(first: int, count: int) -> list[NewMessage]:
    """Numbered test messages; each content starts with a tag naming its number."""
    return [
        NewMessage("user" if n % 3 else "assistant", f"m{n:05d} " + "lorem ipsum dolor " * 2)
        for n in range(first, first + count)
    ]


async def brute_force(db: Database, sid: SessionId) -> list[Live]:
    """The live entries of the session in thread order, straight from the table."""
    async with db.snapshot() as conn:
        rows = await conn.execute_fetchall(
            "select ord, ord_last, content, tokens from messages"
            " where session_id = ? and live = 1 order by ord",
            (sid,),
        )
    return [Live(r[0], r[1], r[2].split(" ", 1)[0], r[3]) for r in rows]


async def stored_blocks(db: Database, sid: SessionId) -> Counter[int]:
    async with db.snapshot() as conn:
        rows = await conn.execute_fetchall(
            "select block, live from blocks where session_id = ? and live != 0", (sid,)
        )
    return Counter({row[0]: row[1] for row in rows})


def parse_view(text: str) -> list[tuple[int, int | None, str]]:
    """(label, label end or None, content tag) for each entry line of a view."""
    found = []
    for line in text.split("\n"):
        if line.startswith("["):
            match = _LABEL.match(line)
            assert match, line
            end = int(match[2]) if match[2] else None
            found.append((int(match[1]), end, match[3]))
    return found


class Checker:
    """Compares the store with a brute-force enumeration of its live rows."""

    def __init__(self, db: Database, env: Env, sid: SessionId) -> None:
        self.db, self.env, self.sid = db, env, sid
        self.rng = random.Random(1024)

    async def check(self, full: bool = False) -> list[Live]:
        live = await brute_force(self.db, self.sid)
        ords = [entry.ord for entry in live]
        count = len(live)
        session = await sessions.get_session(self.env, self.sid)
        assert session.live_count == count
        assert session.live_tokens == sum(entry.tokens for entry in live)
        assert await stored_blocks(self.db, self.sid) == Counter(o >> BLOCK_BITS for o in ords)
        # Spans never overlap and are in order.
        for before, after in pairwise(live):
            assert before.ord_last < after.ord

        async with self.env.store.snapshot() as reader:
            everything = await reader.entries_at(self.sid, 1, count + 10)
            assert [m.ord for m in everything] == ords

            for position in self.positions_to_probe(live):
                for width in (1, 3):
                    got = await reader.entries_at(self.sid, position, width)
                    want = ords[position - 1 : position - 1 + width]
                    assert [m.ord for m in got] == want, (position, width)

            probe = ords if full else [ords[p - 1] for p in self.positions_to_probe(live)]
            got_positions = await reader.positions_of(self.sid, probe)
            assert got_positions == [ords.index(o) + 1 for o in probe]

        await self.check_views(live)
        return live

    def positions_to_probe(self, live: list[Live]) -> list[int]:
        """Every position next to a block boundary or a summary, the ends, and a sample."""
        count = len(live)
        chosen = {1, 2, count - 1, count}
        for index, (before, after) in enumerate(pairwise(live)):
            crosses = before.ord >> BLOCK_BITS != after.ord >> BLOCK_BITS
            if crosses or after.ord_last != after.ord or before.ord_last != before.ord:
                chosen.update(range(index - 1, index + 4))
        chosen.update(self.rng.sample(range(1, count + 1), min(count, 40)))
        return sorted(p for p in chosen if 1 <= p <= count)

    async def check_views(self, live: list[Live]) -> None:
        count = len(live)
        for start in [*sorted(self.rng.sample(range(1, count + 1), 6)), 1, count]:
            end = min(count, start + 4)
            text = await viewing.view(self.env, ViewOptions(start=start, end=end), self.sid)
            assert parse_view(text) == [(p, None, live[p - 1].tag) for p in range(start, end + 1)]
            where = f"position {start}" if start == end else f"positions {start}–{end}"
            assert f"at {where} of {count:,} entries" in text.split("\n")[-1]
            # The same entries addressed by number in absolute mode.
            lo, hi = live[start - 1].ord, live[end - 1].ord_last
            by_number = await viewing.view(
                self.env, ViewOptions(numbering="absolute", start=lo, end=hi), self.sid
            )
            assert parse_view(by_number) == [
                (e.ord, e.ord_last if e.ord_last != e.ord else None, e.tag)
                for e in live[start - 1 : end]
            ]
            where = f"position {start}" if start == end else f"positions {start}–{end}"
            assert f"at {where} of {count:,} entries" in by_number.split("\n")[-1]
        last = await viewing.view(self.env, ViewOptions(last=7), self.sid)
        assert [p for p, _, _ in parse_view(last)] == list(range(count - 6, count + 1))


class TestPositionsAtScale:
    async def test_positions_agree_with_a_brute_force_count_through_squash_and_restore(
        self, tmp_path: Path
    ) -> None:
        async with opened(tmp_path / "frs.db") as (db, env):
            other = (await sessions.start(env, "other")).session
            session = (await sessions.start(env, "big")).session
            sid = session.id
            checker = Checker(db, env, sid)
            for batch in range(3):
                await recording.record(env, messages(batch * 1000 + 1, 1000), sid)
                # Another session's rows interleave; its blocks must not count here.
                await recording.record(env, messages(90_000 + batch * 10, 10), other.id)
            original = await checker.check(full=True)
            assert len(original) == 3000

            async def squash_numbers(lo: int, hi: int, label: str) -> None:
                done = await squashes.compress_range(env, lo, hi, label, "absolute", sid)
                live = await checker.check()
                assert live[done.position - 1].tag == label  # where the service said it went

            async def squash_positions(lo: int, hi: int, label: str) -> None:
                before = await brute_force(db, sid)
                done = await squashes.compress_range(env, lo, hi, label, session_id=sid)
                live = await checker.check()
                assert live[lo - 1] == Live(
                    before[lo - 1].ord,
                    before[hi - 1].ord_last,
                    label,
                    live[lo - 1].tokens,
                )
                assert done.position == lo

            async def restore(n: int) -> None:
                before = await brute_force(db, sid)
                restored = await squashes.restore(env, f"SQ.{n}", sid)
                live = await checker.check()
                position = next(i for i, e in enumerate(before) if e.tag == f"S{n}") + 1
                assert restored.first == position
                members = live[restored.first - 1 : restored.last]
                assert members[0].ord == before[position - 1].ord
                assert members[-1].ord_last == before[position - 1].ord_last

            await squash_numbers(1000, 1100, "S1")  # crosses the 1024 boundary
            await squash_numbers(2040, 2060, "S2")  # crosses 2048
            await squash_positions(1500, 1510, "S3")  # deep in the middle
            await squash_positions(1, 5, "S4")  # at the very start
            await squash_numbers(990, 1200, "S5")  # nests S1, crosses 1024
            # The summaries took numbers 3001..3005, so new messages start at 3006.
            recorded = await recording.record(env, messages(3006, 1100), sid)
            assert recorded.numbers[0] == 3006
            await checker.check()
            await squash_numbers(2000, 3100, "S6")  # nests S2, empties block 2 (2048..3071)
            assert 2 not in await stored_blocks(db, sid)
            await squashes.compress_last(env, 40, "S7", sid)  # crosses 4096
            await checker.check()
            await squash_positions(1000, 1003, "S8")
            await restore(6)  # block 2 comes back; S2 is live again
            await restore(5)
            await restore(2)
            await restore(1)
            await squash_numbers(1024, 2047, "S9")  # exactly block 1, nesting S3 and S8
            await restore(9)
            for n in (3, 4, 7, 8):
                await restore(n)
            final = await checker.check(full=True)
        first_3000 = [e for e in final if e.ord <= 3000]
        assert first_3000 == original
        assert [e.tag for e in final[3000:]] == [f"m{n:05d}" for n in range(3006, 4106)]


def calls(*ids: str) -> NewMessage:
    return NewMessage("assistant", "", tool_calls=tuple(ToolCall(i, "f", "{}") for i in ids))


def answer(call_id: str) -> NewMessage:
    return NewMessage("tool", "ok", tool_call_id=call_id)


class TestLatestCalls:
    async def test_each_id_gives_its_latest_call_and_that_calls_first_answer(
        self, tmp_path: Path
    ) -> None:
        async with opened(tmp_path / "frs.db") as (db, env):
            session = (await sessions.start(env, "calls")).session
            other = (await sessions.start(env, "other")).session
            # 1 makes a, 2 answers it, 3 makes a again and b, 4 and 5 answer that a, b unanswered
            await recording.record(
                env,
                [calls("a"), answer("a"), calls("a", "b"), answer("a"), answer("a")],
                session.id,
            )
            await recording.record(env, [calls("c"), answer("c")], other.id)
            async with SqliteStore(db).snapshot() as reader:
                found = await reader.latest_calls(session.id, ["a", "b", "c", "z", "a"])
        assert found == {"a": CallRecord(3, 4), "b": CallRecord(3, None)}

    async def test_more_ids_than_one_query_takes_are_all_answered(self, tmp_path: Path) -> None:
        ids = [f"id{i}" for i in range(1_234)]
        async with opened(tmp_path / "frs.db") as (db, env):
            session = (await sessions.start(env, "many")).session
            await recording.record(
                env, [calls(*ids[i : i + 10]) for i in range(0, 1_234, 10)], session.id
            )
            await recording.record(env, [answer(i) for i in ids[::2]], session.id)
            async with SqliteStore(db).snapshot() as reader:
                found = await reader.latest_calls(session.id, [*ids, "none"])
        assert len(found) == 1_234
        assert found["id0"] == CallRecord(1, 125)
        assert found["id1233"] == CallRecord(124, None)
        assert sum(record.answered_by is not None for record in found.values()) == 617

    async def test_the_query_seeks_by_key_and_by_the_answers_index(self, tmp_path: Path) -> None:
        async with open_database(tmp_path / "frs.db") as db, db.snapshot() as conn:
            rows = await conn.execute_fetchall(
                "explain query plan "
                + SQLITE.sql(latest_calls_sql(SQLITE, "call_id in ($2, $3, $4)")),
                ("s", "a", "b", "c"),
            )
        plan = [row[3] for row in rows]
        assert "SEARCH calls USING PRIMARY KEY (session_id=? AND call_id=?)" in plan
        assert "SEARCH m USING INDEX messages_answers (session_id=? AND answers=?)" in plan
        assert not [step for step in plan if step.startswith("SCAN") and "latest" not in step]


class TestDatabase:
    async def test_both_connections_use_wal_foreign_keys_and_full_sync(
        self, tmp_path: Path
    ) -> None:
        async with open_database(tmp_path / "frs.db") as db:
            async with db.transaction() as writer:
                written = [await one(writer, f"pragma {p}") for p in PRAGMAS]
            async with db.snapshot() as reader:
                read = [await one(reader, f"pragma {p}") for p in PRAGMAS]
        assert written == read == ["wal", 1, 2, 10_000]

    async def test_the_database_and_its_folder_are_created(self, tmp_path: Path) -> None:
        path = tmp_path / "deep" / "er" / "frs.db"
        async with open_database(path):
            pass
        assert path.is_file()

    async def test_a_failed_transaction_rolls_back_and_the_next_one_works(
        self, tmp_path: Path
    ) -> None:
        async with open_database(tmp_path / "frs.db") as db:

            async def insert_then_fail() -> None:
                async with db.transaction() as conn:
                    await conn.execute(INSERT_SESSION, ("lost",))
                    raise RuntimeError("boom")

            with pytest.raises(RuntimeError, match="boom"):
                await insert_then_fail()
            async with db.transaction() as conn:
                await conn.execute(INSERT_SESSION, ("kept",))
            async with db.snapshot() as conn:
                assert await ids(conn) == ["kept"]

    async def test_a_cancelled_transaction_rolls_back_and_leaves_none_open(
        self, tmp_path: Path
    ) -> None:
        async with open_database(tmp_path / "frs.db") as db:
            with anyio.CancelScope() as scope:
                async with db.transaction() as conn:
                    await conn.execute(INSERT_SESSION, ("lost",))
                    scope.cancel()
                    await anyio.sleep(1)
            assert scope.cancelled_caught
            async with db.transaction() as conn:
                await conn.execute(INSERT_SESSION, ("kept",))
            async with db.snapshot() as conn:
                assert await ids(conn) == ["kept"]

    async def test_a_reader_sees_only_committed_state(self, tmp_path: Path) -> None:
        async with open_database(tmp_path / "frs.db") as db:
            async with db.transaction() as writer:
                await writer.execute(INSERT_SESSION, ("pending",))
                async with db.snapshot() as reader:
                    assert await one(reader, "select count(*) from sessions") == 0
            async with db.snapshot() as reader:
                assert await one(reader, "select count(*) from sessions") == 1


PRAGMAS = ("journal_mode", "foreign_keys", "synchronous", "busy_timeout")
INSERT_SESSION = (
    "insert into sessions (id, title, created_at, updated_at) values (?, 't', 'x', 'x')"
)


async def ids(conn: aiosqlite.Connection) -> list[str]:
    return [row[0] for row in await conn.execute_fetchall("select id from sessions order by id")]


async def one(conn: aiosqlite.Connection, sql: str) -> object:
    async with conn.execute(sql) as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return row[0]
