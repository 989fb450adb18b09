"""The ReasoningSession service: every use case, written against the ports of `frs.ports`.

Each mutation reads what it needs, decides by the rules of `frs.ops`, and writes inside one
transaction, so no other writer slips in between the check and the change. Every mutation bumps
the session's revision by one; a stale `expected_revision` changes nothing.
"""

from __future__ import annotations

import itertools
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from frs.aliases import AliasRef, Page, parse_alias, sha_matches
from frs.errors import (
    AliasNotFound,
    AliasTaken,
    AlreadyRestored,
    CoveredByLaterSquash,
    FrsError,
    InvalidRequest,
    NothingToSquash,
    SessionNotFound,
    SourceRefused,
    SplitsToolCall,
    StaleRevision,
)
from frs.export import to_anthropic, to_openai
from frs.model import (
    LANES,
    Checkpoint,
    FileText,
    FocusLayer,
    Limits,
    Message,
    NewMessage,
    Numbering,
    PlanStep,
    Session,
    SessionId,
    Source,
    Squash,
)
from frs.ops import (
    check_field,
    check_new_messages,
    check_numbers,
    check_positions,
    check_summary,
    squash_tokens,
)
from frs.pairing import Pairing, call_ids
from frs.ports import FileReader, Store, ThreadReader, ThreadTx
from frs.render import (
    escape_inline,
    plural,
    render_originals,
)
from frs.selection import check_view_options
from frs.sources import SourceState, count_lines, source_alias
from frs.text import check_text, estimate_tokens, message_body, sha256_hex
from frs.views import Frame, ViewOptions, load_frame, render_thread

Clock = Callable[[], str]
#: `progress(done, total)`: called as long work advances; it must return at once.
Progress = Callable[[int, int], None]
_RECORD_CHUNK = 500  # messages written between two progress reports
_WARNINGS_SHOWN = 20  # a batch of reused ids would otherwise flood the model's context
EXPORT_FORMATS = ("openai", "anthropic", "text")
_FRAMES_KEPT = 64


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class SessionPage:
    """A page of sessions, most recently updated first: `sessions` are numbers offset+1.. of
    `total`."""

    sessions: tuple[Session, ...]
    current: SessionId | None
    total: int
    offset: int

    @property
    def next_offset(self) -> int | None:
        """The offset of the next page, None on the last."""
        end = self.offset + len(self.sessions)
        return end if end < self.total else None


@dataclass(frozen=True, slots=True)
class Recorded:
    session_id: SessionId
    positions: tuple[int, ...]
    numbers: tuple[int, ...]
    thinking: int
    revision: int
    warnings: tuple[str, ...] = ()  # pairing problems, recorded anyway (frs.pairing)

    def text(self) -> str:
        """The answer's line, then each warning on its own line (the first few; all are in
        `warnings`)."""
        shown = list(self.warnings[:_WARNINGS_SHOWN])
        if len(self.warnings) > _WARNINGS_SHOWN:
            more = len(self.warnings) - _WARNINGS_SHOWN
            shown.append(f"… and {plural(more, 'more warning')} like these.")
        return "\n".join([self._line(), *shown])

    def _line(self) -> str:
        if not self.positions:
            where = "no numbered messages"
        elif len(self.positions) == 1:
            where = f"1 message at position {self.positions[0]}"
        else:
            where = (
                f"{len(self.positions)} messages at positions "
                f"{self.positions[0]}–{self.positions[-1]}"
            )
        extra = (
            f" and {plural(self.thinking, 'thinking block')} (not numbered)"
            if self.thinking
            else ""
        )
        return f"Recorded {where}{extra} in session {self.session_id} · revision {self.revision}"


@dataclass(frozen=True, slots=True)
class Squashed:
    session_id: SessionId
    squash: Squash
    position: int  # where the summary now sits
    replaced: str  # "positions 3–5" or "numbers 3–5"
    live_count: int
    revision: int

    def text(self) -> str:
        saved = self.squash.tokens_before - self.squash.tokens_after
        return (
            f"Squashed {self.replaced} ({plural(self.squash.count, 'entry')}, "
            f"{plural(self.squash.covered, 'message')}) into a summary at position "
            f"{self.position}. Originals: "
            f'get_alias(alias="{self.squash.alias}"); '
            f'undo: frs_restore(alias="SQ.{self.squash.n}"). '
            f"Tokens ~{self.squash.tokens_before:,} → ~{self.squash.tokens_after:,} "
            f"(saved ~{saved:,}). The thread now has {plural(self.live_count, 'entry')} "
            f"· revision {self.revision}"
        )


@dataclass(frozen=True, slots=True)
class Restored:
    session_id: SessionId
    squash: Squash
    first: int
    last: int
    revision: int

    def text(self) -> str:
        return (
            f"Restored SQ.{self.squash.n}: {_span('position', self.first, self.last)} hold "
            f"its {plural(self.squash.count, 'entry')} again · revision {self.revision}"
        )


