"""What the gateway does with a request it can read: match it, rewrite it, record it.

`Recorder.prepare` parses the body with the request's wire format, finds the conversation's
session, plans the squashes (`frs.rewriting`) and renders them; the bytes it returns are the
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
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import anyio

from frs.env import Env, utc_now
from frs.host_threads import (
    StoredThread,
    add_call,
    ensure_session,
    find_session,
    find_thread,
    last_call,
    record_new,
)
from frs.matching import Unit, answer_unit, fit, new_units, title_of, units_of
from frs.model import GatewayCall, Nudge, SessionId
from frs.nudges import DEFAULT_STEP, candidates, due, nudge_text, sent_tokens
from frs.rewriting import mark_of, plan_rewrite
from frs.text import estimate_tokens
from frs.wire import Insertion, Parsed, RewritePlan, WireMessage, WireRequest, reused
from server.gateway.wires import WireFormat, refusal_of

log = logging.getLogger("frs-mcp.gateway")

_KEPT = 1_000  # conversations whose lock, thread and sent squashes stay in memory
_PARSED = 32  # conversations whose last request body stays in memory, to read the next faster


@dataclass(slots=True)
class _Conversation:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    thread: StoredThread | None = None
    sent: dict[int, str] = field(default_factory=dict)  # squash n -> its mark
    nudges: list[Nudge] = field(default_factory=list)  # made once, sent in every request
    nudged: int = 0  # the threshold level the last reminder answered
    loaded: bool = False  # what the newest stored call had sent was read back
    #: The last rewrite that passed the checks, read: the next, which repeats most of it
    #: (frozen bytes), is checked from where it differs on (`server.gateway.wires`).
    checked: tuple[str, Parsed] | None = None  # (wire name, the rewrite)
    #: The conversation has asked the API to drop stale thinking, and asks on every later
    #: request that carries thinking (`frs.rewriting`).
    bound: bool = False


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to forward: the bytes to send and what to record afterwards."""

    body: bytes
    plan: RewritePlan = field(default_factory=RewritePlan)
    key: tuple[str, str] | None = None
    units: tuple[Unit, ...] = ()
    belongs: bool = False  # its messages continue the conversation's thread
    saved_tokens: int = 0  # estimated: what the rewrite left out less the summaries it added
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


