"""What the domain needs from storage, as Protocols; `storage` implements them.

A store holds sessions and, per session, its messages (originals and summaries), squashes,
plan, checkpoints, focus layers, sources and change log. Terms the promises below use:
- an entry is a live message (in the thread now); entries are ordered by `ord`, and a
  summary spans `ord..ord_last`;
- a position is 1-based and contiguous over the entries, in that order. Positions are never
  stored: a store maps them to entries and back in time that does not grow with the thread;
- every session belongs to one tenant. The methods that find sessions (by id, conversation,
  scope or page) take the tenant and never answer with another tenant's session; every other
  method reads or writes one session, named by an id the caller found that way, and a
  session id from another session's rows never matches.
A transaction sees and changes one consistent state; everything it does commits together or
not at all, and no other transaction's write lands between its reads and its writes. A write
that breaks a key the store keeps (a session id, a conversation, a source alias, a revision
logged twice, a row of an unknown session) raises `StoreConflict` and rolls the transaction
back. Counts and limits are 0 or more; a method given a negative one promises nothing. Text
orders (source aliases) compare code points, as Python does. Any store must pass the contract
suite in `tests/storage/contract.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from frs.model import (
    CallRecord,
    Change,
    Checkpoint,
    Compaction,
    FileText,
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
from frs.raw import Raw


class ThreadReader(Protocol):
    # -- sessions ---------------------------------------------------------------------------

    async def find_session(self, tenant: str, session_id: SessionId) -> Session | None:
        """The tenant's session with this id, or None (also for another tenant's)."""
        ...

    async def find_conversation(
        self, tenant: str, interface: str, conversation: str
    ) -> Session | None:
        """The tenant's one session of this interface's conversation, or None."""
        ...

    async def current_session(self, scope: Scope) -> Session | None:
        """The session marked current for this scope's tenant and client
        (`ThreadTx.set_current`; `scope.connection` plays no part), or None."""
        ...

    async def list_sessions(self, tenant: str, limit: int, offset: int = 0) -> list[Session]:
        """The tenant's sessions by `updated_at` descending (then id), `limit` of them from
        `offset`."""
        ...

    async def count_sessions(self, tenant: str) -> int:
        """How many sessions the tenant has."""
        ...

    async def search_sessions(self, tenant: str, text: str, limit: int) -> list[Session]:
        """The tenant's sessions whose title, or the content of any message (live or not),
        holds `text` (case-insensitive for ASCII letters, every other character as given), in
        `list_sessions` order, at most `limit`."""
        ...

    # -- entries ----------------------------------------------------------------------------

    async def entries_at(self, session_id: SessionId, position: int, count: int) -> list[Message]:
        """Entries from `position` (1-based) on, at most `count`, in thread order."""
        ...

    async def entries_between(
        self,
        session_id: SessionId,
        lo: int,
        hi: int,
        lanes: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Message]:
        """Entries whose ord lies in lo..hi, of `lanes` only when given (a role or 'summary';
        empty means every lane), the first `limit` (1 or more) when given, in thread order."""
        ...

    async def last_entries(
        self, session_id: SessionId, count: int, lanes: Sequence[str] | None
    ) -> list[Message]:
        """The newest `count` entries (of `lanes` only when given and not empty), in thread
        order."""
        ...

    async def run_entries(self, session_id: SessionId, run_id: str) -> list[Message]:
        """Every entry recorded with this run id, in thread order."""
        ...

    async def entry_covering(self, session_id: SessionId, ord_: int) -> Message | None:
        """The entry whose span holds `ord_` (the last one starting at or before it)."""
        ...

    async def positions_of(self, session_id: SessionId, ords: Sequence[int]) -> list[int]:
        """For each ord, in the order given, 1 + the number of entries that start before it:
        the position of the entry starting there, else of the next one (live_count + 1 past
        the end; after a summary whose span holds the ord)."""
        ...

    async def message(self, session_id: SessionId, number: int) -> Message | None:
        """The message with this permanent number, live or squashed, or None."""
        ...

    async def thinking(self, session_id: SessionId, lo: int, hi: int) -> list[Message]:
        """Thinking blocks (never entries) recorded after an entry whose ord lies in lo..hi
        (0 for before the first), in the order recorded."""
        ...

    # -- tool calls -------------------------------------------------------------------------

    async def latest_calls(
        self, session_id: SessionId, call_ids: Sequence[str]
    ) -> dict[str, CallRecord]:
        """For each call id ever made in the session, the latest message that made it and
        whether a result already answers that message's call."""
        ...

    async def pair_partners(
        self, session_id: SessionId, lo: int, hi: int
    ) -> tuple[int | None, int | None]:
        """For the number span lo..hi: the lowest call made before lo that is answered inside,
        and the highest answer after hi to a call made inside (None when there is none).
        Squashed messages count: a call or answer inside a summary is still one."""
        ...

    # -- squashes ---------------------------------------------------------------------------

    async def squash(self, session_id: SessionId, n: int) -> Squash | None:
        """Squash `n` (alias SQ.n), restored or not, or None."""
        ...

    async def squash_members(self, session_id: SessionId, n: int) -> list[Message]:
        """The entries squash `n` replaced, in thread order (a member may be a summary)."""
        ...

    async def squash_members_at(
        self, session_id: SessionId, n: int, start: int, end: int
    ) -> tuple[int, list[Message]]:
        """The members of squash `n` whose parts of its rendered originals (their starts as
        `apply_squash` stored them) overlap characters start..end, in thread order: from the
        last one starting at or before `start` to the last one starting before `end`; and
        where the first of them starts."""
        ...

    async def squash_holding(self, session_id: SessionId, number: int) -> Squash | None:
        """The unrestored squash that has message `number` among its members, or None."""
        ...

    async def squashes(self, session_id: SessionId) -> list[Squash]:
        """Every squash of the session, by n."""
        ...

    async def restored_summaries(
        self, session_id: SessionId, lo: int, hi: int
    ) -> list[tuple[int, int]]:
        """(summary number, n) of each restored squash whose summary took a number in lo..hi,
        by number: the numbers an absolute view shows no entry for and says why."""
        ...

    # -- plan, marks, layers, changes, sources ------------------------------------------------

    async def plan(self, session_id: SessionId) -> list[PlanStep]:
        """The plan's steps, in order."""
        ...

    async def checkpoints(self, session_id: SessionId) -> list[Checkpoint]:
        """Every checkpoint, in the order they were added."""
        ...

    async def open_layers(self, session_id: SessionId) -> list[FocusLayer]:
        """Open focus layers, outermost first."""
        ...

    async def last_layer(self, session_id: SessionId) -> int:
        """The n of the newest focus layer ever opened, 0 if none."""
        ...

    async def changes_since(self, session_id: SessionId, revision: int) -> list[str]:
        """The newest (at most ten) changes after `revision`, oldest of them first, each as
        `revision N: what changed`."""
        ...

    async def sources(self, session_id: SessionId) -> list[Source]:
        """Every registered source, by alias."""
        ...

    async def change_log(self, session_id: SessionId, limit: int) -> list[Change]:
        """The newest `limit` lines of the change log with the counters each revision left,
        oldest of them first."""
        ...

    async def gateway_calls(self, session_id: SessionId, limit: int) -> list[GatewayCall]:
        """The newest `limit` requests the gateway forwarded for the session, oldest of them
        first."""
        ...

    async def compactions(self, session_id: SessionId) -> list[Compaction]:
        """Every compaction of the host's history recorded in the session, by number."""
        ...

    async def gateway_turn(self, session_id: SessionId) -> tuple[str, str] | None:
        """Who holds the session's gateway turn and until when (`frs.turns`): (holder,
        until), or None when no call holds it (an expired turn is returned as it is)."""
        ...


