"""Every method `frs.ports.ThreadTx` adds to a reader, written once for both engines.

Each keeps the block counts (`storage.blocks`) in step with the live flags it changes, in the
same transaction. The finders of a transaction lock what they find where the engine has more
than one writer (`Dialect.for_update`, `Dialect.lock`), so each write decides on the state the
one before it committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from frs.model import (
    Checkpoint,
    Compaction,
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
from storage.blocks import block_shifts
from storage.queries import insert_sql
from storage.reads import StoreReader
from storage.rows import (
    CALL_COLUMNS,
    CHANGE_COLUMNS,
    CHECKPOINT_COLUMNS,
    COMPACTION_COLUMNS,
    LAYER_COLUMNS,
    MESSAGE_ROW_COLUMNS,
    NEW_SQUASH_COLUMNS,
    SESSION_COLUMNS,
    SESSION_NAMES,
    SOURCE_COLUMNS,
    call_to_row,
    change_to_row,
    checkpoint_to_row,
    compaction_to_row,
    layer_to_row,
    message_to_row,
    session_to_row,
    source_to_row,
    squash_to_row,
)

_INSERT_MESSAGE = insert_sql("messages", MESSAGE_ROW_COLUMNS)
#: Where each column `save_session` writes stands in `session_to_row`: every column but the id
#: and the tenant, which never change.
_SAVED = [i for i, name in enumerate(SESSION_NAMES) if name not in ("id", "tenant")]
_UPDATE_SESSION = (
    "update sessions set "
    + ", ".join(f"{SESSION_NAMES[i]} = ${mark}" for mark, i in enumerate(_SAVED, start=1))
    + f" where id = ${len(_SAVED) + 1}"
)


class StoreTx(StoreReader):
    """Reads and writes inside one transaction: SQLite's `BEGIN IMMEDIATE`, PostgreSQL's READ
    COMMITTED that locks what it finds."""

    def _found(self, sql: str, table: str = "") -> str:
        return sql + self.dialect.for_update(table)

    async def find_conversation(
        self, tenant: str, interface: str, conversation: str
    ) -> Session | None:
        # Held to the end of the transaction: a racing get-or-create waits, then finds ours.
        await self.dialect.lock(self.conn, repr(("conversation", tenant, interface, conversation)))
        return await super().find_conversation(tenant, interface, conversation)

    async def create_session(self, session: Session) -> None:
        await self._run(insert_sql("sessions", SESSION_COLUMNS), *session_to_row(session))

    async def set_current(self, scope: Scope, session_id: SessionId) -> None:
        await self._run(
            "insert into current_sessions (tenant, client, session_id) values ($1, $2, $3)"
            " on conflict (tenant, client) do update set session_id = excluded.session_id",
            scope.tenant,
            scope.client,
            session_id,
        )

    async def save_session(self, session: Session, change: str) -> None:
        row = session_to_row(session)
        await self._run(_UPDATE_SESSION, *(row[i] for i in _SAVED), session.id)
        await self._run(
            insert_sql("changes", f"session_id, {CHANGE_COLUMNS}"),
            session.id,
            *change_to_row(session, change),
        )

    async def _shift_blocks(self, session_id: SessionId, ords: Iterable[tuple[int, int]]) -> None:
        """Add each (ord, delta) to the live count of the ord's block."""
        shifts = block_shifts(ords)
        await self.dialect.run_each(
            self.conn,
            f"insert into blocks (session_id, block, live) {self.dialect.rows_of(1, 2)}"
            " on conflict (session_id, block) do update set live = blocks.live + excluded.live",
            (session_id,),
            ([block for block, _ in shifts], [delta for _, delta in shifts]),
        )

    async def _run_many(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        if rows:
            await self.dialect.run_many(self.conn, sql, rows)

    async def insert_messages(self, session_id: SessionId, messages: Sequence[Message]) -> None:
        await self._run_many(_INSERT_MESSAGE, [message_to_row(session_id, m) for m in messages])
        await self._run_many(
            "insert into calls (session_id, call_id, number) values ($1, $2, $3)"
            " on conflict do nothing",
            [
                (session_id, call.id, m.number)
                for m in messages
                for call in m.tool_calls
                if m.number
            ],
        )
        await self._shift_blocks(session_id, ((m.ord, 1) for m in messages if m.live))

    async def remove_entry(self, session_id: SessionId, message: Message) -> None:
        # Two statements, so each deletes through its own index (by number; thinking by ord).
        await self._run(
            "delete from messages where session_id = $1 and number = $2",
            session_id,
            message.number,
        )
        await self._run(
            "delete from messages where session_id = $1 and kind = 'thinking' and ord = $2",
            session_id,
            message.ord,
        )
        await self._run(
            "delete from calls where session_id = $1 and number = $2", session_id, message.number
        )
        await self._shift_blocks(session_id, [(message.ord, -1)])

    async def apply_squash(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
        starts: Sequence[int],
    ) -> None:
        await self.dialect.run_each(
            self.conn,
            "update messages set live = 0 where session_id = $1"
            f" and number{self.dialect.each_number(2)}",
            (session_id,),
            ([m.number for m in members if m.number],),
        )
        await self._run(_INSERT_MESSAGE, *message_to_row(session_id, summary))
        await self._run(
            insert_sql("squashes", f"session_id, {NEW_SQUASH_COLUMNS}"),
            session_id,
            *squash_to_row(squash),
        )
        await self.dialect.run_each(
            self.conn,
            "insert into squash_members (session_id, n, seq, number, at)"
            f" {self.dialect.rows_of(2, 3)}",
            (session_id, squash.n),
            (list(range(len(members))), [m.number for m in members], list(starts)),
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
        # The summary leaves the thread, its members come back.
        await self.dialect.run_each(
            self.conn,
            "update messages set live = case when number = $2 then 0 else 1 end"
            f" where session_id = $1 and number{self.dialect.each_number(3)}",
            (session_id, summary.number or 0),
            ([summary.number or 0, *(m.number for m in members if m.number)],),
        )
        await self._run(
            "update squashes set restored_at = $1 where session_id = $2 and n = $3",
            restored_at,
            session_id,
            squash.n,
        )
        await self._shift_blocks(session_id, [(summary.ord, -1), *((m.ord, 1) for m in members)])

    async def replace_plan(self, session_id: SessionId, steps: Sequence[PlanStep]) -> None:
        await self._run("delete from plan_steps where session_id = $1", session_id)
        await self._run_many(
            "insert into plan_steps (session_id, idx, text, status) values ($1, $2, $3, $4)",
            [(session_id, i, step.text, step.status) for i, step in enumerate(steps)],
        )

    async def add_checkpoint(self, session_id: SessionId, checkpoint: Checkpoint) -> None:
        await self._run(
            insert_sql("checkpoints", f"session_id, {CHECKPOINT_COLUMNS}"),
            session_id,
            *checkpoint_to_row(checkpoint),
        )

    async def add_gateway_call(self, session_id: SessionId, call: GatewayCall) -> None:
        await self._run(
            insert_sql("gateway_calls", f"session_id, {CALL_COLUMNS}"),
            session_id,
            *call_to_row(call),
        )

    async def add_compaction(self, session_id: SessionId, compaction: Compaction) -> None:
        await self._run(
            insert_sql("compactions", f"session_id, {COMPACTION_COLUMNS}"),
            session_id,
            *compaction_to_row(compaction),
        )

    async def take_gateway_turn(
        self, session_id: SessionId, holder: str, now: str, until: str
    ) -> bool:
        # One statement: of two instances asking at once, the second's update finds the
        # first's turn current and changes nothing.
        await self._run(
            "insert into gateway_turns (session_id, holder, until) values ($1, $2, $3)"
            " on conflict (session_id) do update set holder = excluded.holder,"
            " until = excluded.until"
            " where gateway_turns.until < $4 or gateway_turns.holder = excluded.holder",
            session_id,
            holder,
            until,
            now,
        )
        row = await self._one("select holder from gateway_turns where session_id = $1", session_id)
        return row is not None and row[0] == holder

    async def end_gateway_turn(self, session_id: SessionId, holder: str) -> None:
        await self._run(
            "delete from gateway_turns where session_id = $1 and holder = $2", session_id, holder
        )

    async def add_source(self, session_id: SessionId, source: Source) -> None:
        await self._run(
            insert_sql("sources", f"session_id, {SOURCE_COLUMNS}"),
            session_id,
            *source_to_row(source),
        )

    async def open_layer(self, session_id: SessionId, layer: FocusLayer) -> None:
        await self._run(
            insert_sql("focus_layers", f"session_id, {LAYER_COLUMNS}"),
            session_id,
            *layer_to_row(layer),
        )

    async def close_layer(
        self, session_id: SessionId, n: int, closed_at: str, squash_n: int | None
    ) -> None:
        await self._run(
            "update focus_layers set closed_at = $1, squash_n = $2 where session_id = $3"
            " and n = $4",
            closed_at,
            squash_n,
            session_id,
            n,
        )

    async def remove_source(self, session_id: SessionId, alias: str) -> None:
        await self._run(
            "delete from sources where session_id = $1 and alias = $2", session_id, alias
        )
