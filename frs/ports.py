"""What the domain needs from storage, as Protocols; `storage` implements them.

Positions are never stored: a reader maps positions to live entries (ordered by `ord`) and back,
in time logarithmic in the thread's size. A transaction sees and changes one consistent state;
everything it does commits together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from frs.model import (
    CallRecord,
    Checkpoint,
    FileText,
    FocusLayer,
    Message,
    PlanStep,
    Session,
    SessionId,
    Source,
    Squash,
)


class ThreadReader(Protocol):
    async def find_session(self, session_id: SessionId) -> Session | None: ...
    async def find_conversation(self, interface: str, conversation: str) -> Session | None: ...
    async def current_session_id(self) -> SessionId | None: ...
    async def current_session(self) -> Session | None:
        """The current session in one read (None when none is set)."""
        ...

    async def list_sessions(self, limit: int, offset: int = 0) -> list[Session]:
        """Sessions by `updated_at` descending (then id), `limit` of them from `offset`."""
        ...

    async def count_sessions(self) -> int: ...
    async def entries_at(self, session_id: SessionId, position: int, count: int) -> list[Message]:
        """Live entries from `position` (1-based) on, at most `count`, in thread order."""
        ...

    async def entries_between(self, session_id: SessionId, lo: int, hi: int) -> list[Message]:
        """Live entries whose ord lies in lo..hi, in thread order."""
        ...

    async def entry_covering(self, session_id: SessionId, ord_: int) -> Message | None:
        """The live entry whose span holds `ord_` (the last one starting at or before it)."""
        ...

    async def last_entries(
        self, session_id: SessionId, count: int, lanes: Sequence[str] | None
    ) -> list[Message]: ...
    async def lane_entries(
        self, session_id: SessionId, lanes: Sequence[str], lo: int, hi: int
    ) -> list[Message]: ...
    async def positions_of(self, session_id: SessionId, ords: Sequence[int]) -> list[int]: ...
    async def first_in_lane(self, session_id: SessionId, lane: str) -> Message | None:
        """The oldest live entry of `lane` (a role, or 'summary'), if any."""
        ...

    async def message(self, session_id: SessionId, number: int) -> Message | None: ...
    async def latest_calls(
        self, session_id: SessionId, call_ids: Sequence[str]
    ) -> dict[str, CallRecord]:
        """For each of these ids a recorded call made: its latest call, and who answered it."""
        ...

    async def pair_partners(
        self, session_id: SessionId, lo: int, hi: int
    ) -> tuple[int | None, int | None]:
        """For the ord span lo..hi: the lowest call made before lo that is answered inside,
        and the highest answer after hi to a call made inside (None when there is none)."""
        ...

    async def squash(self, session_id: SessionId, n: int) -> Squash | None: ...
    async def squash_members(self, session_id: SessionId, n: int) -> list[Message]: ...
    async def squash_holding(self, session_id: SessionId, number: int) -> Squash | None:
        """The active squash that has message `number` among its originals."""
        ...

    async def squashes(self, session_id: SessionId) -> list[Squash]: ...
    async def plan(self, session_id: SessionId) -> list[PlanStep]: ...
    async def checkpoints(self, session_id: SessionId) -> list[Checkpoint]: ...
    async def thinking(self, session_id: SessionId, lo: int, hi: int) -> list[Message]: ...
    async def changes_since(self, session_id: SessionId, revision: int) -> list[str]:
        """The newest (at most ten) changes after `revision`, oldest of them first."""
        ...

    async def open_layers(self, session_id: SessionId) -> list[FocusLayer]:
        """Open focus layers, outermost first."""
        ...

    async def last_layer(self, session_id: SessionId) -> int:
        """The n of the newest focus layer ever opened, 0 if none."""
        ...

    async def run_entries(self, session_id: SessionId, run_id: str) -> list[Message]: ...
    async def sources(self, session_id: SessionId) -> list[Source]: ...
    async def source(self, session_id: SessionId, alias: str) -> Source | None: ...


class ThreadTx(ThreadReader, Protocol):
    async def create_session(self, session: Session) -> None: ...
    async def set_current(self, session_id: SessionId) -> None: ...
    async def save_session(self, session: Session, change: str) -> None:
        """Store the session row (counters, revision) and log `change` at its revision."""
        ...

    async def insert_messages(self, session_id: SessionId, messages: Sequence[Message]) -> None: ...
    async def apply_squash(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
    ) -> None: ...
    async def apply_restore(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
        restored_at: str,
    ) -> None: ...
    async def replace_plan(self, session_id: SessionId, steps: Sequence[PlanStep]) -> None: ...
    async def add_checkpoint(self, session_id: SessionId, checkpoint: Checkpoint) -> None: ...
    async def add_source(self, session_id: SessionId, source: Source) -> None: ...
    async def open_layer(self, session_id: SessionId, layer: FocusLayer) -> None: ...
    async def close_layer(
        self, session_id: SessionId, n: int, closed_at: str, squash_n: int | None
    ) -> None: ...
    async def remove_source(self, session_id: SessionId, alias: str) -> None: ...


class FileReader(Protocol):
    async def read(self, path: str) -> FileText:
        """Resolve `path` (symlinks too), check it against the allowed roots and the size cap,
        and read it as UTF-8 text; raise SourceRefused naming the rule that refused it."""
        ...


class Store(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[ThreadTx]:
        """One write transaction; no other writer runs until it commits or rolls back."""
        ...

    def snapshot(self) -> AbstractAsyncContextManager[ThreadReader]:
        """One consistent read of the database."""
        ...