class ReasoningService:
    """Sessions, threads, squashes and plans over a `Store`; the one API tools and runtimes use."""

    def __init__(
        self,
        store: Store,
        limits: Limits | None = None,
        clock: Clock = utc_now,
        files: FileReader | None = None,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.clock = clock
        self.files = files
        # Plan, checkpoints and open layers by (session, revision): every change to them bumps
        # the revision, which is read in the same snapshot, so an entry can never be stale.
        self._frames: OrderedDict[tuple[str, int], Frame] = OrderedDict()

    # -- sessions --------------------------------------------------------------------------------

    async def start_session(
        self,
        title: str = "",
        goal: str = "",
        numbering: Numbering = "position",
        interface: str | None = None,
        conversation: str | None = None,
    ) -> tuple[Session, bool]:
        """Create a session and make it current; with interface+conversation, get-or-create.

        Returns the session and whether it was created.
        """
        title = self._check_line(title, "title") or "Untitled"
        goal = goal.strip()
        check_field(
            goal, "goal", self.limits, "State the goal in a sentence or two; record the details."
        )
        for name, value in (("interface", interface), ("conversation", conversation)):
            if value is not None:
                check_field(value, name, self.limits)
        if (interface is None) != (conversation is None):
            raise InvalidRequest(
                "Give interface and conversation together (e.g. interface='telegram', "
                "conversation='12345'), or neither."
            )
        async with self.store.transaction() as tx:
            if interface is not None and conversation is not None:
                found = await tx.find_conversation(interface, conversation)
                if found is not None:
                    await tx.set_current(found.id)
                    return found, False
            session = self._new_session(title, goal, numbering, interface, conversation)
            await tx.create_session(session)
            await tx.set_current(session.id)
            return session, True

    async def use_session(self, session_id: SessionId) -> Session:
        """Make an existing session current."""
        async with self.store.transaction() as tx:
            session = await self._get(tx, session_id)
            await tx.set_current(session.id)
            return session

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> SessionPage:
        """One page of the sessions, most recently updated first, with the total to page by."""
        if limit < 1 or offset < 0:
            raise InvalidRequest(
                f"limit={limit}, offset={offset}: limit is 1 or more and offset 0 or more."
            )
        async with self.store.snapshot() as reader:
            total = await reader.count_sessions()
            if offset > total:
                raise InvalidRequest(
                    f"offset={offset:,} is past the end: there are {plural(total, 'session')}. "
                    "Use an offset from 0 to the total."
                )
            found = await reader.list_sessions(limit, offset)
            current = await reader.current_session()
            return SessionPage(tuple(found), current.id if current else None, total, offset)

    async def find_session(self, session_id: SessionId | None = None) -> Session | None:
        """The given session (raises SessionNotFound), else the current one; None when there
        is no current session yet. A read: it never creates one."""
        async with self.store.snapshot() as reader:
            return await self._find(reader, session_id)

    async def session(self, session_id: SessionId | None = None) -> Session:
        """The given session, else the current one (created if the database has none)."""
        async with self.store.snapshot() as reader:
            found = await self._find(reader, session_id)
        if found is not None:
            return found
        async with self.store.transaction() as tx:
            return await self._resolve(tx, session_id)

    async def live_thread(
        self, session_id: SessionId | None = None
    ) -> tuple[Session, list[Message]]:
        """Every live entry in thread order: what an export or a runtime's prompt is built from."""
        session = await self.session(session_id)
        async with self.store.snapshot() as reader:
            session = await self._get(reader, session.id)
            live = session.live_count
            return session, await reader.entries_at(session.id, 1, live) if live else []

    async def export(
        self, fmt: str, session_id: SessionId | None = None
    ) -> list[dict[str, object]] | dict[str, object] | str:
        """The live thread as `openai` messages, an `anthropic` payload, or full `text`."""
        if fmt not in EXPORT_FORMATS:
            raise InvalidRequest(f"format is {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}.")
        if fmt == "text":
            # A window from position 1: the whole thread, never budgeted, every card whole.
            return await self.view(ViewOptions(preview_chars=10**9, start=1), session_id)
        _, entries = await self.live_thread(session_id)
        return to_openai(entries) if fmt == "openai" else to_anthropic(entries)

    async def squash_log(self, session_id: SessionId | None = None) -> tuple[Session, list[Squash]]:
        session = await self.session(session_id)
        async with self.store.snapshot() as reader:
            return session, await reader.squashes(session.id)

    # -- recording -------------------------------------------------------------------------------

    async def record(
        self,
        messages: Sequence[NewMessage],
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
        progress: Progress | None = None,
    ) -> Recorded:
        """Append messages in one transaction; each numbered one gets the next number.

        `progress(done, total)` is called after each chunk of messages is written (inside the
        transaction, so it must not block: a relay forwards it); nothing is visible to readers
        until the whole batch commits. A result pairs with the latest call of its id; one that
        cannot pair cleanly is recorded all the same, with a warning (`frs.pairing`).
        """
        check_new_messages(messages, self.limits)
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            now = self.clock()
            number = session.next_number
            pairing = Pairing(await tx.latest_calls(session.id, call_ids(messages)))
            positions: list[int] = []
            lanes = dict(session.lanes)
            tokens = session.live_tokens
            thinking = 0
            # A thinking block sits after the last entry; that entry may be a summary, whose
            # fresh number lies outside the ord space, so anchor on the entry's span instead.
            after: int | None = None
            for start in range(0, len(messages), _RECORD_CHUNK):
                stored: list[Message] = []
                for index, new in enumerate(messages[start : start + _RECORD_CHUNK], start):
                    body = message_body(new.content, new.tool_calls)
                    if new.kind == "thinking":
                        if after is None:
                            after = await self._last_ord(tx, session)
                        stored.append(self._message(new, None, after, body, None))
                        thinking += 1
                        continue
                    after = number
                    answers = pairing.add(index, new, number)
                    message = self._message(new, number, number, body, answers)
                    stored.append(message)
                    positions.append(session.live_count + len(positions) + 1)
                    lanes[message.lane] = lanes.get(message.lane, 0) + 1
                    tokens += message.tokens
                    number += 1
                await tx.insert_messages(session.id, stored)
                if progress is not None:
                    progress(min(start + _RECORD_CHUNK, len(messages)), len(messages))
            count = len(positions)
            updated = replace(
                session,
                revision=session.revision + 1,
                updated_at=now,
                next_number=number,
                live_count=session.live_count + count,
                live_tokens=tokens,
                lanes=lanes,
                recorded=session.recorded + count,
            )
            await tx.save_session(updated, f"recorded {plural(count, 'message')}")
            return Recorded(
                session.id,
                tuple(positions),
                tuple(range(session.next_number, number)),
                thinking,
                updated.revision,
                tuple(pairing.warnings),
            )

    @staticmethod
    async def _last_ord(tx: ThreadTx, session: Session) -> int:
        if session.live_count == 0:
            return 0
        last = await tx.entries_at(session.id, session.live_count, 1)
        return last[0].ord_last if last else 0

    def _message(
        self,
        new: NewMessage,
        number: int | None,
        ord_: int,
        body: str,
        answers: int | None,
    ) -> Message:
        return Message(
            number=number,
            ord=ord_,
            ord_last=ord_,
            role=new.role,
            kind=new.kind,
            content=new.content,
            sha256=sha256_hex(body),
            tokens=estimate_tokens(body),
            live=number is not None,
            created_at=new.created_at,
            name=new.name,
            tool_calls=new.tool_calls,
            tool_call_id=new.tool_call_id,
            answers=answers,
            run_id=new.run_id,
            interface_message_id=new.interface_message_id,
        )

    # -- viewing ---------------------------------------------------------------------------------

    async def view(self, options: ViewOptions, session_id: SessionId | None = None) -> str:
        """The numbered rendering of the thread (DESIGN §5); reads only the entries it shows."""
        check_view_options(options)
        if not options.show_sources:
            # The common case: resolve the session and render in one read.
            async with self.store.snapshot() as reader:
                found = await self._find(reader, session_id)
                if found is not None:
                    frame = await self._frame(reader, found)
                    return await render_thread(reader, found, options, self.limits, (), frame)
        session = await self.session(session_id)
        sources = []
        if options.show_sources:
            _, states = await self.source_states(session.id)
            sources = [state.line() for state in states]
        async with self.store.snapshot() as reader:
            session = await self._get(reader, session.id)
            frame = await self._frame(reader, session)
            return await render_thread(reader, session, options, self.limits, sources, frame)

    async def _frame(self, reader: ThreadReader, session: Session) -> Frame:
        key = (session.id, session.revision)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._frames[key] = await load_frame(reader, session)
            if len(self._frames) > _FRAMES_KEPT:
                self._frames.popitem(last=False)
        return frame

    # -- squashing -------------------------------------------------------------------------------

    async def compress_range(
        self,
        start: int,
        end: int,
        summary: str,
        numbering: Numbering | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> Squashed:
        """Replace the entries at positions (or, absolute, numbers) start..end by a summary."""
        (done,) = await self.compress_ranges(
            [(start, end, summary)], numbering, session_id, expected_revision
        )
        return done

    async def compress_ranges(
        self,
        ranges: Sequence[tuple[int, int, str]],
        numbering: Numbering | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> list[Squashed]:
        """Squash several (start, end, summary) ranges, all or none, in one revision.

        Every range names positions (or numbers) of the thread as it is before the call, so
        one view is enough to squash many stretches; ranges may not overlap. Each is checked
        as a single squash would be, then they are applied from the last to the first, so no
        squash moves the positions of one still to come. Returns them in the order given.
        """
        texts = [check_summary(summary, self.limits) for _, _, summary in ranges]
        if not ranges:
            raise InvalidRequest("ranges is empty; give at least one {from, to, summary}.")
        if len(ranges) > self.limits.max_plan_steps:
            raise InvalidRequest(
                f"{len(ranges)} ranges in one call; the limit is {self.limits.max_plan_steps}."
            )
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            mode = numbering or session.numbering
            planned = [await self._range(tx, session, start, end, mode) for start, end, _ in ranges]
            _check_apart([(p[0][0].ord, p[0][-1].ord_last) for p in planned], ranges)
            order = sorted(range(len(ranges)), key=lambda i: planned[i][1], reverse=True)
            done: dict[int, Squash] = {}
            # Applied from the last, but numbered (SQ.n, and the summaries' M.n) as given.
            base_squash, base_number = session.next_squash, session.next_number
            for i in order:
                window, first, _ = planned[i]
                session, done[i] = await self._apply_squash(
                    tx,
                    session,
                    window,
                    first,
                    texts[i],
                    _RANGE_FIX,
                    at=(base_squash + i, base_number + i),
                )
            described = "; ".join(f"{planned[i][2]} into SQ.{done[i].n}" for i in sorted(done))
            updated = await self._save_squashes(tx, session, f"squashed {described}")
            return _squashed_in_order(planned, done, updated)

    async def _range(
        self, tx: ThreadTx, session: Session, start: int, end: int, mode: Numbering
    ) -> tuple[list[Message], int, str]:
        """The entries start..end would squash, checked: their window, the position of the
        first, and how the range is named."""
        if mode == "absolute":
            check_numbers(session, start, end)
            window = await tx.entries_between(session.id, start, end)
            await self._check_absolute_edges(tx, session, window, start, end)
            first = (await tx.positions_of(session.id, [window[0].ord]))[0]
            replaced = _span("number", start, end)
        else:
            check_positions(session, start, end)
            window = await tx.entries_at(session.id, start, end - start + 1)
            first = start
            replaced = _span("position", start, end)
        await self._check_layers(tx, session, window, mode)
        await self._check_pairs(tx, session, window, first, mode, count_hint=None)
        return window, first, replaced

    async def compress_last(
        self,
        count: int,
        summary: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> Squashed:
        """Replace the last `count` entries by a summary."""
        text = check_summary(summary, self.limits)
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            live = session.live_count
            if live == 0:
                raise InvalidRequest("The thread has no entries yet: record messages first.")
            if not 1 <= count <= live:
                raise InvalidRequest(
                    f"count={count} is outside 1..{live}: the thread has {live} entries. "
                    + ("Record messages first." if live == 0 else "Pick a count in that range.")
                )
            layers = await tx.open_layers(session.id)
            if layers:
                inner = layers[-1]
                start = (await tx.positions_of(session.id, [inner.start_ord]))[0]
                room = live - start + 1
                if count > room:
                    raise InvalidRequest(
                        f"count={count} reaches out of the open focus layer {inner.goal!r}, which "
                        f"holds positions {start}–{live} ({room} entries); squash at most "
                        f"count={room}, or close the layer with frs_focus(action='close', "
                        "summary=...)."
                        if room
                        else f"count={count}: the open focus layer {inner.goal!r} has no entries "
                        "yet, and compress_last never reaches into its parent."
                    )
            first = live - count + 1
            window = await tx.entries_at(session.id, first, count)
            await self._check_pairs(tx, session, window, first, "position", count_hint=True)
            replaced = _span("position", first, live)
            return await self._squash(tx, session, window, first, text, replaced, _LAST_FIX)

    async def _squash(
        self,
        tx: ThreadTx,
        session: Session,
        window: list[Message],
        first: int,
        summary: str,
        replaced: str,
        fix: str,
        allowance: int = 0,
    ) -> Squashed:
        """Squash `window` into `summary` and save it as one revision."""
        session, squash = await self._apply_squash(
            tx, session, window, first, summary, fix, allowance
        )
        updated = await self._save_squashes(tx, session, f"squashed {replaced} into SQ.{squash.n}")
        return Squashed(session.id, squash, first, replaced, updated.live_count, updated.revision)

    async def _apply_squash(
        self,
        tx: ThreadTx,
        session: Session,
        window: list[Message],
        first: int,
        summary: str,
        fix: str,
        allowance: int = 0,
        at: tuple[int, int] | None = None,
    ) -> tuple[Session, Squash]:
        """Write one squash; the session's counters as they now are, its revision not yet
        bumped (several squashes of one call share one revision). `at`: the squash's n and
        its summary's number, when not the next ones."""
        before, after = squash_tokens(window, summary, fix, allowance)
        now = self.clock()
        originals = render_originals(window)
        n, number = at or (session.next_squash, session.next_number)
        squash = Squash(
            n=n,
            summary_number=number,
            first=window[0].ord,
            last=window[-1].ord_last,
            count=len(window),
            covered=sum(m.covered for m in window),
            tokens_before=before,
            tokens_after=after,
            sha256=sha256_hex(originals),
            created_at=now,
            summary=summary,
        )
        message = Message(
            number=squash.summary_number,
            ord=squash.first,
            ord_last=squash.last,
            role="assistant",
            kind="summary",
            content=summary,
            sha256=sha256_hex(summary),
            tokens=after,
            live=True,
            # Stamped by the span it replaced (its first dated original), not by when it was
            # made: a view with show_times keeps its order in time.
            created_at=next((m.created_at for m in window if m.created_at), None),
            covered=squash.covered,
            squash_n=squash.n,
            squash_sha256=squash.sha256,
        )
        await tx.apply_squash(session.id, squash, message, window)
        lanes = dict(session.lanes)
        for entry in window:
            lanes[entry.lane] -= 1
        lanes["summary"] = lanes.get("summary", 0) + 1
        return replace(
            session,
            updated_at=now,
            next_number=max(session.next_number, number + 1),
            next_squash=max(session.next_squash, n + 1),
            live_count=session.live_count - len(window) + 1,
            live_tokens=session.live_tokens - before + after,
            lanes=lanes,
        ), squash

    async def _save_squashes(self, tx: ThreadTx, session: Session, change: str) -> Session:
        updated = replace(session, revision=session.revision + 1)
        await tx.save_session(updated, change)
        return updated

    async def _check_absolute_edges(
        self,
        tx: ThreadTx,
        session: Session,
        window: list[Message],
        start: int,
        end: int,
    ) -> None:
        """In absolute mode a range must hold whole entries: no summary may straddle an edge."""
        cover = await tx.entry_covering(session.id, start)
        if cover is not None and cover.ord < start <= cover.ord_last:
            raise InvalidRequest(
                f"Number {start} lies inside the summary [{cover.ord}–{cover.ord_last}]; a range "
                f"must hold whole entries. Start at {cover.ord} instead, or restore "
                f"SQ.{cover.squash_n} first."
            )
        if not window:
            raise NothingToSquash(
                f"Numbers {start}–{end} hold no entry of the thread (their messages were squashed "
                "into summaries outside the range). View the thread with numbering='absolute'."
            )
        if window[-1].ord_last > end:
            tail = window[-1]
            raise InvalidRequest(
                f"Number {end} lies inside the summary [{tail.ord}–{tail.ord_last}]; a range must "
                f"hold whole entries. End at {tail.ord_last} instead."
            )

    async def _check_layers(
        self, tx: ThreadTx, session: Session, window: list[Message], mode: Numbering
    ) -> None:
        """A range may not cross the start of an open focus layer."""
        lo, hi = window[0].ord, window[-1].ord_last
        for layer in await tx.open_layers(session.id):
            if lo < layer.start_ord <= hi:
                if mode == "absolute":
                    unit, at = "number", layer.start_ord
                else:
                    unit, at = "position", (await tx.positions_of(session.id, [layer.start_ord]))[0]
                raise InvalidRequest(
                    f"The range crosses the start of the open focus layer {layer.goal!r} at "
                    f"{unit} {at}: squash entries before {unit} {at}, or from {at} on, "
                    "or close the layer with frs_focus(action='close', summary=...)."
                )

    # -- focus layers -----------------------------------------------------------------------

    async def open_focus(
        self,
        goal: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> tuple[FocusLayer, int, SessionId]:
        """Open a nested focus layer; messages recorded from now on belong to it. Returns the
        layer, the new revision and the session it was opened in."""
        goal = self._check_line(goal, "goal", required=True)
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            layers = await tx.open_layers(session.id)
            if len(layers) >= self.limits.max_focus_depth:
                raise InvalidRequest(
                    f"{len(layers)} focus layers are open; the limit is "
                    f"{self.limits.max_focus_depth}. Close the innermost one first with "
                    "frs_focus(action='close', summary=...)."
                )
            now = self.clock()
            layer = FocusLayer(
                n=await tx.last_layer(session.id) + 1,
                depth=len(layers) + 1,
                goal=goal,
                start_ord=session.next_number,
                created_at=now,
            )
            await tx.open_layer(session.id, layer)
            updated = replace(session, revision=session.revision + 1, updated_at=now)
            await tx.save_session(updated, f"opened focus layer {layer.n}: {goal}")
            return layer, updated.revision, session.id

    async def close_focus(
        self,
        summary: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> tuple[FocusLayer, Squashed | None, int, SessionId]:
        """Close the innermost layer, squashing all of it into one summary in its parent."""
        text = check_summary(summary, self.limits)
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            layers = await tx.open_layers(session.id)
            if not layers:
                raise InvalidRequest(
                    "No focus layer is open. Open one with frs_focus(action='open', goal=...)."
                )
            inner = layers[-1]
            now = self.clock()
            first = (await tx.positions_of(session.id, [inner.start_ord]))[0]
            count = session.live_count - first + 1
            if count <= 0:
                await tx.close_layer(session.id, inner.n, now, None)
                updated = replace(session, revision=session.revision + 1, updated_at=now)
                await tx.save_session(updated, f"closed empty focus layer {inner.n}")
                return replace(inner, closed_at=now), None, updated.revision, session.id
            window = await tx.entries_at(session.id, first, count)
            # No pairing check here: the layer's start is a boundary the agent chose, and a
            # result recorded inside the layer for a call made before it goes with the layer
            # (the call stays in the parent; an export answers it with a placeholder).
            done = await self._squash(
                tx,
                session,
                window,
                first,
                text,
                f"focus layer {inner.n} ({_span('position', first, session.live_count)})",
                _LAYER_FIX,
                # Closing a layer always works with a short summary, though the layer be
                # shorter still: the agent chose the boundary, and a layer must be closable.
                allowance=self.limits.layer_summary_tokens,
            )
            await tx.close_layer(session.id, inner.n, now, done.squash.n)
            closed = replace(inner, closed_at=now, squash_n=done.squash.n)
            return closed, done, done.revision, session.id

    async def _check_pairs(
        self,
        tx: ThreadTx,
        session: Session,
        window: list[Message],
        first: int,
        mode: Numbering,
        count_hint: bool | None,
    ) -> None:
        """Refuse a window that would separate a tool call from its result, naming the smallest
        range that keeps every pair together."""
        lo, hi = window[0].ord, window[-1].ord_last
        new_lo, new_hi = lo, hi
        while True:
            before, after = await tx.pair_partners(session.id, new_lo, new_hi)
            grown = False
            if before is not None and before < new_lo:
                cover = await tx.entry_covering(session.id, before)
                if cover is not None and cover.ord < new_lo:
                    new_lo, grown = cover.ord, True
            if after is not None and after > new_hi:
                cover = await tx.entry_covering(session.id, after)
                if cover is not None and cover.ord_last > new_hi:
                    new_hi, grown = cover.ord_last, True
            if not grown:
                break
        if (new_lo, new_hi) == (lo, hi):
            return
        last = first + len(window) - 1
        if mode == "absolute":
            raise SplitsToolCall(lo, hi, new_lo, new_hi)
        # Position the entry that ends at new_hi by its own ord: a summary's ord_last lies
        # past its ord, so mapping ord_last itself gives the position after the summary.
        end_entry = await tx.entry_covering(session.id, new_hi)
        end_ord = end_entry.ord if end_entry is not None else new_hi
        start_pos, end_pos = await tx.positions_of(session.id, [new_lo, end_ord])
        if count_hint and end_pos == last and new_hi == hi:
            raise SplitsToolCall(first, last, start_pos, last, count=last - start_pos + 1)
        raise SplitsToolCall(first, last, start_pos, end_pos)

    # -- restoring -------------------------------------------------------------------------------

    async def restore(
        self,
        alias: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> Restored:
        """Undo a squash: its originals take the summary's place again."""
        ref = parse_alias(alias)
        if ref.family != "SQ":
            raise InvalidRequest(
                f"{alias!r} names a message, not a squash; frs_restore takes a squash alias like "
                "SQ.2 (shown in the view as 'Summary of ... (SQ.2@...)')."
            )
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            squash = await self._get_squash(tx, session, ref.n)
            if not sha_matches(ref, squash.sha256):
                raise _sha_mismatch(alias, squash.alias)
            if squash.restored:
                raise AlreadyRestored(ref.name)
            summary = await tx.message(session.id, squash.summary_number)
            assert summary is not None  # written with the squash, never deleted
            if not summary.live:
                outer = await tx.squash_holding(session.id, summary.number or 0)
                raise CoveredByLaterSquash(ref.name, f"SQ.{outer.n}" if outer else "a later squash")
            members = await tx.squash_members(session.id, squash.n)
            first = (await tx.positions_of(session.id, [summary.ord]))[0]
            now = self.clock()
            await tx.apply_restore(session.id, squash, summary, members, now)
            lanes = dict(session.lanes)
            lanes["summary"] -= 1
            for member in members:
                lanes[member.lane] = lanes.get(member.lane, 0) + 1
            updated = replace(
                session,
                revision=session.revision + 1,
                updated_at=now,
                live_count=session.live_count - 1 + len(members),
                live_tokens=session.live_tokens - summary.tokens + sum(m.tokens for m in members),
                lanes=lanes,
            )
            await tx.save_session(updated, f"restored SQ.{squash.n}")
            return Restored(session.id, squash, first, first + len(members) - 1, updated.revision)

    # -- aliases ---------------------------------------------------------------------------------

    async def get_alias(
        self,
        alias: str,
        offset: int = 0,
        max_chars: int | None = None,
        session_id: SessionId | None = None,
    ) -> Page:
        """One page of the full text behind an alias."""
        if offset < 0 or (max_chars is not None and max_chars < 1):
            raise InvalidRequest(
                f"offset={offset}, max_chars={max_chars}: offset is 0 or more and max_chars 1 "
                "or more (or None for the default page)."
            )
        ref = parse_alias(alias)
        size_cap = max_chars or self.limits.page_chars
        if ref.is_source:
            session = await self.session(session_id)
            text, heading = await self._source_text(session, ref)
            return self._page(ref.name, heading, text, offset, size_cap, session_id, max_chars)
        async with self.store.snapshot() as reader:
            found = await self._find(reader, session_id)
            if found is None:
                raise AliasNotFound(ref.name, "there is no session yet; record messages first.")
            session = found
            if ref.family == "M":
                message = await reader.message(session.id, ref.n)
                if message is None:
                    raise AliasNotFound(ref.name, _numbers_given(session))
                if not sha_matches(ref, message.sha256):
                    raise _sha_mismatch(alias, f"{ref.name}@{message.sha8}")
                text = message_body(message.content, message.tool_calls)
                state = "" if message.live else await _absence(reader, session, message)
                role = "Summary" if message.kind == "summary" else message.role.capitalize()
                heading = f"{ref.name}@{message.sha8} · {role}{state}"
            else:
                squash = await self._get_squash(reader, session, ref.n)
                if not sha_matches(ref, squash.sha256):
                    raise _sha_mismatch(alias, squash.alias)
                members = await reader.squash_members(session.id, squash.n)
                text = render_originals(members)
                state = " · restored" if squash.restored else ""
                heading = (
                    f"{squash.alias} · the {squash.count} entries squashed into one summary "
                    f"(numbers {squash.first}–{squash.last}){state}"
                )
        return self._page(ref.name, heading, text, offset, size_cap, session_id, max_chars)

    @staticmethod
    def _page(
        name: str,
        heading: str,
        text: str,
        offset: int,
        size_cap: int,
        session_id: str | None,
        max_chars: int | None = None,
    ) -> Page:
        if offset > len(text):
            raise InvalidRequest(
                f"offset={offset:,} is past the end: {name} has {len(text):,} characters. "
                "Use an offset from 0 to the size."
            )
        end = min(len(text), offset + size_cap)
        return Page(name, heading, text[offset:end], offset, end, len(text), session_id, max_chars)

    # -- sources ------------------------------------------------------------------------------

    async def add_source(
        self,
        alias: str | None = None,
        text: str | None = None,
        path: str | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> tuple[Source, int]:
        """Register inline text or a file (read now, under an allowed root) under an alias."""
        if (text is None) == (path is None):
            raise InvalidRequest(
                "Give either text=... (inline) or path=... (a file under an allowed root), "
                "not both and not neither."
            )
        now = self.clock()
        found: FileText | None = None
        if path is not None:
            check_text(path, "path")
            found = await self._files().read(path)
            name, content = source_alias(alias, found.display), found.text
        else:
            assert text is not None
            name, content = source_alias(alias, None), text
            if len(text) > self.limits.max_message_chars:
                raise InvalidRequest(
                    f"The text has {len(text):,} characters; the limit is "
                    f"{self.limits.max_message_chars:,}. Register a file (path=...) instead."
                )
            check_text(text, "The text")
        source = Source(
            alias=name,
            kind="file" if found else "text",
            sha256=found.sha256 if found else sha256_hex(content),
            chars=len(content),
            lines=count_lines(content),
            created_at=now,
            path=found.path if found else None,
            display=found.display if found else None,
            text=None if found else content,
        )
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            taken = await _find_source(tx, session.id, name)
            if taken is not None:
                raise AliasTaken(name, f"{taken.where} (@{taken.sha8})")
            await tx.add_source(session.id, source)
            updated = replace(session, revision=session.revision + 1, updated_at=now)
            await tx.save_session(updated, f"registered source {name}")
            return source, updated.revision

    async def remove_source(
        self,
        alias: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> tuple[Source, int]:
        """Forget a source (its file is untouched); its alias becomes free."""
        ref = parse_alias(alias)
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            source = await self._get_source(tx, session, ref.name)
            await tx.remove_source(session.id, ref.name)
            updated = replace(session, revision=session.revision + 1, updated_at=self.clock())
            await tx.save_session(updated, f"removed source {ref.name}")
            return source, updated.revision

    async def source_states(
        self, session_id: SessionId | None = None, check: bool = True
    ) -> tuple[Session, list[SourceState]]:
        """Every source of the session; with `check`, files are re-read and re-hashed now."""
        session = await self.session(session_id)
        async with self.store.snapshot() as reader:
            sources = await reader.sources(session.id)
        return session, [await self._state(source, check) for source in sources]

    async def _state(self, source: Source, check: bool) -> SourceState:
        if source.kind == "text" or not check:
            return SourceState(source, source.sha256)
        try:
            found = await self._files().read(source.path or "")
        except FrsError as exc:
            return SourceState(source, None, str(exc))
        return SourceState(source, found.sha256)

    async def _source_text(self, session: Session, ref: AliasRef) -> tuple[str, str]:
        async with self.store.snapshot() as reader:
            source = await self._get_source(reader, session, ref.name)
        if source.kind == "text":
            if not sha_matches(ref, source.sha256):
                raise _sha_mismatch(f"{ref.name}@{ref.sha8}", f"{ref.name}@{source.sha8}")
            return source.text or "", f"{ref.name}@{source.sha8} · inline text"
        found = await self._files().read(source.path or "")
        if not (sha_matches(ref, source.sha256) or sha_matches(ref, found.sha256)):
            raise _sha_mismatch(f"{ref.name}@{ref.sha8}", f"{ref.name}@{found.sha256[:8]}")
        heading = f"{ref.name}@{found.sha256[:8]} · {escape_inline(source.where)}"
        if found.sha256 != source.sha256:
            heading += (
                f" · changed since registered (was @{source.sha8}, now @{found.sha256[:8]}); "
                "this is the current content"
            )
        return found.text, heading

    async def _get_source(self, reader: ThreadReader, session: Session, name: str) -> Source:
        source = await _find_source(reader, session.id, name)
        if source is None:
            known = [s.alias for s in await reader.sources(session.id)]
            listed = ", ".join(known) if known else "none yet"
            raise AliasNotFound(
                name,
                f"no such source in session {session.id} (registered: {listed}). "
                "Register one with frs_source(action='add').",
            )
        return source

    def _files(self) -> FileReader:
        if self.files is None:
            raise SourceRefused(
                "This server reads no files. Register the text inline with text=... instead."
            )
        return self.files

    # -- plan ------------------------------------------------------------------------------------

    async def update_plan(
        self,
        steps: Sequence[PlanStep] | None = None,
        checkpoint: str | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> tuple[Session, list[PlanStep]]:
        """Replace the plan and/or add a named checkpoint after the last entry; one revision."""
        if steps is None and checkpoint is None:
            raise InvalidRequest(
                "Nothing to do: pass steps=[{text, status}] to replace the plan, checkpoint='name' "
                "to mark this point of the thread, or both."
            )
        if steps is not None and len(steps) > self.limits.max_plan_steps:
            raise InvalidRequest(
                f"{len(steps)} steps; a plan holds at most {self.limits.max_plan_steps}."
            )
        for index, step in enumerate(steps or ()):
            self._check_line(step.text, f"steps[{index}].text", required=True)
        name = (
            self._check_line(checkpoint, "checkpoint", required=True)
            if checkpoint is not None
            else None
        )
        async with self.store.transaction() as tx:
            session = await self._resolve(tx, session_id)
            await self._check_revision(tx, session, expected_revision)
            now = self.clock()
            changes = []
            if steps is not None:
                await tx.replace_plan(session.id, [replace(s, text=s.text.strip()) for s in steps])
                changes.append(f"plan set to {plural(len(steps), 'step')}")
            updated = replace(session, revision=session.revision + 1, updated_at=now)
            if name is not None:
                last = (
                    await tx.entries_at(session.id, session.live_count, 1)
                    if session.live_count
                    else []
                )
                after = last[0].ord_last if last else 0
                await tx.add_checkpoint(session.id, Checkpoint(name, updated.revision, after, now))
                changes.append(f"checkpoint {name!r}")
            await tx.save_session(updated, " and ".join(changes))
            return updated, await tx.plan(session.id)

    # -- helpers ---------------------------------------------------------------------------------

    async def _find(self, reader: ThreadReader, session_id: SessionId | None) -> Session | None:
        if session_id is not None:
            return await self._get(reader, session_id)
        return await reader.current_session()

    async def _get(self, reader: ThreadReader, session_id: SessionId) -> Session:
        session = await reader.find_session(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    async def _resolve(self, tx: ThreadTx, session_id: SessionId | None) -> Session:
        """The given session, else the current one, creating a first session if none exists."""
        found = await self._find(tx, session_id)
        if found is not None:
            return found
        session = self._new_session()
        await tx.create_session(session)
        await tx.set_current(session.id)
        return session

    def _new_session(
        self,
        title: str = "Untitled",
        goal: str = "",
        numbering: Numbering = "position",
        interface: str | None = None,
        conversation: str | None = None,
    ) -> Session:
        now = self.clock()
        return Session(
            id=SessionId(uuid.uuid4().hex[:12]),
            title=title,
            goal=goal,
            numbering=numbering,
            revision=0,
            created_at=now,
            updated_at=now,
            live_count=0,
            live_tokens=0,
            lanes=dict.fromkeys(LANES, 0),
            interface=interface,
            conversation=conversation,
        )

    async def _get_squash(self, reader: ThreadReader, session: Session, n: int) -> Squash:
        squash = await reader.squash(session.id, n)
        if squash is None:
            known = session.next_squash - 1
            detail = (
                f"session {session.id} has squashes SQ.1..SQ.{known}."
                if known
                else (f"session {session.id} has no squashes yet.")
            )
            raise AliasNotFound(f"SQ.{n}", detail)
        return squash

    async def _check_revision(self, tx: ThreadTx, session: Session, expected: int | None) -> None:
        if expected is not None and expected != session.revision:
            changes = (
                await tx.changes_since(session.id, expected) if expected < session.revision else []
            )
            # One change per revision: the ones not listed are the older ones.
            unlisted = max(0, session.revision - max(expected, 0) - len(changes))
            raise StaleRevision(expected, session.revision, tuple(changes), unlisted)

    def _check_line(self, text: str | None, what: str, required: bool = False) -> str:
        value = (text or "").strip()
        if required and not value:
            raise InvalidRequest(f"{what} is empty; give a short line of text.")
        if "\n" in value or "\r" in value:
            raise InvalidRequest(f"{what} must be one line; remove the line breaks.")
        if len(value) > self.limits.max_title_chars:
            raise InvalidRequest(
                f"{what} has {len(value)} characters; the limit is {self.limits.max_title_chars}."
            )
        check_text(value, what)
        return value


_RANGE_FIX = "Write a shorter summary, or squash a longer range."
_LAST_FIX = "Write a shorter summary, or squash a larger count."
_LAYER_FIX = (
    "Write a shorter summary: closing a layer takes any summary of up to {allowance} tokens."
)


def _check_apart(spans: Sequence[tuple[int, int]], ranges: Sequence[tuple[int, int, str]]) -> None:
    """Ranges of one call may not overlap: each would squash what another squashes."""
    by_start = sorted(range(len(spans)), key=lambda i: spans[i][0])
    for earlier, later in itertools.pairwise(by_start):
        if spans[later][0] <= spans[earlier][1]:
            a, b = ranges[earlier], ranges[later]
            raise InvalidRequest(
                f"ranges[{earlier}] ({a[0]}..{a[1]}) and ranges[{later}] ({b[0]}..{b[1]}) "
                "overlap; give ranges that do not share an entry."
            )


def _squashed_in_order(
    planned: Sequence[tuple[list[Message], int, str]],
    done: dict[int, Squash],
    session: Session,
) -> list[Squashed]:
    """Each squash where its summary sits now: a range's summary moves up by what the
    ranges before it gave up."""
    out = []
    for i, (_, first, replaced) in enumerate(planned):
        shift = sum(len(window) - 1 for window, start, _ in planned if start < first)
        position = first - shift
        out.append(
            Squashed(session.id, done[i], position, replaced, session.live_count, session.revision)
        )
    return out


def _numbers_given(session: Session) -> str:
    """Which M.<number> exist, in the terms the view's footer counts: summaries take numbers
    too, so the last number can be past the count of messages recorded."""
    top = session.next_number - 1
    if not top:
        return f"session {session.id} has no messages yet."
    summaries = top - session.recorded
    what = plural(session.recorded, "recorded message")
    if summaries:
        what += f" and {plural(summaries, 'summary')}"
    return f"message numbers in session {session.id} run from M.1 to M.{top} ({what})."


def _span(unit: str, first: int, last: int) -> str:
    """`position 4`, or `positions 4–6` for a span."""
    return f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"


async def _absence(reader: ThreadReader, session: Session, message: Message) -> str:
    """Why a message is not in the thread: squashed (into which squash), or a summary whose
    squash was restored."""
    holder = await reader.squash_holding(session.id, message.number or 0)
    if holder is not None:
        return f" · not in the thread (squashed into SQ.{holder.n})"
    if message.kind == "summary":
        return f" · not in the thread (SQ.{message.squash_n} was restored)"
    return " · not in the thread"


def _sha_mismatch(given: str, actual: str) -> AliasNotFound:
    return AliasNotFound(
        given,
        f"its @sha8 does not match the stored text, which is {actual}. The text you saw may be "
        f"from another session or database; use {actual} or view the thread again.",
    )


async def _find_source(reader: ThreadReader, session_id: SessionId, alias: str) -> Source | None:
    return next((s for s in await reader.sources(session_id) if s.alias == alias), None)