class ThreadTx(ThreadReader, Protocol):
    async def create_session(self, session: Session) -> None:
        """Store a new session of `session.tenant` (its id unused, its conversation not yet
        another of the tenant's sessions)."""
        ...

    async def set_current(self, scope: Scope, session_id: SessionId) -> None:
        """Mark this session (one of the scope's tenant's) current for the scope's client."""
        ...

    async def save_session(self, session: Session, change: str) -> None:
        """Store the session row (counters, revision; never its tenant) and log `change` at
        its revision with the counters it left. Its `lanes` hold one count per lane of
        `frs.model.LANES`; a missing lane reads back 0."""
        ...

    async def insert_messages(self, session_id: SessionId, messages: Sequence[Message]) -> None:
        """Store new messages (live ones become entries at their ords) and their call ids."""
        ...

    async def remove_entry(self, session_id: SessionId, message: Message) -> None:
        """Delete `message`, the newest entry and an original, with its call ids and the
        thinking recorded after it (at its ord), as if it had never been recorded."""
        ...

    async def apply_squash(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
        starts: Sequence[int],
    ) -> None:
        """Store the squash and its summary; its members (given in thread order, the order
        `squash_members` returns) stop being entries and are kept, each with where its part of
        the rendered originals starts (`starts`, for `squash_members_at`)."""
        ...

    async def apply_restore(
        self,
        session_id: SessionId,
        squash: Squash,
        summary: Message,
        members: Sequence[Message],
        restored_at: str,
    ) -> None:
        """Mark the squash restored: its summary stops being an entry, its members are again."""
        ...

    async def replace_plan(self, session_id: SessionId, steps: Sequence[PlanStep]) -> None:
        """The plan becomes exactly `steps`."""
        ...

    async def add_checkpoint(self, session_id: SessionId, checkpoint: Checkpoint) -> None:
        """Store a checkpoint after the ones there are."""
        ...

    async def open_layer(self, session_id: SessionId, layer: FocusLayer) -> None:
        """Store a newly opened focus layer."""
        ...

    async def close_layer(
        self, session_id: SessionId, n: int, closed_at: str, squash_n: int | None
    ) -> None:
        """Mark layer `n` closed, by squash `squash_n` (None: it was empty)."""
        ...

    async def add_source(self, session_id: SessionId, source: Source) -> None:
        """Store a source under its alias (free in this session)."""
        ...

    async def remove_source(self, session_id: SessionId, alias: str) -> None:
        """Forget the source under this alias."""
        ...

    async def add_gateway_call(self, session_id: SessionId, call: GatewayCall) -> None:
        """Store a request the gateway forwarded, after the ones there are (its tuples keep
        their order); the session row and its revision stay as they are."""
        ...

    async def add_compaction(self, session_id: SessionId, compaction: Compaction) -> None:
        """Store a compaction whose entry (`compaction.number`) this transaction recorded."""
        ...

    async def take_gateway_turn(
        self, session_id: SessionId, holder: str, now: str, until: str
    ) -> bool:
        """Give the session's gateway turn to `holder` until `until`, when nobody holds it,
        its holder's ran out before `now`, or `holder` has it already; whether it has it now.
        The session row and its revision stay as they are."""
        ...

    async def end_gateway_turn(self, session_id: SessionId, holder: str) -> None:
        """Free the session's gateway turn if `holder` holds it (another's is left alone)."""
        ...


class FileReader(Protocol):
    async def read(self, path: str) -> FileText:
        """Resolve `path` (symlinks too), check it against the allowed roots and the size cap,
        and read it as UTF-8 text; raise SourceRefused naming the rule that refused it."""
        ...


class Store(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[ThreadTx]:
        """One write transaction; no other writer runs until it commits or rolls back. An
        engine failure leaves it as a `frs.errors.StoreError`, rolled back."""
        ...

    def snapshot(self) -> AbstractAsyncContextManager[ThreadReader]:
        """One consistent read of the store: from its first read on, no commit is seen."""
        ...

    def searching(self, seconds: float) -> AbstractAsyncContextManager[ThreadReader]:
        """A snapshot for a search (`ThreadReader.search_sessions`): where a long search holds
        up no other read, its statements stopped after `seconds` (`errors.SearchTooSlow`)."""

    async def newest_entries(
        self, tenant: str, interface: str, conversation: str, count: int | None
    ) -> list[Message | Raw]:
        """The newest `count` entries (all of them when None) of the tenant's session of this
        conversation, in thread order, each as its `Raw` items when it has them (all a runtime
        needs of it), else as the Message; [] when there is no such session. One consistent
        read, without a transaction held open: a runtime's read before every model call."""
        ...
