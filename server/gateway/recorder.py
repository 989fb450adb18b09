"""What the gateway does with a request it can read: match it, rewrite it, record it.

`Recorder.prepare` parses the body with the request's wire format, finds the conversation's
session, plans the squashes (`frs.wire.rewriting`) and renders them; the bytes it returns are the
host's own unless a squash applies and the rewrite passes the wire's checks. `Prepared.record`
runs after the answer has streamed back: it records what the request added. Each
conversation has a lock, so two requests of one conversation never match or record at once.
Which squashes were already sent (and their marks) and the reminders made are kept in memory,
and stored with each forwarded request (`Recorder.add_call`, a row of `gateway_calls`): a
conversation's first request after a restart reads them back from its newest row, so a
restarted gateway sends the same bytes as before and the prompt cache does not break.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import anyio

from frs.autopilot import Autopilot, Batch, plan_batch
from frs.env import Env, utc_now
from frs.errors import StaleRevision
from frs.host_threads import (
    StoredThread,
    add_call,
    ensure_session,
    find_session,
    find_thread,
    last_call,
    record_compaction,
    record_new,
    squash_kinds,
    window_from,
)
from frs.model import GatewayCall, NewMessage, Nudge, SessionId
from frs.owners import Caller, thread_key
from frs.ranges import AskedRange
from frs.recording import Recorded
from frs.squashes import compress_ranges
from frs.text import estimate_tokens
from frs.turns import TURN_SECONDS, end_turn, take_turn, turn_held
from frs.wire.compactions import SEALED
from frs.wire.matching import Unit, answer_unit, fit, new_units, title_of, units_of
from frs.wire.nudges import DEFAULT_STEP, candidates, due, nudge_text, sent_tokens
from frs.wire.requests import Insertion, Parsed, RewritePlan, WireMessage, WireRequest, reused
from frs.wire.rewriting import mark_of, pinned_messages, plan_rewrite
from server.gateway.callers import system_of
from server.gateway.wires import WireFormat, refusal_of

log = logging.getLogger("frs-mcp.gateway")

_KEPT = 1_000  # conversations whose lock, thread and sent squashes stay in memory
_PARSED = 32  # conversations whose last request body stays in memory, to read the next faster
#: Characters of those bodies kept at most: a kept body holds its text, its parsed request
#: and its units, some three times its size, so 32 bodies at the 32 MiB cap would hold GBs.
_PARSED_CHARS = 96 << 20
#: The autopilot plans when a conversation's request crosses a multiple of this many tokens
#: (as the gateway estimates a body, `GatewayCall.sent_tokens`) from its previous request's,
#: in either direction (a host's compaction shrinks it): reading a long thread and writing
#: its facts after every call would take the loop's time from other conversations. Counted
#: from the stored calls, so every instance of the gateway decides alike.
PLAN_STEP = 1_000
#: Attempts to record what is new when another instance records into the same thread at
#: once (each reads the thread again and records what is still missing).
RECORD_ATTEMPTS = 5


class RecordingRaced(RuntimeError):
    def __init__(self, attempts: int) -> None:
        super().__init__(
            f"the thread changed under each of {attempts} attempts to record a request: "
            "the next request records what is still missing"
        )


@dataclass(slots=True)
class _Conversation:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    thread: StoredThread | None = None
    sent: dict[int, str] = field(default_factory=dict)  # squash n -> its mark
    nudges: list[Nudge] = field(default_factory=list)  # made once, sent in every request
    nudged: int = 0  # the threshold level the last reminder answered
    #: The newest stored call this gateway read or wrote: a newer one was written by
    #: another instance, and what it had sent is taken over (`_take_newest`).
    newest: GatewayCall | None = None
    #: The last rewrite that passed the checks, read: the next, which repeats most of it
    #: (frozen bytes), is checked from where it differs on (`server.gateway.wires`).
    checked: tuple[str, Parsed] | None = None  # (wire name, the rewrite)
    #: The conversation has asked the API to drop stale thinking, and asks on every later
    #: request that carries thinking (`frs.wire.rewriting`).
    bound: bool = False


@dataclass(frozen=True, slots=True)
class _Read:
    """A request's body as its wire read it."""

    wire: WireFormat
    text: str
    headers: Mapping[str, str]
    request: WireRequest
    units: tuple[Unit, ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to forward: the bytes to send and what to record afterwards."""

    body: bytes
    plan: RewritePlan = field(default_factory=RewritePlan)
    key: tuple[str, str] | None = None
    units: tuple[Unit, ...] = ()
    belongs: bool = False  # its messages continue the conversation's thread
    fresh: int = 0  # units not stored yet, when it was prepared
    wire: str = ""
    #: What the conversation had sent once this request went (the frozen state): every
    #: squash sent so far with its mark, by n, and every reminder.
    sent: tuple[tuple[int, str], ...] = ()
    nudges: tuple[Nudge, ...] = ()
    bound: bool = False
    #: A value the request's `anthropic-beta` header must carry for what the rewrite asks
    #: (`WireFormat.beta`), added by the proxy; None: the headers go as the host sent them.
    beta: str | None = None
    #: The host asks its model for a summary of the conversation (its own compaction): the
    #: ask and the answer are not the conversation's, and are not recorded.
    summarise: bool = False
    #: The host has compacted: the unit holding its summary, new to the thread, recorded as
    #: the compaction's entry before what follows it (`frs.host_threads.record_compaction`).
    compaction: Unit | None = None
    #: The keys of messages that must stay where they are (they load tools): the autopilot
    #: never squashes them.
    pinned: frozenset[str] = frozenset()
    #: When the request came: its row's time, before any squash made after it
    #: (`frs.host_threads.squash_calls`).
    received: str = ""
    #: The conversation's previous call's size (`GatewayCall.sent_tokens`), None for its
    #: first: the autopilot plans when this call's crosses a `PLAN_STEP` from it.
    previous_tokens: int | None = None
    #: Who this call is when it holds the conversation's turn (`frs.turns`).
    holder: str = ""


class Recorder:
    def __init__(
        self,
        env: Env,
        nudge_step: int | None = DEFAULT_STEP,
        autopilot: Autopilot | None = None,
        bodies: int = _PARSED,
        body_chars: int = _PARSED_CHARS,
    ) -> None:
        """`nudge_step`: tokens sent between two reminders to squash; None sends none.
        `autopilot`: when the gateway squashes on its own (`frs.autopilot`); None: never.
        `bodies`: conversations whose last request body stays in memory, `body_chars` the
        characters of those bodies at most (one recorder per tenant shares `_PARSED` and
        `_PARSED_CHARS` out among them)."""
        self.env = env
        self.nudge_step = nudge_step
        self.autopilot = autopilot
        self.bodies = bodies
        self.body_chars = body_chars
        self._parsed_chars = 0
        self._conversations: OrderedDict[tuple[str, str], _Conversation] = OrderedDict()
        self._parsed: OrderedDict[tuple[str, str], Parsed] = OrderedDict()
        # Turns are held per call; the prefix tells this gateway's calls from another's.
        self._me = secrets.token_hex(6)
        self._calls = 0
        #: The conversations a call of this gateway holds the turn of, each set when freed.
        self._settling: dict[tuple[str, str], anyio.Event] = {}

    def _conversation(self, key: tuple[str, str]) -> _Conversation:
        found = self._conversations.get(key)
        if found is None:
            found = self._conversations[key] = _Conversation()
            if len(self._conversations) > _KEPT:
                self._conversations.popitem(last=False)
        self._conversations.move_to_end(key)
        return found

    async def prepare(
        self,
        wire: WireFormat,
        body: bytes,
        headers: Mapping[str, str],
        rewrite: bool = True,
        caller: Caller | None = None,
    ) -> Prepared:
        """The bytes to forward (the host's, or a rewrite that passed the checks) and what
        to record; raises on anything unexpected, and the caller then forwards `body`. With
        a `caller`, the conversation is that caller's thread of it (`frs.owners`)."""
        received = self.env.clock()
        text = body.decode("utf-8")
        named = wire.named(headers)
        # Each caller's own: another's last body would tell it, by the time a read takes, how
        # much of that body its own repeats.
        slot = named
        if named is not None and caller is not None and caller.credential is not None:
            slot = (named[0], f"{named[1]}#{caller.credential}")
        read = self._read(wire, text, headers, slot)
        key = wire.conversation_of(headers, read.units)
        if key is None:
            return Prepared(body)
        if caller is not None:
            if key != named:
                caller = replace(caller, system=system_of(text, read.request))
            title = title_of(read.units) if read.units and read.request.has_tools else None
            key = await thread_key(self.env, caller, key, key == named, title)
        await self._wait_turn(key)
        conversation = self._conversation(key)
        async with conversation.lock:
            thread = await self._thread(key, conversation)
            newest = await self._take_newest(thread, conversation)
            self._calls += 1
            request, units = read.request, read.units
            belongs = _belongs(request, units, thread, key)
            if slot is not None and belongs:  # a side call's body would be no help next time
                self._keep_body(slot, Parsed(text, request, units))
            # What the conversation had sent once this request went (the frozen state), and
            # what is recorded after it; each way out below changes only what it decided.
            base = Prepared(
                body,
                key=key,
                units=_said(request, units),
                belongs=belongs,
                fresh=len(new_units(units, thread.keys if thread else ())) if belongs else 0,
                wire=wire.name,
                sent=tuple(sorted(conversation.sent.items())),
                nudges=tuple(conversation.nudges),
                bound=conversation.bound,
                summarise=request.summarise,
                compaction=_compaction_of(request, units, thread) if belongs else None,
                pinned=_pinned_keys(request, units),
                received=received,
                previous_tokens=newest.sent_tokens if newest is not None else None,
                holder=f"{self._me}-{self._calls}",
            )
            if not (belongs and thread and rewrite):
                return base
            return await self._rewritten(base, read, thread, conversation, key)

    def _read(
        self, wire: WireFormat, text: str, headers: Mapping[str, str], slot: tuple[str, str] | None
    ) -> _Read:
        """The request as the wire reads it, and its units (fitted to the limits); what it
        repeats of the conversation's last body (kept under `slot`) is taken over unread."""
        previous = self._parsed.get(slot) if slot else None
        request = wire.parse(text, headers, previous)
        if previous is None:
            units = tuple(fit(u, self.env.limits) for u in units_of(request))
        else:
            kept = reused(request, previous.request)
            old = tuple(u for u in previous.units if isinstance(u, Unit))
            # The units taken over were fitted when they were first read.
            units = tuple(
                u if u.message < kept else fit(u, self.env.limits)
                for u in units_of(request, old, kept)
            )
        return _Read(wire, text, headers, request, units)

    def _keep_body(self, slot: tuple[str, str], parsed: Parsed) -> None:
        """Keep the conversation's last body, the newest `bodies` of at most `body_chars`."""
        replaced = self._parsed.pop(slot, None)
        if replaced is not None:
            self._parsed_chars -= len(replaced.body)
        if len(parsed.body) > self.body_chars:
            return
        self._parsed[slot] = parsed
        self._parsed_chars += len(parsed.body)
        while len(self._parsed) > self.bodies or self._parsed_chars > self.body_chars:
            _, dropped = self._parsed.popitem(last=False)
            self._parsed_chars -= len(dropped.body)

    async def _rewritten(
        self,
        base: Prepared,
        read: _Read,
        thread: StoredThread,
        conversation: _Conversation,
        key: tuple[str, str],
    ) -> Prepared:
        """`base` with the rewrite its plan makes (the squashes that apply, the reminders),
        when the wire's checks pass it; else `base`, the host's bytes."""
        wire, text, request, units = read.wire, read.text, read.request, read.units
        bound = conversation.bound and wire.bind is not None
        plan = plan_rewrite(request, units, thread.squashes, conversation.sent, bound)
        if self.nudge_step is not None and request.untouchable is None and not request.summarise:
            plan = await self._nudged(plan, request, units, thread, conversation, key)
        _log_plan(wire, plan)
        base = replace(base, nudges=tuple(conversation.nudges))
        if not plan.changes:
            return replace(base, plan=plan)
        rewritten = wire.render(text, request, plan)
        checked = conversation.checked
        last = checked[1] if checked is not None and checked[0] == wire.name else None
        refusal, parsed = refusal_of(wire, request, text, rewritten, last, read.headers)
        if parsed is not None:
            conversation.checked = (wire.name, parsed)
        if refusal:
            log.warning(
                "%s: a rewrite was not sent (%s); forwarding the original", wire.name, refusal
            )
            return base
        mark = mark_of(units)
        for n in plan.applied:
            if mark is not None:
                conversation.sent.setdefault(n, mark)
        beta = None
        if plan.drop_block and wire.bind is not None:
            rewritten = wire.bind(text, rewritten, request)
            conversation.bound, beta = True, wire.beta
        return replace(
            base,
            body=rewritten.encode("utf-8"),
            plan=plan,
            sent=tuple(sorted(conversation.sent.items())),
            bound=conversation.bound,
            beta=beta,
        )

    async def record(self, prepared: Prepared) -> int:
        """Record what the request added to its conversation; the number of units recorded.
        Another instance may record the same request's units at once (a host that retried
        elsewhere): each writes at the revision it read, and the one that finds it stale
        reads the thread again and records only what is still missing."""
        if prepared.key is None or not prepared.belongs or not prepared.units:
            return 0
        key = prepared.key
        conversation = self._conversation(key)
        async with conversation.lock:
            for _ in range(RECORD_ATTEMPTS):
                try:
                    done = await self._record_once(prepared, key, conversation)
                except StaleRevision:
                    done = None
                if done is not None:
                    return done
                conversation.thread = None
        raise RecordingRaced(RECORD_ATTEMPTS)

    async def _record_once(
        self, prepared: Prepared, key: tuple[str, str], conversation: _Conversation
    ) -> int | None:
        """One attempt of `record`; None: the thread must be read again first."""
        thread = await self._thread(key, conversation)
        known = thread.keys if thread else frozenset()
        new = new_units(prepared.units, known)
        summary = prepared.compaction
        if summary is not None and summary.key in known:
            summary = None  # recorded meanwhile, by a request before this one
        if not new and summary is None:
            return 0
        if thread is None:
            await ensure_session(self.env, *key, title_of(prepared.units))
            return None  # read as any thread: another instance may have recorded into it
        revision = thread.session.revision
        if summary is not None:
            # The host compacted: its summary is the thread's newest entry, and what
            # follows it is recorded after it (the turns it kept are stored already).
            numbers = thread.numbers
            kept = [numbers[u.key] for u in prepared.units if u.key in numbers]
            stored = [u for u in prepared.units if u.key in known]
            calls = frozenset(c.id for u in stored for c in u.new.tool_calls)
            fitted = fit(summary, self.env.limits)
            first = prepared.units[0].key
            await record_compaction(
                self.env, thread.session.id, fitted, kept, first, new, calls, revision
            )
            conversation.thread = None  # read again: its compactions changed
            log.info("the host compacted its history; recording goes on after its summary")
            return 1 + len([u for u in new if u.key != summary.key])
        done = await record_new(self.env, thread.session.id, new, revision)
        conversation.thread = _grown(thread, new, done)
        return len(new)

    async def squash_on_its_own(self, prepared: Prepared, call: GatewayCall) -> Batch | None:
        """After a model call (`call`, its stored row), by the holder of the conversation's
        turn: the autopilot's batch, written when it pays back (see `frs.autopilot`), at the
        revision it was planned on so a squash the model made meanwhile wins; None when it
        made none."""
        settings = self.autopilot
        sent_tokens = sum(unit.tokens for unit in prepared.units)
        if settings is None or prepared.key is None or not _plans(prepared, call, settings):
            return None
        conversation = self._conversation(prepared.key)
        async with conversation.lock:
            thread = await self._thread(prepared.key, conversation)
            if thread is None:
                return None
            sent = {unit.key for unit in prepared.units}
            start = min((p for k, p in thread.positions.items() if k in sent), default=None)
            found = await window_from(self.env, thread.session.id, start) if start else None
            if found is None:
                return None
            session, entries = found
            restored, automatic = await squash_kinds(self.env, session.id)
            batch = plan_batch(
                entries,
                sent,
                sent_tokens,
                settings,
                next_squash=session.next_squash,
                pinned=prepared.pinned,
                restored=restored,
                max_chars=self.env.limits.max_summary_chars,
                max_ranges=self.env.limits.max_plan_steps,
                placed={unit.key: unit.message for unit in prepared.units},
                automatic=automatic,
                made=len({u.message for u in prepared.units if u.new.role == "assistant"}),
            )
            if batch is None:
                return None
            ranges = [AskedRange(run.first, run.last, run.summary) for run in batch.runs]
            try:
                await compress_ranges(
                    self.env,
                    ranges,
                    numbering="absolute",
                    session_id=session.id,
                    expected_revision=session.revision,
                    automatic=True,
                )
            except StaleRevision:
                return None  # the model squashed meanwhile: its squash wins
            conversation.thread = None
            log.info(
                "autopilot: %d squash(es) of ~%d tokens into ~%d (pays back in %.1f calls)",
                len(batch.runs),
                batch.squashed,
                batch.summaries,
                batch.payback,
            )
            return batch

    async def add_call(self, prepared: Prepared, sent: bytes) -> GatewayCall | None:
        """Store the request as forwarded (`sent`: the host's body) with what the conversation
        had sent by then, after its recording: the row, or None when it was none of a
        conversation's."""
        if prepared.key is None or not prepared.belongs:
            return None
        # A long body's estimate takes milliseconds: not on the loop other requests share,
        # and after the answer, not before it.
        tokens = await anyio.to_thread.run_sync(estimate_tokens, sent.decode("utf-8"))
        forwarded = tokens
        if prepared.body is not sent:
            text = prepared.body.decode("utf-8")
            forwarded = await anyio.to_thread.run_sync(estimate_tokens, text)
        call = GatewayCall(
            at=prepared.received or utc_now(),
            wire=prepared.wire,
            sent_bytes=len(sent),
            sent_tokens=tokens,
            forwarded_bytes=len(prepared.body),
            forwarded_tokens=forwarded,
            applied=prepared.plan.applied,
            sent=prepared.sent,
            nudges=prepared.nudges,
            bound=prepared.bound,
        )
        if not await add_call(self.env, *prepared.key, call):
            return None
        self._conversation(prepared.key).newest = call
        return call

    async def record_answer(self, prepared: Prepared, answer: WireMessage) -> bool:
        """Record the model's answer to a request, read from the stream it sent back, as the
        next request will carry it (same key); True when it was new. The summary a host asked
        for its own compaction is not an answer of the conversation: it comes back as the
        compaction's entry, in the host's next request."""
        if prepared.key is None or not prepared.belongs or prepared.summarise:
            return False
        unit = answer_unit(answer, prepared.units)
        if unit is None:
            return False
        conversation = self._conversation(prepared.key)
        async with conversation.lock:
            for attempt in range(RECORD_ATTEMPTS):
                thread = await self._thread(prepared.key, conversation)
                if thread is None or unit.key in thread.keys:
                    return False
                fitted = [fit(unit, self.env.limits)]
                try:
                    done = await record_new(
                        self.env, thread.session.id, fitted, thread.session.revision
                    )
                except StaleRevision:  # recorded into meanwhile, perhaps this very answer
                    conversation.thread = None
                    if attempt == RECORD_ATTEMPTS - 1:
                        raise
                    continue
                conversation.thread = _grown(thread, [unit], done)
                return True
            return False

    async def _nudged(
        self,
        plan: RewritePlan,
        request: WireRequest,
        units: Sequence[Unit],
        thread: StoredThread,
        conversation: _Conversation,
        key: tuple[str, str],
    ) -> RewritePlan:
        """The plan with every reminder made so far, each on its own message, and a new one
        at the end of the newest user message when what is sent crossed the next threshold
        (the thread is then read again, for where its finished output sits in the view)."""
        step = self.nudge_step
        if step is None:
            return plan
        applied = set(plan.applied)
        squashed = {member for s in thread.squashes if s.n in applied for member in s.members}
        total = sent_tokens(units, squashed)
        level = due(total, step, conversation.nudged)
        last = units[-1] if units else None
        if level is not None and last is not None and request.messages[last.message].role == "user":
            read = await find_thread(self.env, *key)
            positions = read.positions if read is not None else {}
            text = nudge_text(total, candidates(request, units, squashed, positions))
            conversation.nudges.append(Nudge(last.key, text, level))
            conversation.nudged = level
            log.info("reminder to squash sent at ~%d tokens (level %d)", total, level)
        where = {unit.key: unit.message for unit in units}
        gone = {i for r in plan.replacements for i in range(r.first, r.last + 1)}
        added = tuple(
            Insertion(where[n.after], "last", (n.text,))
            for n in conversation.nudges
            if n.after in where and where[n.after] not in gone
        )
        return replace(plan, insertions=plan.insertions + added) if added else plan

    async def _wait_turn(self, key: tuple[str, str]) -> None:
        """Wait while another call of the conversation settles (`frs.turns`), on this gateway
        or another: what it leaves behind (the answer, what it sent, the autopilot's batch)
        decides this request's bytes. A turn whose holder died runs out; waiting longer than
        a turn lasts means the store says nothing sensible, and the request goes on."""
        deadline = time.monotonic() + TURN_SECONDS
        settling = self._settling.get(key)
        if settling is not None:  # a call of this gateway's: told at once when it is freed
            with anyio.move_on_after(TURN_SECONDS):
                await settling.wait()
        pause = 0.002
        while await turn_held(self.env, *key) and time.monotonic() < deadline:
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.05)

    async def _take_newest(
        self, thread: StoredThread | None, conversation: _Conversation
    ) -> GatewayCall | None:
        """The conversation's newest stored call; what it had sent (squashes with their
        marks, reminders, the binding) taken into `conversation` when this gateway did not
        write it: another instance served the conversation's last call, or this gateway has
        just started. Taken over, never replaced: what this gateway sent stays sent."""
        if thread is None:
            return None
        call = await last_call(self.env, thread.session.id)
        if call is None or call == conversation.newest:
            return call
        # The stored marks win: the newest row is what last went upstream, the prefix a
        # prompt cache holds; a mark only this gateway has was never sent after it.
        conversation.sent = conversation.sent | dict(call.sent)
        stored = set(call.nudges)
        conversation.nudges = [*call.nudges, *(n for n in conversation.nudges if n not in stored)]
        conversation.nudged = max([conversation.nudged, *(n.level for n in call.nudges)])
        conversation.bound = conversation.bound or call.bound
        conversation.newest = call
        return call

    async def take_turn(self, prepared: Prepared) -> SessionId | None:
        """Take the conversation's turn for this call, as its answer ends (`frs.turns`): the
        session's id when it has it, None when there is nothing to hold it for."""
        if prepared.key is None or not prepared.belongs:
            return None
        taken = await take_turn(self.env, *prepared.key, prepared.holder)
        if taken is not None:
            self._settling[prepared.key] = anyio.Event()
        return taken

    async def end_turn(self, prepared: Prepared, session_id: SessionId) -> None:
        try:
            await end_turn(self.env, session_id, prepared.holder)
        finally:
            settling = self._settling.pop(prepared.key, None) if prepared.key else None
            if settling is not None:
                settling.set()

    async def _thread(
        self, key: tuple[str, str], conversation: _Conversation
    ) -> StoredThread | None:
        """The conversation's stored thread, read again only when its revision moved."""
        session = await find_session(self.env, *key)
        if session is None:
            conversation.thread = None
            return None
        kept = conversation.thread
        if (
            kept is not None
            and kept.session.id == session.id
            and kept.session.revision == session.revision
        ):
            return kept
        conversation.thread = await find_thread(self.env, *key)
        return conversation.thread


def _plans(prepared: Prepared, call: GatewayCall, settings: Autopilot) -> bool:
    """Whether the autopilot plans after this call: one of the conversation's, past the
    threshold, whose size crossed a `PLAN_STEP` from its previous call's (either way)."""
    if not prepared.belongs or prepared.summarise or not prepared.units:
        return False
    if sum(unit.tokens for unit in prepared.units) < settings.after:
        return False
    previous = prepared.previous_tokens
    return previous is None or previous // PLAN_STEP != call.sent_tokens // PLAN_STEP


def _grown(
    thread: StoredThread | None, new: Sequence[Unit], done: Recorded | None
) -> StoredThread | None:
    """The kept thread with what this recording added, when that recording is the session's
    only change since it was read (else None: it is read again next time). Reading a long
    thread back after every call of the conversation would cost the next call its time."""
    if thread is None or done is None or done.revision != thread.session.revision + 1:
        return None
    keys = thread.keys | {unit.key for unit in new}
    # Each unit is one numbered message (its thinking is not numbered), in order.
    added = [u.key for u in new]
    numbers = {**thread.numbers, **dict(zip(added, done.numbers, strict=True))}
    positions = {**thread.positions, **dict(zip(added, done.positions, strict=True))}
    first = thread.first_key or new[0].key
    session = replace(thread.session, revision=done.revision)
    return replace(
        thread, session=session, keys=keys, first_key=first, numbers=numbers, positions=positions
    )


def _belongs(
    request: WireRequest, units: Sequence[Unit], thread: StoredThread | None, key: tuple[str, str]
) -> bool:
    """Whether the request continues the conversation's thread, not a side call of the host
    (a title, a quota check) that shares its session header: it carries tools or the
    model's earlier answers (a host that sends no tools, as Aider, still converses), and its
    first message is one a request of the thread begins with (its first, or the one the host
    begins with since its last compaction; or the thread has none the gateway keyed), or it
    carries the summary of a compaction the host just made."""
    if not units or not (request.has_tools or any(u.new.role == "assistant" for u in units)):
        return False
    firsts = thread.first_keys if thread is not None else frozenset()
    if not firsts or units[0].key in firsts:
        return True
    return request.summary is not None


def _compaction_of(
    request: WireRequest, units: Sequence[Unit], thread: StoredThread | None
) -> Unit | None:
    """The unit holding the summary of a compaction the host made and the thread has not
    recorded yet, or None. An encrypted compaction item has no words: a note stands for it,
    keyed by the item."""
    if request.summary is None:
        return None
    unit = next((u for u in units if u.message == request.summary), None)
    if unit is None:
        blocks = request.messages[request.summary].blocks
        block = next((b for b in blocks if b.kind == "compaction"), None)
        if block is None:
            return None
        unit = Unit("cx:" + block.digest, request.summary, NewMessage("user", SEALED))
    return None if thread is not None and unit.key in thread.keys else unit


def _pinned_keys(request: WireRequest, units: Sequence[Unit]) -> frozenset[str]:
    """The keys of the units in messages a squash keeps in place (`frs.wire.rewriting`)."""
    kept = pinned_messages(request)
    return frozenset(unit.key for unit in units if unit.message in kept) if kept else frozenset()


def _said(request: WireRequest, units: tuple[Unit, ...]) -> tuple[Unit, ...]:
    """The units the request adds to the conversation: all, but for a request asking the
    model to summarise, whose ask is the host's, not the conversation's."""
    if request.instruction is None:
        return units
    ask = request.instruction
    return tuple(u for u in units if not (u.message == ask and u.new.role == "user"))


def _log_plan(wire: WireFormat, plan: RewritePlan) -> None:
    if plan.applied:
        log.info("%s: sending squashes %s instead of their originals", wire.name, plan.applied)
    if plan.waiting:
        log.info("%s: squashes %s wait for the next user turn (thinking)", wire.name, plan.waiting)
    if plan.drop_block:
        log.debug("%s: asking the API to drop thinking a squash made stale", wire.name)
    for n, why in plan.skipped:
        log.debug("%s: squash %d not applied: %s", wire.name, n, why)
