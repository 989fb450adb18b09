"""Writes of the SQLite store: every method `frs.ports.ThreadTx` adds to a reader.

Each keeps the block counts (`storage.reads`) in step with the live flags it changes, in the
same transaction.
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
from storage.reads import BLOCK_BITS, SqliteReader
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
    " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_SESSION = (
    "update sessions set title = ?, goal = ?, numbering = ?, interface = ?, conversation = ?,"
    " revision = ?, next_number = ?, next_squash = ?, live_count = ?, live_tokens = ?,"
    " live_system = ?, live_user = ?, live_assistant = ?, live_tool = ?, live_summary = ?,"
    " recorded = ?, created_at = ?, updated_at = ?, recorded_tokens = ? where id = ?"
)


class SqliteTx(SqliteReader):
    """Reads and writes inside one `BEGIN IMMEDIATE` transaction."""

    async def create_session(self, session: Session) -> None:
        await self.conn.execute(
            f"insert into sessions ({SESSION_COLUMNS}) values ({', '.join('?' * 21)})",
            session_to_row(session),
        )

    async def set_current(self, scope: Scope, session_id: SessionId) -> None:
        await self.conn.execute(
            "insert into current_sessions (tenant, client, session_id) values (?, ?, ?)"
            " on conflict (tenant, client) do update set session_id = excluded.session_id",
            (scope.tenant, scope.client, session_id),
        )

    async def save_session(self, session: Session, change: str) -> None:
        # Every column but the id and the tenant, which never change.
        row = session_to_row(session)
        await self.conn.execute(_UPDATE_SESSION, (*row[1:19], row[20], row[0]))
        await self.conn.execute(
            "insert into changes (session_id, revision, change, created_at, live_count,"
            " live_tokens, recorded, recorded_tokens) values (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.id,
                session.revision,
                change,
                session.updated_at,
                session.live_count,
                session.live_tokens,
                session.recorded,
                session.recorded_tokens,
            ),
        )

    async def _shift_blocks(self, session_id: SessionId, ords: Iterable[tuple[int, int]]) -> None:
        """Add each (ord, delta) to the live count of the ord's block."""
        deltas: Counter[int] = Counter()
        for ord_, delta in ords:
            deltas[ord_ >> BLOCK_BITS] += delta
        await self.conn.executemany(
            "insert into blocks (session_id, block, live) values (?, ?, ?)"
            " on conflict (session_id, block) do update set live = live + excluded.live",
            [(session_id, block, delta) for block, delta in deltas.items() if delta],
        )

    async def insert_messages(self, session_id: SessionId, messages: Sequence[Message]) -> None:
        await self.conn.executemany(
            _INSERT_MESSAGE, [message_to_row(session_id, m) for m in messages]
        )
        calls = [
            (session_id, call.id, m.number) for m in messages for call in m.tool_calls if m.number
        ]
        if calls:
            await self.conn.executemany(
                "insert or ignore into calls (session_id, call_id, number) values (?, ?, ?)", calls
            )
        await self._shift_blocks(session_id, ((m.ord, 1) for m in messages if m.live))

    async def remove_entry(self, session_id: SessionId, message: Message) -> None:
        # Two statements, so each deletes through its own index (by number; thinking by ord).
        await self.conn.execute(
            "delete from messages where session_id = ? and number = ?",
            (session_id, message.number),
        )
        await self.conn.execute(
            "delete from messages where session_id = ? and kind = 'thinking' and ord = ?",
            (session_id, message.ord),
        )
        await self.conn.execute(
            "delete from calls where session_id = ? and number = ?", (session_id, message.number)
        )
        await self._shift_blocks(session_id, [(message.ord, -1)])

    async def _set_live(self, session_id: SessionId, numbers: Iterable[int], live: int) -> None:
        await self.conn.executemany(
            "update messages set live = ? where session_id = ? and number = ?",
            [(live, session_id, number) for number in numbers],
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
        await self.conn.execute(_INSERT_MESSAGE, message_to_row(session_id, summary))
        await self.conn.execute(
            "insert into squashes (session_id, n, summary_number, first_ord, last_ord, count,"
            " covered, tokens_before, tokens_after, sha256, summary, created_at, chars)"
            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
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
            ),
        )
        await self.conn.executemany(
            "insert into squash_members (session_id, n, seq, number, at) values (?, ?, ?, ?, ?)",
            [
                (session_id, squash.n, seq, m.number, at)
                for seq, (m, at) in enumerate(zip(members, starts, strict=True))
            ],
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
        await self._set_live(session_id, [summary.number or 0], 0)
        await self._set_live(session_id, (m.number for m in members if m.number), 1)
        await self.conn.execute(
            "update squashes set restored_at = ? where session_id = ? and n = ?",
            (restored_at, session_id, squash.n),
        )
        await self._shift_blocks(session_id, [(summary.ord, -1), *((m.ord, 1) for m in members)])

    async def replace_plan(self, session_id: SessionId, steps: Sequence[PlanStep]) -> None:
        await self.conn.execute("delete from plan_steps where session_id = ?", (session_id,))
        await self.conn.executemany(
            "insert into plan_steps (session_id, idx, text, status) values (?, ?, ?, ?)",
            [(session_id, i, step.text, step.status) for i, step in enumerate(steps)],
        )

    async def add_checkpoint(self, session_id: SessionId, checkpoint: Checkpoint) -> None:
        await self.conn.execute(
            "insert into checkpoints (session_id, name, revision, after_ord, created_at)"
            " values (?, ?, ?, ?, ?)",
            (
                session_id,
                checkpoint.name,
                checkpoint.revision,
                checkpoint.after_ord,
                checkpoint.created_at,
            ),
        )

    async def add_gateway_call(self, session_id: SessionId, call: GatewayCall) -> None:
        await self.conn.execute(
            f"insert into gateway_calls (session_id, {CALL_COLUMNS})"
            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, *call_to_row(call)),
        )

    async def add_source(self, session_id: SessionId, source: Source) -> None:
        await self.conn.execute(
            f"insert into sources (session_id, {SOURCE_COLUMNS})"
            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, *source_to_row(source)),
        )

    async def open_layer(self, session_id: SessionId, layer: FocusLayer) -> None:
        await self.conn.execute(
            f"insert into focus_layers (session_id, {LAYER_COLUMNS})"
            " values (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                layer.n,
                layer.depth,
                layer.goal,
                layer.start_ord,
                layer.created_at,
                layer.closed_at,
                layer.squash_n,
            ),
        )

    async def close_layer(
        self, session_id: SessionId, n: int, closed_at: str, squash_n: int | None
    ) -> None:
        await self.conn.execute(
            "update focus_layers set closed_at = ?, squash_n = ? where session_id = ? and n = ?",
            (closed_at, squash_n, session_id, n),
        )

    async def remove_source(self, session_id: SessionId, alias: str) -> None:
        await self.conn.execute(
            "delete from sources where session_id = ? and alias = ?", (session_id, alias)
        )
