"""Writes of the PostgreSQL store: every method `frs.ports.ThreadTx` adds to a reader.

A transaction locks the row of each session it finds (`select … for update`), so two
instances writing one session take turns and each decides on the state the other committed;
a get-or-create by conversation first takes a transaction-level advisory lock on the
conversation, so two instances cannot both find none and both create one. Block counts
(`storage.postgres.reads`) change with the live flags, in the same transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from frs.model import (
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
from storage.postgres.reads import _CURRENT, _SESSION_BY_CONVERSATION, _SESSION_BY_ID, PgReader
from storage.reads import BLOCK_BITS
from storage.rows import (
    CALL_COLUMNS,
    LAYER_COLUMNS,
    SESSION_COLUMNS,
    SOURCE_COLUMNS,
    call_to_row,
    message_to_row,
    session_to_row,
    source_to_row,
)

_INSERT_MESSAGE = (
    "insert into messages (session_id, number, ord, ord_last, live, role, kind, lane, content,"
    " name, tool_calls, tool_call_id, answers, run_id, interface_message_id, created_at, sha256,"
    " tokens, covered, squash_n, squash_sha256, raw)"
    " values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,"
    " $19, $20, $21, $22)"
)
_UPDATE_SESSION = (
    "update sessions set title = $1, goal = $2, numbering = $3, interface = $4,"
    " conversation = $5, revision = $6, next_number = $7, next_squash = $8, live_count = $9,"
    " live_tokens = $10, live_system = $11, live_user = $12, live_assistant = $13,"
    " live_tool = $14, live_summary = $15, recorded = $16, created_at = $17, updated_at = $18,"
    " recorded_tokens = $19 where id = $20"
)


def _marks(count: int) -> str:
    return ", ".join(f"${i}" for i in range(1, count + 1))


class PgTx(PgReader):
    """Reads and writes inside one READ COMMITTED transaction that locks what it finds."""

    async def find_session(self, tenant: str, session_id: SessionId) -> Session | None:
        return await self._session(f"{_SESSION_BY_ID} for update", session_id, tenant)

    async def find_conversation(
        self, tenant: str, interface: str, conversation: str
    ) -> Session | None:
        # Held to the end of the transaction: a racing get-or-create waits, then finds ours.
        await self.conn.execute(
            "select pg_advisory_xact_lock(hashtextextended($1, 0))",
            repr(("conversation", tenant, interface, conversation)),
        )
        return await self._session(
            f"{_SESSION_BY_CONVERSATION} for update", tenant, interface, conversation
        )

    async def current_session(self, scope: Scope) -> Session | None:
        return await self._session(f"{_CURRENT} for update of s", scope.tenant, scope.client)

    async def create_session(self, session: Session) -> None:
        await self.conn.execute(
            f"insert into sessions ({SESSION_COLUMNS}) values ({_marks(21)})",
            *session_to_row(session),
        )

    async def set_current(self, scope: Scope, session_id: SessionId) -> None:
        await self.conn.execute(
            "insert into current_sessions (tenant, client, session_id) values ($1, $2, $3)"
            " on conflict (tenant, client) do update set session_id = excluded.session_id",
            scope.tenant,
            scope.client,
            session_id,
        )

    async def save_session(self, session: Session, change: str) -> None:
        row = session_to_row(session)  # every column but the id and the tenant
        await self.conn.execute(_UPDATE_SESSION, *row[1:19], row[20], row[0])
        await self.conn.execute(
            "insert into changes (session_id, revision, change, created_at, live_count,"
            " live_tokens, recorded, recorded_tokens) values ($1, $2, $3, $4, $5, $6, $7, $8)",
            session.id,
            session.revision,
            change,
            session.updated_at,
            session.live_count,
            session.live_tokens,
            session.recorded,
            session.recorded_tokens,
        )

    async def _shift_blocks(self, session_id: SessionId, ords: Iterable[tuple[int, int]]) -> None:
        """Add each (ord, delta) to the live count of the ord's block, in one statement."""
        deltas: Counter[int] = Counter()
        for ord_, delta in ords:
            deltas[ord_ >> BLOCK_BITS] += delta
        changed = sorted((block, delta) for block, delta in deltas.items() if delta)
        if changed:
            await self.conn.execute(
                "insert into blocks (session_id, block, live)"
                " select $1, b, d from unnest($2::bigint[], $3::bigint[]) as t (b, d)"
                " on conflict (session_id, block) do update set live = blocks.live + excluded.live",
                session_id,
                [block for block, _ in changed],
                [delta for _, delta in changed],
            )

    async def insert_messages(self, session_id: SessionId, messages: Sequence[Message]) -> None:
        if messages:
            await self.conn.executemany(
                _INSERT_MESSAGE, [message_to_row(session_id, m) for m in messages]
            )
        calls = [
            (session_id, call.id, m.number) for m in messages for call in m.tool_calls if m.number
        ]
        if calls:
            await self.conn.executemany(
                "insert into calls (session_id, call_id, number) values ($1, $2, $3)"
                " on conflict do nothing",
                calls,
            )
        await self._shift_blocks(session_id, ((m.ord, 1) for m in messages if m.live))

    async def remove_entry(self, session_id: SessionId, message: Message) -> None:
        # Two statements, so each deletes through its own index (by number; thinking by ord).
        await self.conn.execute(
            "delete from messages where session_id = $1 and number = $2",
            session_id,
            message.number,
        )
        await self.conn.execute(
            "delete from messages where session_id = $1 and kind = 'thinking' and ord = $2",
            session_id,
            message.ord,
        )
        await self.conn.execute(
            "delete from calls where session_id = $1 and number = $2", session_id, message.number
        )
        await self._shift_blocks(session_id, [(message.ord, -1)])

    async def _set_live(self, session_id: SessionId, numbers: Iterable[int], live: int) -> None:
        wanted = list(numbers)
        if wanted:
            await self.conn.execute(
                "update messages set live = $1 where session_id = $2"
                " and number = any($3::bigint[])",
                live,
                session_id,
                wanted,
            )

    async def apply_squash(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
        starts: Sequence[int],
    ) -> None:
        await self._set_live(session_id, (m.number for m in members if m.number), 0)
        await self.conn.execute(_INSERT_MESSAGE, *message_to_row(session_id, summary))
        await self.conn.execute(
            "insert into squashes (session_id, n, summary_number, first_ord, last_ord, count,"
            " covered, tokens_before, tokens_after, sha256, summary, created_at, chars)"
            f" values ({_marks(13)})",
            session_id,
            squash.n,
            squash.summary_number,
            squash.first,
            squash.last,
            squash.count,
            squash.covered,
            squash.tokens_before,
            squash.tokens_after,
            squash.sha256,
            squash.summary,
            squash.created_at,
            squash.chars,
        )
        if members:
            await self.conn.execute(
                "insert into squash_members (session_id, n, seq, number, at)"
                " select $1, $2, seq - 1, number, at from unnest($3::bigint[], $4::bigint[])"
                " with ordinality as t (number, at, seq)",
                session_id,
                squash.n,
                [m.number for m in members],
                list(starts),
            )
        await self._shift_blocks(session_id, [*((m.ord, -1) for m in members), (summary.ord, 1)])

    async def apply_restore(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
        restored_at: str,
    ) -> None:
        # One statement: the summary leaves the thread, its members come back.
        await self.conn.execute(
            "update messages set live = case when number = $2 then 0 else 1 end"
            " where session_id = $1 and number = any($3::bigint[])",
            session_id,
            summary.number or 0,
            [summary.number or 0, *(m.number for m in members if m.number)],
        )
        await self.conn.execute(
            "update squashes set restored_at = $1 where session_id = $2 and n = $3",
            restored_at,
            session_id,
            squash.n,
        )
        await self._shift_blocks(session_id, [(summary.ord, -1), *((m.ord, 1) for m in members)])

    async def replace_plan(self, session_id: SessionId, steps: Sequence[PlanStep]) -> None:
        await self.conn.execute("delete from plan_steps where session_id = $1", session_id)
        if steps:
            await self.conn.executemany(
                "insert into plan_steps (session_id, idx, text, status) values ($1, $2, $3, $4)",
                [(session_id, i, step.text, step.status) for i, step in enumerate(steps)],
            )

    async def add_checkpoint(self, session_id: SessionId, checkpoint: Checkpoint) -> None:
        await self.conn.execute(
            "insert into checkpoints (session_id, name, revision, after_ord, created_at)"
            " values ($1, $2, $3, $4, $5)",
            session_id,
            checkpoint.name,
            checkpoint.revision,
            checkpoint.after_ord,
            checkpoint.created_at,
        )

    async def add_gateway_call(self, session_id: SessionId, call: GatewayCall) -> None:
        await self.conn.execute(
            f"insert into gateway_calls (session_id, {CALL_COLUMNS}) values ({_marks(10)})",
            session_id,
            *call_to_row(call),
        )

    async def add_source(self, session_id: SessionId, source: Source) -> None:
        await self.conn.execute(
            f"insert into sources (session_id, {SOURCE_COLUMNS}) values ({_marks(10)})",
            session_id,
            *source_to_row(source),
        )

    async def open_layer(self, session_id: SessionId, layer: FocusLayer) -> None:
        await self.conn.execute(
            f"insert into focus_layers (session_id, {LAYER_COLUMNS}) values ({_marks(8)})",
            session_id,
            layer.n,
            layer.depth,
            layer.goal,
            layer.start_ord,
            layer.created_at,
            layer.closed_at,
            layer.squash_n,
        )

    async def close_layer(
        self, session_id: SessionId, n: int, closed_at: str, squash_n: int | None
    ) -> None:
        await self.conn.execute(
            "update focus_layers set closed_at = $1, squash_n = $2 where session_id = $3"
            " and n = $4",
            closed_at,
            squash_n,
            session_id,
            n,
        )

    async def remove_source(self, session_id: SessionId, alias: str) -> None:
        await self.conn.execute(
            "delete from sources where session_id = $1 and alias = $2", session_id, alias
        )
