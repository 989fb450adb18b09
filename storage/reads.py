"""Read queries of the SQLite store: every reader method of `frs.ports.ThreadReader`.

Positions: live entries are counted per block of 1024 ords (table `blocks`), so mapping a
position to an entry, or an entry to its position, sums one short row per block and scans at
most one block of the `messages_live` index, however long the thread grows.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

import aiosqlite

from frs.model import (
    CallRecord,
    Change,
    Checkpoint,
    FocusLayer,
    GatewayCall,
    Message,
    PlanStep,
    Scope,
    Session,
    SessionId,
    Source,
    Squash,
)
from storage.rows import (
    CALL_COLUMNS,
    LAYER_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    SOURCE_COLUMNS,
    SQUASH_COLUMNS,
    call_from_row,
    checkpoint_from_row,
    layer_from_row,
    message_from_row,
    qualified,
    session_from_row,
    source_from_row,
    squash_from_row,
    step_from_row,
)

BLOCK_BITS = 10  # 1024 ords per block

_SELECT_MESSAGE = f"select {MESSAGE_COLUMNS} from messages"
#: `Store.newest_entries` in one statement: the conversation's session found inside it.
NEWEST_OF_CONVERSATION = (
    f"select {MESSAGE_COLUMNS} from messages where session_id = (select id from sessions"
    " where tenant = ? and interface = ? and conversation = ?) and live = 1"
    " order by ord desc limit ?"
)
# Ids per `latest_calls` query: well under SQLite's oldest limit of 999 bound parameters, and
# one query for a typical batch.
_IDS_PER_QUERY = 500


def _latest_calls_sql(count: int) -> str:
    """The latest call per id (primary key of `calls`), and its first answer, found through the
    `messages_answers` index (a result stores the number of the call it answers); `count`
    placeholders for the ids, after the session id."""
    marks = ", ".join("?" * count)
    return (
        "with latest (call_id, number) as (select call_id, max(number) from calls"
        f" where session_id = ?1 and call_id in ({marks}) group by call_id)"
        " select call_id, number, (select min(m.number) from messages m"
        " indexed by messages_answers where m.session_id = ?1 and m.answers = latest.number"
        " and m.tool_call_id = latest.call_id) from latest"
    )


class SqliteReader:
    """Read queries over one connection inside a transaction someone else opened."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(await self.conn.execute_fetchall(sql, params))

    async def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        # One trip to the connection's thread; a cursor's execute/fetchone/close costs three.
        rows = list(await self.conn.execute_fetchall(sql, params))
        return rows[0] if rows else None

    async def _messages(self, sql: str, params: Sequence[Any]) -> list[Message]:
        return [message_from_row(row) for row in await self._all(sql, params)]

    # sessions

    async def find_session(self, tenant: str, session_id: SessionId) -> Session | None:
        row = await self._one(
            f"select {SESSION_COLUMNS} from sessions where id = ? and tenant = ?",
            (session_id, tenant),
        )
        return session_from_row(row) if row else None

    async def find_conversation(
        self, tenant: str, interface: str, conversation: str
    ) -> Session | None:
        row = await self._one(
            f"select {SESSION_COLUMNS} from sessions"
            " where tenant = ? and interface = ? and conversation = ?",
            (tenant, interface, conversation),
        )
        return session_from_row(row) if row else None

    async def current_session(self, scope: Scope) -> Session | None:
        columns = qualified(SESSION_COLUMNS, "s")
        # The session's own tenant is checked too: a marker can only name the tenant's own.
        row = await self._one(
            f"select {columns} from current_sessions c join sessions s on s.id = c.session_id"
            " where c.tenant = ? and c.client = ? and s.tenant = c.tenant",
            (scope.tenant, scope.client),
        )
        return session_from_row(row) if row else None

    async def list_sessions(self, tenant: str, limit: int, offset: int = 0) -> list[Session]:
        rows = await self._all(
            f"select {SESSION_COLUMNS} from sessions where tenant = ?"
            " order by updated_at desc, id limit ? offset ?",
            (tenant, limit, offset),
        )
        return [session_from_row(row) for row in rows]

    async def count_sessions(self, tenant: str) -> int:
        row = await self._one("select count(*) from sessions where tenant = ?", (tenant,))
        return int(row[0])

    async def search_sessions(self, tenant: str, text: str, limit: int) -> list[Session]:
        # LIKE is case-insensitive for ASCII letters only, as the port promises; its wildcards
        # in the text asked for are escaped so they match themselves.
        pattern = "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"
        rows = await self._all(
            f"select {SESSION_COLUMNS} from sessions s where s.tenant = ?1"
            " and (title like ?2 escape '\\' or exists (select 1 from messages m"
            " where m.session_id = s.id and m.content like ?2 escape '\\'))"
            " order by updated_at desc, id limit ?3",
            (tenant, pattern, limit),
        )
        return [session_from_row(row) for row in rows]

    # positions

    async def _block_starts(self, session_id: SessionId) -> tuple[list[int], list[int]]:
        """Blocks holding live entries, and the live entries before each."""
        rows = await self._all(
            "select block, live from blocks where session_id = ? and live > 0 order by block",
            (session_id,),
        )
        blocks = [row[0] for row in rows]
        before = [0, *accumulate(row[1] for row in rows)]
        return blocks, before

    async def entries_at(self, session_id: SessionId, position: int, count: int) -> list[Message]:
        if count <= 0 or position < 1:
            return []
        lowest, skip = 0, position - 1
        if position > 1:
            blocks, before = await self._block_starts(session_id)
            if not blocks:
                return []
            # The first block whose running count reaches `position` holds it.
            index = next((i for i, b in enumerate(before[1:]) if b >= position), len(blocks) - 1)
            lowest, skip = blocks[index] << BLOCK_BITS, position - 1 - before[index]
        return await self._messages(
            f"{_SELECT_MESSAGE} where session_id = ? and live = 1 and ord >= ?"
            " order by ord limit ? offset ?",
            (session_id, lowest, count, skip),
        )

    async def positions_of(self, session_id: SessionId, ords: Sequence[int]) -> list[int]:
        if not ords:
            return []
        blocks, before = await self._block_starts(session_id)
        prior = {block: before[i] for i, block in enumerate(blocks)}
        positions = []
        for ord_ in ords:
            block = ord_ >> BLOCK_BITS
            earlier = prior.get(block)
            if earlier is None:  # its block has no live entry left: count the blocks below
                earlier = sum(before[i + 1] - before[i] for i, b in enumerate(blocks) if b < block)
            row = await self._one(
                "select count(*) from messages where session_id = ? and live = 1"
                " and ord >= ? and ord < ?",
                (session_id, block << BLOCK_BITS, ord_),
            )
            positions.append(earlier + row[0] + 1)
        return positions

    async def entries_between(
        self,
        session_id: SessionId,
        lo: int,
        hi: int,
        lanes: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Message]:
        if not lanes:
            return await self._messages(
                f"{_SELECT_MESSAGE} where session_id = ? and live = 1 and ord between ? and ?"
                " order by ord limit ?",
                (session_id, lo, hi, -1 if limit is None else limit),
            )
        # One range scan per lane (index messages_live_lane), merged in thread order.
        per_lane = [
            await self._messages(
                f"{_SELECT_MESSAGE} where session_id = ? and live = 1 and lane = ?"
                " and ord between ? and ? order by ord limit ?",
                (session_id, lane, lo, hi, -1 if limit is None else limit),
            )
            for lane in dict.fromkeys(lanes)
        ]
        merged = list(heapq.merge(*per_lane, key=lambda m: m.ord))
        return merged if limit is None else merged[:limit]

    async def entry_covering(self, session_id: SessionId, ord_: int) -> Message | None:
        found = await self._messages(
            f"{_SELECT_MESSAGE} where session_id = ? and live = 1 and ord <= ?"
            " order by ord desc limit 1",
            (session_id, ord_),
        )
        return found[0] if found else None

    async def last_entries(
        self, session_id: SessionId, count: int, lanes: Sequence[str] | None
    ) -> list[Message]:
        if not lanes:
            newest = await self._messages(
                f"{_SELECT_MESSAGE} where session_id = ? and live = 1 order by ord desc limit ?",
                (session_id, count),
            )
            return newest[::-1]
        per_lane = [
            await self._messages(
                f"{_SELECT_MESSAGE} where session_id = ? and live = 1 and lane = ?"
                " order by ord desc limit ?",
                (session_id, lane, count),
            )
            for lane in dict.fromkeys(lanes)
        ]
        newest = heapq.nlargest(count, (m for ms in per_lane for m in ms), key=lambda m: m.ord)
        return newest[::-1]

    # messages and pairs

    async def message(self, session_id: SessionId, number: int) -> Message | None:
        found = await self._messages(
            f"{_SELECT_MESSAGE} where session_id = ? and number = ?", (session_id, number)
        )
        return found[0] if found else None

    async def latest_calls(
        self, session_id: SessionId, call_ids: Sequence[str]
    ) -> dict[str, CallRecord]:
        found: dict[str, CallRecord] = {}
        ids = list(dict.fromkeys(call_ids))
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            rows = await self._all(_latest_calls_sql(len(chunk)), (session_id, *chunk))
            found.update((row[0], CallRecord(row[1], row[2])) for row in rows)
        return found

    async def pair_partners(
        self, session_id: SessionId, lo: int, hi: int
    ) -> tuple[int | None, int | None]:
        # Each query must scan only the window (by number) or only the answers to the window
        # (by answers); without statistics SQLite may pick the other index and scan the thread.
        row = await self._one(
            "select (select min(answers) from messages indexed by messages_by_number"
            " where session_id = ? and number between ? and ? and answers < ?),"
            " (select max(number) from messages indexed by messages_answers"
            " where session_id = ? and answers between ? and ? and number > ?)",
            (session_id, lo, hi, lo, session_id, lo, hi, hi),
        )
        return row[0], row[1]

    # squashes

    async def squash(self, session_id: SessionId, n: int) -> Squash | None:
        row = await self._one(
            f"select {SQUASH_COLUMNS} from squashes where session_id = ? and n = ?",
            (session_id, n),
        )
        return squash_from_row(row) if row else None

    async def squash_members(self, session_id: SessionId, n: int) -> list[Message]:
        columns = qualified(MESSAGE_COLUMNS, "m")
        return await self._messages(
            f"select {columns} from squash_members s join messages m"
            " on m.session_id = s.session_id and m.number = s.number"
            " where s.session_id = ? and s.n = ? order by s.seq",
            (session_id, n),
        )

    async def squash_members_at(
        self, session_id: SessionId, n: int, start: int, end: int
    ) -> tuple[int, list[Message]]:
        row = await self._one(
            "select max(at) from squash_members where session_id = ? and n = ? and at <= ?",
            (session_id, n, start),
        )
        first = int(row[0]) if row and row[0] is not None else 0
        columns = qualified(MESSAGE_COLUMNS, "m")
        members = await self._messages(
            f"select {columns} from squash_members s join messages m"
            " on m.session_id = s.session_id and m.number = s.number"
            " where s.session_id = ? and s.n = ? and s.at >= ? and s.at < ? order by s.at",
            (session_id, n, first, max(end, first + 1)),
        )
        return first, members

    async def squash_holding(self, session_id: SessionId, number: int) -> Squash | None:
        columns = qualified(SQUASH_COLUMNS, "q")
        row = await self._one(
            f"select {columns} from squash_members s join squashes q"
            " on q.session_id = s.session_id and q.n = s.n"
            " where s.session_id = ? and s.number = ? and q.restored_at is null",
            (session_id, number),
        )
        return squash_from_row(row) if row else None

    async def squashes(self, session_id: SessionId) -> list[Squash]:
        rows = await self._all(
            f"select {SQUASH_COLUMNS} from squashes where session_id = ? order by n", (session_id,)
        )
        return [squash_from_row(row) for row in rows]

    async def restored_summaries(
        self, session_id: SessionId, lo: int, hi: int
    ) -> list[tuple[int, int]]:
        # The session's squashes by key, not its messages: a few per thousand messages.
        rows = await self._all(
            "select summary_number, n from squashes where session_id = ?"
            " and restored_at is not null and summary_number between ? and ?"
            " order by summary_number",
            (session_id, lo, hi),
        )
        return [(int(row[0]), int(row[1])) for row in rows]

    # plan, marks, thinking, changes

    async def plan(self, session_id: SessionId) -> list[PlanStep]:
        rows = await self._all(
            "select text, status from plan_steps where session_id = ? order by idx", (session_id,)
        )
        return [step_from_row(row) for row in rows]

    async def checkpoints(self, session_id: SessionId) -> list[Checkpoint]:
        rows = await self._all(
            "select name, revision, after_ord, created_at from checkpoints where session_id = ?"
            " order by id",
            (session_id,),
        )
        return [checkpoint_from_row(row) for row in rows]

    async def thinking(self, session_id: SessionId, lo: int, hi: int) -> list[Message]:
        return await self._messages(
            f"{_SELECT_MESSAGE} where session_id = ? and kind = 'thinking' and ord between ? and ?"
            " order by ord, id",
            (session_id, lo, hi),
        )

    async def open_layers(self, session_id: SessionId) -> list[FocusLayer]:
        rows = await self._all(
            f"select {LAYER_COLUMNS} from focus_layers where session_id = ? and closed_at is null"
            " order by n",
            (session_id,),
        )
        return [layer_from_row(row) for row in rows]

    async def last_layer(self, session_id: SessionId) -> int:
        row = await self._one(
            "select coalesce(max(n), 0) from focus_layers where session_id = ?", (session_id,)
        )
        return int(row[0])

    async def run_entries(self, session_id: SessionId, run_id: str) -> list[Message]:
        return await self._messages(
            f"{_SELECT_MESSAGE} where session_id = ? and live = 1 and run_id = ? order by ord",
            (session_id, run_id),
        )

    async def sources(self, session_id: SessionId) -> list[Source]:
        rows = await self._all(
            f"select {SOURCE_COLUMNS} from sources where session_id = ? order by alias",
            (session_id,),
        )
        return [source_from_row(row) for row in rows]

    async def changes_since(self, session_id: SessionId, revision: int) -> list[str]:
        # Revisions start at 1: a negative one asks for the same rows as 0, and one below
        # -2**63 would not fit an SQLite integer (a caller's expected_revision is unbounded).
        # The newest ten: what a caller most needs to see is what happened last.
        rows = await self._all(
            "select revision, change from changes where session_id = ? and revision > ?"
            " order by revision desc limit 10",
            (session_id, max(revision, 0)),
        )
        return [f"revision {row[0]}: {row[1]}" for row in reversed(rows)]

    async def gateway_calls(self, session_id: SessionId, limit: int) -> list[GatewayCall]:
        rows = await self._all(
            f"select {CALL_COLUMNS} from gateway_calls where session_id = ?"
            " order by id desc limit ?",
            (session_id, limit),
        )
        return [call_from_row(row) for row in reversed(rows)]

    async def change_log(self, session_id: SessionId, limit: int) -> list[Change]:
        rows = await self._all(
            "select revision, change, created_at, live_count, live_tokens, recorded,"
            " recorded_tokens from changes where session_id = ? order by revision desc limit ?",
            (session_id, limit),
        )
        return [Change(*row) for row in reversed(rows)]