class Recorder:
    def __init__(self, env: Env, nudge_step: int | None = DEFAULT_STEP) -> None:
        """`nudge_step`: tokens sent between two reminders to squash; None sends none."""
        self.env = env
        self.nudge_step = nudge_step
        self._conversations: OrderedDict[tuple[str, str], _Conversation] = OrderedDict()
        self._parsed: OrderedDict[tuple[str, str], Parsed] = OrderedDict()

    def _conversation(self, key: tuple[str, str]) -> _Conversation:
        found = self._conversations.get(key)
        if found is None:
            found = self._conversations[key] = _Conversation()
            if len(self._conversations) > _KEPT:
                self._conversations.popitem(last=False)
        self._conversations.move_to_end(key)
        return found

    async def prepare(
        self, wire: WireFormat, body: bytes, headers: Mapping[str, str], rewrite: bool = True
    ) -> Prepared:
        """The bytes to forward (the host's, or a rewrite that passed the checks) and what
        to record; raises on anything unexpected, and the caller then forwards `body`."""
        text = body.decode("utf-8")
        named = wire.named(headers)
        previous = self._parsed.get(named) if named else None
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
        key = wire.conversation_of(headers, units)
        if key is None:
            return Prepared(body)
        conversation = self._conversation(key)
        async with conversation.lock:
            thread = await self._thread(key, conversation)
            if not conversation.loaded:
                await _load_sent(self.env, thread, conversation)
            belongs = _belongs(request, units, thread, key)
            if named is not None and belongs:  # a side call's body would be no help next time
                self._parsed[named] = Parsed(text, request, units)
                self._parsed.move_to_end(named)
                if len(self._parsed) > _PARSED:
                    self._parsed.popitem(last=False)
            fresh = len(new_units(units, thread.keys if thread else ())) if belongs else 0
            frozen = _Kept(
                wire.name,
                tuple(sorted(conversation.sent.items())),
                tuple(conversation.nudges),
                conversation.bound,
            )
            if not (belongs and thread and rewrite):
                return frozen.prepared(body, RewritePlan(), key, units, belongs, 0, fresh)
            bound = conversation.bound and wire.bind is not None
            plan = plan_rewrite(request, units, thread.squashes, conversation.sent, bound)
            if self.nudge_step is not None and request.untouchable is None:
                plan = await self._nudged(plan, request, units, thread, conversation, key)
            _log_plan(wire, plan)
            frozen = replace(frozen, nudges=tuple(conversation.nudges))
            if not plan.changes:
                return frozen.prepared(body, plan, key, units, belongs, 0, fresh)
            rewritten = wire.render(text, request, plan)
            checked = conversation.checked
            last = checked[1] if checked is not None and checked[0] == wire.name else None
            refusal, read = refusal_of(wire, request, text, rewritten, last, headers)
            if read is not None:
                conversation.checked = (wire.name, read)
            if refusal:
                log.warning(
                    "%s: a rewrite was not sent (%s); forwarding the original", wire.name, refusal
                )
                return frozen.prepared(body, RewritePlan(), key, units, belongs, 0, fresh)
            mark = mark_of(units)
            for n in plan.applied:
                if mark is not None:
                    conversation.sent.setdefault(n, mark)
            beta = None
            if plan.drop_block and wire.bind is not None:
                rewritten = wire.bind(text, rewritten, request)
                conversation.bound, beta = True, wire.beta
            frozen = replace(
                frozen, sent=tuple(sorted(conversation.sent.items())), bound=conversation.bound
            )
            saved = _saved_tokens(text, request, plan)
            forwarded = rewritten.encode("utf-8")
            prepared = frozen.prepared(forwarded, plan, key, units, belongs, saved, fresh)
            return replace(prepared, beta=beta)

    async def record(self, prepared: Prepared) -> int:
        """Record what the request added to its conversation; the number of units recorded."""
        if prepared.key is None or not prepared.belongs or not prepared.units:
            return 0
        conversation = self._conversation(prepared.key)
        async with conversation.lock:
            thread = await self._thread(prepared.key, conversation)
            known = thread.keys if thread else frozenset()
            new = new_units(prepared.units, known)
            if not new:
                return 0
            if thread is None:
                interface, name = prepared.key
                session = await ensure_session(self.env, interface, name, title_of(prepared.units))
                session_id: SessionId = session.id
            else:
                session_id = thread.session.id
            done = await record_new(self.env, session_id, new)
            conversation.thread = _grown(thread, new, done.revision if done else None)
            return len(new)

    async def add_call(self, prepared: Prepared, sent: bytes) -> bool:
        """Store the request as forwarded (`sent`: the host's body) with what the conversation
        had sent by then, after its recording; False when it was none of a conversation's."""
        if prepared.key is None or not prepared.belongs:
            return False
        # A long body's estimate takes milliseconds: not on the loop other requests share.
        tokens = await anyio.to_thread.run_sync(estimate_tokens, sent.decode("utf-8"))
        call = GatewayCall(
            at=utc_now(),
            wire=prepared.wire,
            sent_bytes=len(sent),
            sent_tokens=tokens,
            forwarded_bytes=len(prepared.body),
            forwarded_tokens=max(tokens - prepared.saved_tokens, 0),
            applied=prepared.plan.applied,
            sent=prepared.sent,
            nudges=prepared.nudges,
            bound=prepared.bound,
        )
        return await add_call(self.env, *prepared.key, call)

    async def record_answer(self, prepared: Prepared, answer: WireMessage) -> bool:
        """Record the model's answer to a request, read from the stream it sent back, as the
        next request will carry it (same key); True when it was new."""
        if prepared.key is None or not prepared.belongs:
            return False
        unit = answer_unit(answer, prepared.units)
        if unit is None:
            return False
        conversation = self._conversation(prepared.key)
        async with conversation.lock:
            thread = await self._thread(prepared.key, conversation)
            if thread is None or unit.key in thread.keys:
                return False
            done = await record_new(self.env, thread.session.id, [fit(unit, self.env.limits)])
            conversation.thread = _grown(thread, [unit], done.revision if done else None)
            return True

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


