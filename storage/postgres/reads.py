"""Read queries of the PostgreSQL store: every reader method of `frs.ports.ThreadReader`.

The same queries as the SQLite reader (`storage.reads`), in PostgreSQL's dialect, over the
same indexes and the same per-block live counts (table `blocks`), so positions cost one short
sum plus a scan of at most one block however long the thread grows.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

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
from storage.postgres.search import search_sessions
from storage.postgres.text import encode_text
from storage.reads import BLOCK_BITS
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

_BIGINT_MAX = 2**63 - 1
_SELECT_MESSAGE = f"select {MESSAGE_COLUMNS} from messages"
_SESSION_BY_ID = f"select {SESSION_COLUMNS} from sessions where id = $1 and tenant = $2"
_SESSION_BY_CONVERSATION = (
    f"select {SESSION_COLUMNS} from sessions where tenant = $1 and interface = $2"
    " and conversation = $3"
)
#: `Store.newest_entries` in one statement: the conversation's session found inside it.
NEWEST_OF_CONVERSATION = (
    f"select {MESSAGE_COLUMNS} from messages where session_id = (select id from sessions"
    " where tenant = $1 and interface = $2 and conversation = $3) and live = 1"
    " order by ord desc limit $4"
)
_CURRENT = (
    "select {columns} from current_sessions c join sessions s on s.id = c.session_id"
    " where c.tenant = $1 and c.client = $2 and s.tenant = c.tenant"
).format(columns=qualified(SESSION_COLUMNS, "s"))
# The latest call per id and its first answer (through index messages_answers).
_LATEST_CALLS = (
    "with latest (call_id, number) as (select call_id, max(number) from calls"
    " where session_id = $1 and call_id = any($2::text[]) group by call_id)"
    " select call_id, number, (select min(m.number) from messages m"
    " where m.session_id = $1 and m.answers = latest.number"
    " and m.tool_call_id = latest.call_id) from latest"
)


class PgReader:
    """Read queries over one asyncpg connection inside a transaction someone else opened."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def _all(self, sql: str, *params: Any) -> list[Any]:
        return list(await self.conn.fetch(sql, *params))

    async def _one(self, sql: str, *params: Any) -> Any:
        return await self.conn.fetchrow(sql, *params)

    async def _messages(self, sql: str, *params: Any) -> list[Message]:
        return [message_from_row(row) for row in await self._all(sql, *params)]

    async def _session(self, sql: str, *params: Any) -> Session | None:
        row = await self._one(sql, *params)
        return session_from_row(row) if row else None

    # sessions

    async def find_session(self, tenant: str, session_id: SessionId) -> Session | None:
        return await self._session(_SESSION_BY_ID, session_id, tenant)

    async def find_conversation(
        self, tenant: str, interface: str, conversation: str
    ) -> Session | None:
        return await self._session(_SESSION_BY_CONVERSATION, tenant, interface, conversation)

    async def current_session(self, scope: Scope) -> Session | None:
        return await self._session(_CURRENT, scope.tenant, scope.client)

    async def list_sessions(self, tenant: str, limit: int, offset: int = 0) -> list[Session]:
        rows = await self._all(
            f"select {SESSION_COLUMNS} from sessions where tenant = $1"
            " order by updated_at desc, id limit $2 offset $3",
            tenant,
            limit,
            offset,
        )
        return [session_from_row(row) for row in rows]

    async def count_sessions(self, tenant: str) -> int:
        return int(
            await self.conn.fetchval("select count(*) from sessions where tenant = $1", tenant)
        )

    async def search_sessions(self, tenant: str, text: str, limit: int) -> list[Session]:
        return await search_sessions(self.conn, tenant, text, limit)

    # positions

    async def _block_starts(self, session_id: SessionId) -> tuple[list[int], list[int]]:
        """Blocks holding live entries, and the live entries before each."""
        rows = await self._all(
            "select block, live from blocks where session_id = $1 and live > 0 order by block",
            session_id,
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
            index = next((i for i, b in enumerate(before[1:]) if b >= position), len(blocks) - 1)
            lowest, skip = blocks[index] << BLOCK_BITS, position - 1 - before[index]
        return await self._messages(
            f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 and ord >= $2"
            " order by ord limit $3 offset $4",
            session_id,
            lowest,
            count,
            skip,
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
            within = await self.conn.fetchval(
                "select count(*) from messages where session_id = $1 and live = 1"
                " and ord >= $2 and ord < $3",
                session_id,
                block << BLOCK_BITS,
                ord_,
            )
            positions.append(earlier + int(within) + 1)
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
                f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 and ord between $2 and $3"
                " order by ord limit $4",
                session_id,
                lo,
                hi,
                limit,
            )
        per_lane = [
            await self._messages(
                f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 and lane = $2"
                " and ord between $3 and $4 order by ord limit $5",
                session_id,
                lane,
                lo,
                hi,
                limit,
            )
            for lane in dict.fromkeys(lanes)
        ]
        merged = list(heapq.merge(*per_lane, key=lambda m: m.ord))
        return merged if limit is None else merged[:limit]

    async def entry_covering(self, session_id: SessionId, ord_: int) -> Message | None:
        found = await self._messages(
            f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 and ord <= $2"
            " order by ord desc limit 1",
            session_id,
            ord_,
        )
        return found[0] if found else None

    async def last_entries(
        self, session_id: SessionId, count: int, lanes: Sequence[str] | None
    ) -> list[Message]:
        if not lanes:
            newest = await self._messages(
                f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 order by ord desc limit $2",
                session_id,
                count,
            )
            return newest[::-1]
        per_lane = [
            await self._messages(
                f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 and lane = $2"
                " order by ord desc limit $3",
                session_id,
                lane,
                count,
            )
            for lane in dict.fromkeys(lanes)
        ]
        newest = heapq.nlargest(count, (m for ms in per_lane for m in ms), key=lambda m: m.ord)
        return newest[::-1]

    # messages and pairs

    async def message(self, session_id: SessionId, number: int) -> Message | None:
        found = await self._messages(
            f"{_SELECT_MESSAGE} where session_id = $1 and number = $2", session_id, number
        )
        return found[0] if found else None

    async def latest_calls(
        self, session_id: SessionId, call_ids: Sequence[str]
    ) -> dict[str, CallRecord]:
        ids = list(dict.fromkeys(call_ids))
        if not ids:
            return {}
        # Array elements bypass the connection's text codec: escaped here, as stored.
        rows = await self._all(_LATEST_CALLS, session_id, [encode_text(i) for i in ids])
        return {row[0]: CallRecord(row[1], row[2]) for row in rows}

    async def pair_partners(
        self, session_id: SessionId, lo: int, hi: int
    ) -> tuple[int | None, int | None]:
        row = await self._one(
            "select (select min(answers) from messages"
            " where session_id = $1 and number between $2 and $3 and answers < $2),"
            " (select max(number) from messages"
            " where session_id = $1 and answers between $2 and $3 and number > $3)",
            session_id,
            lo,
            hi,
        )
        return row[0], row[1]

    # squashes

    async def squash(self, session_id: SessionId, n: int) -> Squash | None:
        row = await self._one(
            f"select {SQUASH_COLUMNS} from squashes where session_id = $1 and n = $2",
            session_id,
            n,
        )
        return squash_from_row(row) if row else None

    async def squash_members(self, session_id: SessionId, n: int) -> list[Message]:
        columns = qualified(MESSAGE_COLUMNS, "m")
        return await self._messages(
            f"select {columns} from squash_members s join messages m"
            " on m.session_id = s.session_id and m.number = s.number"
            " where s.session_id = $1 and s.n = $2 order by s.seq",
            session_id,
            n,
        )

    async def squash_members_at(
        self, session_id: SessionId, n: int, start: int, end: int
    ) -> tuple[int, list[Message]]:
        first = await self.conn.fetchval(
            "select coalesce(max(at), 0) from squash_members"
            " where session_id = $1 and n = $2 and at <= $3",
            session_id,
            n,
            start,
        )
        columns = qualified(MESSAGE_COLUMNS, "m")
        members = await self._messages(
            f"select {columns} from squash_members s join messages m"
            " on m.session_id = s.session_id and m.number = s.number"
            " where s.session_id = $1 and s.n = $2 and s.at >= $3 and s.at < $4 order by s.at",
            session_id,
            n,
            int(first),
            max(end, int(first) + 1),
        )
        return int(first), members

    async def squash_holding(self, session_id: SessionId, number: int) -> Squash | None:
        columns = qualified(SQUASH_COLUMNS, "q")
        row = await self._one(
            f"select {columns} from squash_members s join squashes q"
            " on q.session_id = s.session_id and q.n = s.n"
            " where s.session_id = $1 and s.number = $2 and q.restored_at is null",
            session_id,
            number,
        )
        return squash_from_row(row) if row else None

    async def squashes(self, session_id: SessionId) -> list[Squash]:
        rows = await self._all(
            f"select {SQUASH_COLUMNS} from squashes where session_id = $1 order by n", session_id
        )
        return [squash_from_row(row) for row in rows]

    async def restored_summaries(
        self, session_id: SessionId, lo: int, hi: int
    ) -> list[tuple[int, int]]:
        # The session's squashes by key, not its messages: a few per thousand messages.
        rows = await self._all(
            "select summary_number, n from squashes where session_id = $1"
            " and restored_at is not null and summary_number between $2 and $3"
            " order by summary_number",
            session_id,
            lo,
            hi,
        )
        return [(int(row[0]), int(row[1])) for row in rows]

    # plan, marks, thinking, changes

    async def plan(self, session_id: SessionId) -> list[PlanStep]:
        rows = await self._all(
            "select text, status from plan_steps where session_id = $1 order by idx", session_id
        )
        return [step_from_row(row) for row in rows]

    async def checkpoints(self, session_id: SessionId) -> list[Checkpoint]:
        rows = await self._all(
            "select name, revision, after_ord, created_at from checkpoints where session_id = $1"
            " order by id",
            session_id,
        )
        return [checkpoint_from_row(row) for row in rows]

    async def thinking(self, session_id: SessionId, lo: int, hi: int) -> list[Message]:
        return await self._messages(
            f"{_SELECT_MESSAGE} where session_id = $1 and kind = 'thinking'"
            " and ord between $2 and $3 order by ord, id",
            session_id,
            lo,
            hi,
        )

    async def open_layers(self, session_id: SessionId) -> list[FocusLayer]:
        rows = await self._all(
            f"select {LAYER_COLUMNS} from focus_layers where session_id = $1"
            " and closed_at is null order by n",
            session_id,
        )
        return [layer_from_row(row) for row in rows]

    async def last_layer(self, session_id: SessionId) -> int:
        value = await self.conn.fetchval(
            "select coalesce(max(n), 0) from focus_layers where session_id = $1", session_id
        )
        return int(value)

    async def run_entries(self, session_id: SessionId, run_id: str) -> list[Message]:
        return await self._messages(
            f"{_SELECT_MESSAGE} where session_id = $1 and live = 1 and run_id = $2 order by ord",
            session_id,
            run_id,
        )

    async def sources(self, session_id: SessionId) -> list[Source]:
        rows = await self._all(
            f"select {SOURCE_COLUMNS} from sources where session_id = $1 order by alias",
            session_id,
        )
        return [source_from_row(row) for row in rows]

    async def changes_since(self, session_id: SessionId, revision: int) -> list[str]:
        # A negative revision asks for the same rows as 0; a caller's expected_revision is
        # unbounded, and past a bigint there are no rows either.
        rows = await self._all(
            "select revision, change from changes where session_id = $1 and revision > $2"
            " order by revision desc limit 10",
            session_id,
            min(max(revision, 0), _BIGINT_MAX),
        )
        return [f"revision {row[0]}: {row[1]}" for row in reversed(rows)]

    async def gateway_calls(self, session_id: SessionId, limit: int) -> list[GatewayCall]:
        rows = await self._all(
            f"select {CALL_COLUMNS} from gateway_calls where session_id = $1"
            " order by id desc limit $2",
            session_id,
            limit,
        )
        return [call_from_row(row) for row in reversed(rows)]

    async def change_log(self, session_id: SessionId, limit: int) -> list[Change]:
        rows = await self._all(
            "select revision, change, created_at, live_count, live_tokens, recorded,"
            " recorded_tokens from changes where session_id = $1 order by revision desc limit $2",
            session_id,
            limit,
        )
        return [Change(*row) for row in reversed(rows)]
