"""Every reader method of `frs.ports.ThreadReader`, written once for both engines.

`StoreReader` adds sessions, squashes and the session's records (plan, checkpoints, layers,
sources, changes, gateway calls) to the entry reads of `storage.entries`; a store's reader is
it with a dialect (`storage.stores.SqliteReader`, `storage.postgres.PgReader`).
"""

from __future__ import annotations

from frs.model import (
    Change,
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
from storage.entries import EntryReads
from storage.queries import (
    CURRENT_SESSION,
    INT64_MAX,
    SESSION_BY_CONVERSATION,
    SESSION_BY_ID,
)
from storage.rows import (
    CALL_COLUMNS,
    CHANGE_COLUMNS,
    CHECKPOINT_COLUMNS,
    COMPACTION_COLUMNS,
    LAYER_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    SOURCE_COLUMNS,
    SQUASH_COLUMNS,
    call_from_row,
    change_from_row,
    checkpoint_from_row,
    compaction_from_row,
    layer_from_row,
    qualified,
    session_from_row,
    source_from_row,
    squash_from_row,
    step_from_row,
)

_MEMBERS = (
    f"select {qualified(MESSAGE_COLUMNS, 'm')} from squash_members s join messages m"
    " on m.session_id = s.session_id and m.number = s.number where s.session_id = $1 and s.n = $2"
)


class StoreReader(EntryReads):
    """Read queries over one connection inside a transaction someone else opened."""

    def _found(self, sql: str, table: str = "") -> str:
        """A finder's query as this reader runs it: as written (a transaction locks the rows,
        `storage.writes`)."""
        return sql

    async def _session(self, sql: str, *params: object) -> Session | None:
        row = await self._one(sql, *params)
        return session_from_row(row) if row else None

    # sessions

    async def find_session(self, tenant: str, session_id: SessionId) -> Session | None:
        return await self._session(self._found(SESSION_BY_ID), session_id, tenant)

    async def find_conversation(
        self, tenant: str, interface: str, conversation: str
    ) -> Session | None:
        return await self._session(
            self._found(SESSION_BY_CONVERSATION), tenant, interface, conversation
        )

    async def current_session(self, scope: Scope) -> Session | None:
        return await self._session(self._found(CURRENT_SESSION, "s"), scope.tenant, scope.client)

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
        row = await self._one("select count(*) from sessions where tenant = $1", tenant)
        return int(row[0])

    async def search_sessions(self, tenant: str, text: str, limit: int) -> list[Session]:
        return await self.dialect.search_sessions(self.conn, tenant, text, limit)

    # squashes

    async def squash(self, session_id: SessionId, n: int) -> Squash | None:
        row = await self._one(
            f"select {SQUASH_COLUMNS} from squashes where session_id = $1 and n = $2",
            session_id,
            n,
        )
        return squash_from_row(row) if row else None

    async def squash_members(self, session_id: SessionId, n: int) -> list[Message]:
        return await self._messages(f"{_MEMBERS} order by s.seq", session_id, n)

    async def squash_members_at(
        self, session_id: SessionId, n: int, start: int, end: int
    ) -> tuple[int, list[Message]]:
        row = await self._one(
            "select coalesce(max(at), 0) from squash_members"
            " where session_id = $1 and n = $2 and at <= $3",
            session_id,
            n,
            start,
        )
        first = int(row[0])
        members = await self._messages(
            f"{_MEMBERS} and s.at >= $3 and s.at < $4 order by s.at",
            session_id,
            n,
            first,
            max(end, first + 1),
        )
        return first, members

    async def squash_holding(self, session_id: SessionId, number: int) -> Squash | None:
        row = await self._one(
            f"select {qualified(SQUASH_COLUMNS, 'q')} from squash_members s join squashes q"
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

    # plan, marks, layers, sources, changes

    async def plan(self, session_id: SessionId) -> list[PlanStep]:
        rows = await self._all(
            "select text, status from plan_steps where session_id = $1 order by idx", session_id
        )
        return [step_from_row(row) for row in rows]

    async def checkpoints(self, session_id: SessionId) -> list[Checkpoint]:
        rows = await self._all(
            f"select {CHECKPOINT_COLUMNS} from checkpoints where session_id = $1 order by id",
            session_id,
        )
        return [checkpoint_from_row(row) for row in rows]

    async def open_layers(self, session_id: SessionId) -> list[FocusLayer]:
        rows = await self._all(
            f"select {LAYER_COLUMNS} from focus_layers where session_id = $1"
            " and closed_at is null order by n",
            session_id,
        )
        return [layer_from_row(row) for row in rows]

    async def last_layer(self, session_id: SessionId) -> int:
        row = await self._one(
            "select coalesce(max(n), 0) from focus_layers where session_id = $1", session_id
        )
        return int(row[0])

    async def sources(self, session_id: SessionId) -> list[Source]:
        rows = await self._all(
            f"select {SOURCE_COLUMNS} from sources where session_id = $1 order by alias",
            session_id,
        )
        return [source_from_row(row) for row in rows]

    async def changes_since(self, session_id: SessionId, revision: int) -> list[str]:
        # Revisions start at 1: a negative one asks for the same rows as 0, and past the
        # largest integer there are none (a caller's expected_revision is unbounded). The
        # newest ten: what a caller most needs to see is what happened last.
        rows = await self._all(
            "select revision, change from changes where session_id = $1 and revision > $2"
            " order by revision desc limit 10",
            session_id,
            min(max(revision, 0), INT64_MAX),
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

    async def compactions(self, session_id: SessionId) -> list[Compaction]:
        rows = await self._all(
            f"select {COMPACTION_COLUMNS} from compactions where session_id = $1 order by number",
            session_id,
        )
        return [compaction_from_row(row) for row in rows]

    async def gateway_turn(self, session_id: SessionId) -> tuple[str, str] | None:
        row = await self._one(
            "select holder, until from gateway_turns where session_id = $1", session_id
        )
        return None if row is None else (str(row[0]), str(row[1]))

    async def change_log(self, session_id: SessionId, limit: int) -> list[Change]:
        rows = await self._all(
            f"select {CHANGE_COLUMNS} from changes where session_id = $1"
            " order by revision desc limit $2",
            session_id,
            limit,
        )
        return [change_from_row(row) for row in reversed(rows)]