@dataclass(frozen=True, slots=True)
class _Kept:
    """The frozen state a `Prepared` carries, for its row of `gateway_calls`."""

    wire: str
    sent: tuple[tuple[int, str], ...] = ()
    nudges: tuple[Nudge, ...] = ()
    bound: bool = False

    def prepared(
        self,
        body: bytes,
        plan: RewritePlan,
        key: tuple[str, str],
        units: tuple[Unit, ...],
        belongs: bool,
        saved: int,
        fresh: int,
    ) -> Prepared:
        return Prepared(
            body,
            plan,
            key,
            units,
            belongs,
            saved,
            fresh,
            self.wire,
            self.sent,
            self.nudges,
            self.bound,
        )


async def _load_sent(env: Env, thread: StoredThread | None, conversation: _Conversation) -> None:
    """What the conversation's newest stored call had sent, into `conversation` (once, on
    its first request since the gateway started): the squashes with their marks, the
    reminders, so the next request renders them as the gateway before a restart did."""
    if thread is not None:
        call = await last_call(env, thread.session.id)
        if call is not None:
            conversation.sent = dict(call.sent) | conversation.sent
            conversation.nudges = list(call.nudges) + conversation.nudges
            conversation.nudged = max([conversation.nudged, *(n.level for n in call.nudges)])
            conversation.bound = conversation.bound or call.bound
    conversation.loaded = True


def _grown(
    thread: StoredThread | None, new: Sequence[Unit], revision: int | None
) -> StoredThread | None:
    """The kept thread with what this recording added, when that recording is the session's
    only change since it was read (else None: it is read again next time). Reading a long
    thread back after every call of the conversation would cost the next call its time."""
    if thread is None or revision != thread.session.revision + 1:
        return None
    keys = thread.keys | {unit.key for unit in new}
    first = thread.first_key or new[0].key
    return replace(
        thread, session=replace(thread.session, revision=revision), keys=keys, first_key=first
    )


def _belongs(
    request: WireRequest, units: Sequence[Unit], thread: StoredThread | None, key: tuple[str, str]
) -> bool:
    """Whether the request continues the conversation's thread, not a side call of the host
    (a title, a quota check) that shares its session header: it carries tools or the
    model's earlier answers (a host that sends no tools, as Aider, still converses), and its
    first message is the thread's first (or the thread has none the gateway keyed)."""
    if not units or not (request.has_tools or any(u.new.role == "assistant" for u in units)):
        return False
    if thread is None or thread.first_key is None:
        return True
    return units[0].key == thread.first_key


def _saved_tokens(text: str, request: WireRequest, plan: RewritePlan) -> int:
    """Estimated tokens a plan leaves out of the request, less the summaries it adds: only
    the changed spans are measured, never the whole body."""
    messages = request.messages
    gone = [
        text[messages[r.first].span.start : messages[r.last].span.end] for r in plan.replacements
    ]
    gone += [
        text[b.span.start : b.span.end] for i, j in plan.dropped for b in [messages[i].blocks[j]]
    ]
    added = [t for r in plan.replacements for t in r.texts]
    added += [t for ins in plan.insertions for t in ins.texts]
    return sum(map(estimate_tokens, gone)) - sum(map(estimate_tokens, added))


def _log_plan(wire: WireFormat, plan: RewritePlan) -> None:
    if plan.applied:
        log.info("%s: sending squashes %s instead of their originals", wire.name, plan.applied)
    if plan.waiting:
        log.info("%s: squashes %s wait for the next user turn (thinking)", wire.name, plan.waiting)
    if plan.drop_block:
        log.debug("%s: asking the API to drop thinking a squash made stale", wire.name)
    for n, why in plan.skipped:
        log.debug("%s: squash %d not applied: %s", wire.name, n, why)
