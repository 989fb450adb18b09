"""Reads of a thread's entries: by position, by ord range and lane, by number, and the pairs of
tool calls and results.

Positions go through the per-block live counts (`storage.blocks`); a read of some lanes is one
range scan per lane (index `messages_live_lane`), merged in thread order.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from frs.model import CallRecord, Message, SessionId
from storage.blocks import BlockCounts, block_of, first_ord
from storage.dialect import Dialect
from storage.queries import SELECT_MESSAGE, Queries

_LIVE = f"{SELECT_MESSAGE} where session_id = $1 and live = 1"


def latest_calls_sql(dialect: Dialect, condition: str) -> str:
    """The latest call per id (primary key of `calls`) among the ids `condition` matches, and
    its first answer, found through the `messages_answers` index (a result stores the number of
    the call it answers); `$1` is the session."""
    return (
        "with latest (call_id, number) as (select call_id, max(number) from calls"
        f" where session_id = $1 and {condition} group by call_id)"
        " select call_id, number, (select min(m.number) from messages m"
        f"{dialect.indexed_by('messages_answers')} where m.session_id = $1"
        " and m.answers = latest.number"
        " and m.tool_call_id = latest.call_id) from latest"
    )


class EntryReads(Queries):
    """The entry reads of `frs.ports.ThreadReader`."""

    async def _block_counts(self, session_id: SessionId) -> BlockCounts:
        rows = await self._all(
            "select block, live from blocks where session_id = $1 and live > 0 order by block",
            session_id,
        )
        return BlockCounts.from_rows(rows)

    async def entries_at(self, session_id: SessionId, position: int, count: int) -> list[Message]:
        if count <= 0 or position < 1:
            return []
        lowest, skip = 0, position - 1
        if position > 1:
            found = (await self._block_counts(session_id)).seek(position)
            if found is None:
                return []
            lowest, skip = found
        return await self._messages(
            f"{_LIVE} and ord >= $2 order by ord limit $3 offset $4",
            session_id,
            lowest,
            count,
            skip,
        )

    async def positions_of(self, session_id: SessionId, ords: Sequence[int]) -> list[int]:
        if not ords:
            return []
        counts = await self._block_counts(session_id)
        positions = []
        for ord_ in ords:
            block = block_of(ord_)
            row = await self._one(
                "select count(*) from messages where session_id = $1 and live = 1"
                " and ord >= $2 and ord < $3",
                session_id,
                first_ord(block),
                ord_,
            )
            positions.append(counts.live_below(block) + int(row[0]) + 1)
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
                f"{_LIVE} and ord between $2 and $3 order by ord limit $4",
                session_id,
                lo,
                hi,
                self._limit(limit),
            )
        per_lane = [
            await self._messages(
                f"{_LIVE} and lane = $2 and ord between $3 and $4 order by ord limit $5",
                session_id,
                lane,
                lo,
                hi,
                self._limit(limit),
            )
            for lane in dict.fromkeys(lanes)
        ]
        merged = list(heapq.merge(*per_lane, key=lambda m: m.ord))
        return merged if limit is None else merged[:limit]

    async def entry_covering(self, session_id: SessionId, ord_: int) -> Message | None:
        found = await self._messages(
            f"{_LIVE} and ord <= $2 order by ord desc limit 1", session_id, ord_
        )
        return found[0] if found else None

    async def last_entries(
        self, session_id: SessionId, count: int, lanes: Sequence[str] | None
    ) -> list[Message]:
        if not lanes:
            newest = await self._messages(f"{_LIVE} order by ord desc limit $2", session_id, count)
            return newest[::-1]
        per_lane = [
            await self._messages(
                f"{_LIVE} and lane = $2 order by ord desc limit $3", session_id, lane, count
            )
            for lane in dict.fromkeys(lanes)
        ]
        newest = heapq.nlargest(count, (m for ms in per_lane for m in ms), key=lambda m: m.ord)
        return newest[::-1]

    async def run_entries(self, session_id: SessionId, run_id: str) -> list[Message]:
        return await self._messages(f"{_LIVE} and run_id = $2 order by ord", session_id, run_id)

    async def thinking(self, session_id: SessionId, lo: int, hi: int) -> list[Message]:
        return await self._messages(
            f"{SELECT_MESSAGE} where session_id = $1 and kind = 'thinking'"
            " and ord between $2 and $3 order by ord, id",
            session_id,
            lo,
            hi,
        )

    async def message(self, session_id: SessionId, number: int) -> Message | None:
        found = await self._messages(
            f"{SELECT_MESSAGE} where session_id = $1 and number = $2", session_id, number
        )
        return found[0] if found else None

    async def latest_calls(
        self, session_id: SessionId, call_ids: Sequence[str]
    ) -> dict[str, CallRecord]:
        found: dict[str, CallRecord] = {}
        for condition, ids in self.dialect.matching("call_id", 2, list(dict.fromkeys(call_ids))):
            rows = await self._all(latest_calls_sql(self.dialect, condition), session_id, *ids)
            found.update((row[0], CallRecord(row[1], row[2])) for row in rows)
        return found

    async def pair_partners(
        self, session_id: SessionId, lo: int, hi: int
    ) -> tuple[int | None, int | None]:
        # Each subquery must scan only the window (by number) or only the answers to the
        # window (by answers), not the thread.
        by_number = self.dialect.indexed_by("messages_by_number")
        by_answers = self.dialect.indexed_by("messages_answers")
        row = await self._one(
            f"select (select min(answers) from messages{by_number}"
            " where session_id = $1 and number between $2 and $3 and answers < $2),"
            f" (select max(number) from messages{by_answers}"
            " where session_id = $1 and answers between $2 and $3 and number > $3)",
            session_id,
            lo,
            hi,
        )
        return row[0], row[1]
