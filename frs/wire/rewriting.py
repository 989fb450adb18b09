"""Which squashes a request carries instead of their originals, decided from the request alone.

A live squash applies when every message it replaced is in the request (found by key, never
by position), those messages are whole request messages (a squash never cuts one) and none of
them is in the open tool loop (the assistant's calls and the results that answer them, last in
the request). Its summary then takes their place: one message of the same role when the span
starts and ends with one role; else the span goes and the summary is added to the user message
that borders it (the one before an assistant-first span, the one after an assistant-last
span), so roles still alternate and tool results still come first after their calls. Adjacent
spans go as one. The plan depends only on the stored squashes and the messages' keys, so every
later request renders the same bytes in the same place (a prompt cache breaks once).

Pinned exchanges: a message holding a pinned block (`frs.wire.requests.WireBlock.pinned`: a
result that loads deferred tools, a container upload), with the call or result it pairs with,
stays in place, byte for byte, even inside a squashed span: the host's deferred tools (the frs
tools among them) are callable only while the exchange that loaded them is in the request. The
rest of the span goes in pieces around it, each placed as above; the first piece carries the
summary (which says that the exchanges that load tools stay), a later piece that must leave a
message leaves one pointing at it, and a span that is all pinned still sends its summary after
it. A squash never vanishes because of a pin.

Thinking: a signed thinking block binds to everything before it (its prefix), so a squash
makes every thinking block sent after the first message it changes invalid, and the API
refuses a request that still sends one, unless the request asks it to drop them. The provider
documents two ways for a summary written outside the API while the newest turns are kept
(https://platform.claude.com/docs/en/build-with-claude/preserved-thinking, "Compact on the
client": keep-tail compaction; "Libraries, proxies, and gateways"): strip the thinking from the
kept turns yourself, or send `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`
and let the API drop it. Either way the model loses that reasoning and the thinking it writes
from then on follows the summary and stays valid. How a request goes (`thinking_policy`):

- "strip" (adaptive thinking, the newest models' only kind, or `thinking` not set while the
  model thinks): a squash goes out at once, mid-loop included, and the thinking blocks after
  it are left out, up to the message that was last when it was first sent (`mark`), in this
  and every later request (removing thinking from the end is allowed; a block removed stays
  removed). The `thinking` setting is not touched: a change to it would cost a prompt cache
  its messages (the caching page's "thinking parameters"), the strip costs nothing more than
  the squash. Only a stale block the strip cannot take (a message of thinking alone: an empty
  message is refused) makes the request ask for the drop.
- "bind" (manual `enabled` thinking, whose final assistant turn must begin with thinking): the
  request asks for the drop (`RewritePlan.drop_block`), the kept turns go as the host sent
  them.
- "wait" (the request set `prefix_mismatch_behavior: "error"` itself, or turns thinking off):
  a new squash waits while the current turn (after the last user message that is not tool
  results) holds thinking, at the latest until the next user turn, then strips as above.

A conversation that asked for the drop once asks on every later request that carries thinking
(`bound`), and so does one whose sent squash was restored (thinking written while it was sent
binds to the squashed prefix) and one after a host's compaction (its kept turns' thinking binds
to the history the host replaced: the documented fix for keep-tail compaction). A wire whose
reasoning binds to no prefix (OpenAI's reasoning items: `WireRequest.thinking_signed` False)
keeps it all as sent: nothing waits for it and nothing of it is left out; reasoning inside a
squashed span goes with its whole message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from frs.wire.anchors import Placed, anchor
from frs.wire.matching import Unit
from frs.wire.requests import Insertion, Replacement, RewritePlan, WireRequest

_THINKING = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class LiveSquash:
    """A squash in the thread now, with the keys of every original it stands for."""

    n: int
    alias: str  # SQ.n@sha8
    summary: str
    covered: int  # original messages it replaced
    members: frozenset[str]  # their request keys (`frs.wire.matching`), nested squashes unfolded


def summary_text(squash: LiveSquash, kept: bool = False) -> str:
    """What the model reads in place of a squash's originals: the same bytes every time.
    `kept`: its span holds exchanges that stay in place (they load tools), said so the model
    knows why they are still there."""
    note = "; the exchanges that load tools stay where they were" if kept else ""
    return (
        f"[FRS squash {squash.alias}: this summary replaces {squash.covered} earlier "
        f'messages; get_alias("SQ.{squash.n}") returns them whole{note}]\n{squash.summary}'
    )


ThinkingPolicy = Literal["none", "strip", "bind", "wait"]


def can_bind(request: WireRequest) -> bool:
    """Whether the request may ask the API to drop thinking blocks whose prefix changed: its
    thinking is signed, it did not ask for the error itself, and its thinking is on (set
    `adaptive` or `enabled`, which `block_binding` goes with; or not set while the current
    turn thinks, so its model thinks by default, adaptively)."""
    if not request.thinking_signed or request.binding not in (None, "drop_block"):
        return False
    if request.thinking_type is not None:
        return request.thinking_type in ("adaptive", "enabled")
    return _thinks(request, _turn_start(request))


def thinking_policy(request: WireRequest) -> ThinkingPolicy:
    """How a squash's stale thinking goes in this request (see the module docstring)."""
    if not request.thinking_signed:
        return "none"
    if not can_bind(request):
        return "wait"
    return "bind" if request.thinking_type == "enabled" else "strip"


def plan_rewrite(
    request: WireRequest,
    units: Sequence[Unit],
    squashes: Sequence[LiveSquash],
    sent: Mapping[int, str],
    bound: bool = False,
) -> RewritePlan:
    """What to send instead of what the host sent; an empty plan changes nothing.

    `units` are `frs.wire.matching.units_of(request)`; `sent` maps each squash already sent to
    its mark (the key of the last unit of the request it was first sent in). A squash applied
    for the first time gets the key of this request's last unit as its mark. `bound`: the
    conversation has asked the API to drop stale thinking before, and so goes on asking.
    """
    messages = request.messages
    if request.untouchable or not messages:
        return RewritePlan()
    policy = thinking_policy(request)
    binds = can_bind(request)
    # After a compaction the host keeps its newest turns as they were, thinking included, but
    # their prefix is now its summary (and the request is new from its start: the prompt
    # cache has nothing to lose by a changed setting). A squash that was sent and is no
    # longer in the thread was restored: what was written while it was sent is stale too.
    compacted = request.summary is not None and _thinks(request, request.summary + 1)
    live = {squash.n for squash in squashes}
    restored = any(n not in live for n in sent)
    still = (bound or compacted or restored) and binds and _thinks(request, 0)
    if not squashes:
        return RewritePlan(drop_block=still)
    keyed = _Keyed.of(request, units)
    thinking_now = policy == "wait" and _thinks(request, _turn_start(request))
    spans: list[_Span] = []
    skipped: list[tuple[int, str]] = []
    waiting: list[int] = []
    for squash in squashes:
        found = keyed.span_of(squash)
        if isinstance(found, str):
            skipped.append((squash.n, found))
        elif squash.n not in sent and thinking_now:
            waiting.append(squash.n)
        else:
            spans.append(found)
    if not spans:
        return RewritePlan(waiting=tuple(waiting), skipped=tuple(skipped), drop_block=still)
    context = _Context(request, units, sent, policy, tuple(waiting), tuple(skipped))
    plan = _placed(context, spans)
    return replace(plan, drop_block=plan.drop_block or still)


@dataclass(frozen=True, slots=True)
class _Span:
    """Request messages lo..hi (0-based, inclusive): all a live squash's originals."""

    lo: int
    hi: int
    squash: LiveSquash


@dataclass(frozen=True, slots=True)
class _Keyed:
    """A request's messages by the keys of their units: where a squash's originals are."""

    request: WireRequest
    where: dict[str, int]  # a unit's key -> its message
    keys_of: list[set[str]]  # a message -> its units' keys
    tail: int  # the open tool loop's first message: nothing from there on is replaced

    @classmethod
    def of(cls, request: WireRequest, units: Sequence[Unit]) -> _Keyed:
        keys_of: list[set[str]] = [set() for _ in request.messages]
        for unit in units:
            keys_of[unit.message].add(unit.key)
        where = {unit.key: unit.message for unit in units}
        return cls(request, where, keys_of, _open_loop(request))

    def span_of(self, squash: LiveSquash) -> _Span | str:
        """The request messages the squash takes, or why it cannot apply to this request."""
        messages = self.request.messages
        found = [self.where.get(key) for key in squash.members]
        at = [i for i in found if i is not None]
        if len(at) != len(found) or not at:
            return "not all its messages are in this request"
        lo, hi = min(at), max(at)
        if hi >= self.tail:
            return "it reaches into the open tool loop"
        if any(not self.keys_of[i] <= squash.members for i in range(lo, hi + 1)):
            return "it covers only part of a request message"
        if any(messages[i].role == "system" for i in range(lo, hi + 1)):
            return "it would take a system message with it"
        if any(b.kind == "compaction" for i in range(lo, hi + 1) for b in messages[i].blocks):
            return "it would take a compaction block with it"
        return _Span(lo, hi, squash)


def _thinks(request: WireRequest, start: int) -> bool:
    """Whether a message from `start` on holds a thinking block."""
    return any(
        block.kind in _THINKING for message in request.messages[start:] for block in message.blocks
    )


def pinned_messages(request: WireRequest) -> frozenset[int]:
    """The messages a squash keeps in place: those holding a pinned block
    (`frs.wire.requests.WireBlock.pinned`), with the messages of the calls they answer and of the
    results that answer their calls (a kept call keeps its result, and so on)."""
    messages = request.messages
    todo = [i for i, m in enumerate(messages) if any(b.pinned for b in m.blocks)]
    if not todo:
        return frozenset()
    holding: dict[str, set[int]] = {}
    for i, message in enumerate(messages):
        for block in message.blocks:
            if block.tool_id and block.kind in ("tool_use", "tool_result"):
                holding.setdefault(block.tool_id, set()).add(i)
    kept: set[int] = set()
    while todo:
        i = todo.pop()
        if i in kept:
            continue
        kept.add(i)
        for block in messages[i].blocks:
            if block.tool_id:
                todo.extend(holding.get(block.tool_id, ()))
    return frozenset(kept)


@dataclass(frozen=True, slots=True)
class _Piece:
    """Messages lo..hi of a squash's span that go (its pinned messages split the span)."""

    lo: int
    hi: int
    squash: LiveSquash
    first: bool  # the squash's first piece: it carries the summary


def _pieces(span: _Span, pinned: frozenset[int]) -> list[_Piece]:
    runs: list[tuple[int, int]] = []
    for i in range(span.lo, span.hi + 1):
        if i in pinned:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return [_Piece(a, b, span.squash, k == 0) for k, (a, b) in enumerate(runs)]


@dataclass(frozen=True, slots=True)
class _Group:
    """Adjacent pieces lo..hi, of one squash or several: they go as one."""

    lo: int
    hi: int
    pieces: tuple[_Piece, ...]


def _grouped(spans: Sequence[_Span], pinned: frozenset[int]) -> tuple[list[_Group], list[_Span]]:
    """The spans' pieces joined where adjacent, and the spans every message of which is pinned
    (nothing of them can go)."""
    pieces: list[_Piece] = []
    whole: list[_Span] = []
    for span in spans:
        found = _pieces(span, pinned)
        if found:
            pieces.extend(found)
        else:
            whole.append(span)
    groups: list[_Group] = []
    for piece in sorted(pieces, key=lambda p: p.lo):
        if groups and piece.lo == groups[-1].hi + 1:
            groups[-1] = _Group(groups[-1].lo, piece.hi, (*groups[-1].pieces, piece))
        else:
            groups.append(_Group(piece.lo, piece.hi, (piece,)))
    return groups, whole


@dataclass(frozen=True, slots=True)
class _Context:
    """What placing the spans reads besides them (the request, its units, the squashes sent
    with their marks, how thinking goes), and what the plan reports of the squashes that did
    not get that far (`waiting`, `skipped`)."""

    request: WireRequest
    units: Sequence[Unit]
    sent: Mapping[int, str]
    policy: ThinkingPolicy
    waiting: tuple[int, ...]
    skipped: tuple[tuple[int, str], ...]


@dataclass(slots=True)
class _Placement:
    """Where the summaries go, as it is worked out: the plan's replacements and insertions,
    the first message each squash changes, and the squashes nothing can carry."""

    request: WireRequest
    keeps: set[int]  # squashes whose span holds a pinned exchange (their summary says so)
    replacements: list[Replacement] = field(default_factory=list)
    insertions: list[Insertion] = field(default_factory=list)
    changed: dict[int, int] = field(default_factory=dict)  # squash n -> first message changed
    failed: set[int] = field(default_factory=set)
    placed: list[Placed] = field(default_factory=list)  # each summary text, where it goes

    def carry(self, group: _Group) -> None:
        """A group goes: one message of its role in its place, else its summaries join the
        user message that borders it."""
        messages, members, lo, hi = self.request.messages, group.pieces, group.lo, group.hi
        texts = tuple(summary_text(p.squash, p.squash.n in self.keeps) for p in members if p.first)
        first, last = messages[lo].role, messages[hi].role
        before, after = _beside(self.request, lo, -1), _beside(self.request, hi, +1)
        at = lo
        if first == last and first != "system":
            # A message must stand here; a later piece of a squash says where its summary is.
            self.replacements.append(Replacement(lo, hi, first, texts or _continued(members)))
            self._place(lo, 1, texts)
        elif first == "assistant" and before is not None and messages[before].role == "user":
            self.replacements.append(Replacement(lo, hi, None))
            if texts:
                self.insertions.append(Insertion(before, "last", texts))
                self._place(before, 2, texts)
                at = before
        elif first == "user" and after is not None and messages[after].role == "user":
            self.replacements.append(Replacement(lo, hi, None))
            if texts:
                self.insertions.append(Insertion(after, "first", texts))
                self._place(after, 0, texts)
        else:
            self.failed.update(p.squash.n for p in members)
            return
        for p in members:
            self.changed[p.squash.n] = min(self.changed.get(p.squash.n, at), at)

    def carry_pinned(self, span: _Span) -> None:
        """Nothing of a span can go: its summary is still sent, after the exchange it kept."""
        messages, squash = self.request.messages, span.squash
        text = (summary_text(squash, squash.n in self.keeps),)
        before = _beside(self.request, span.lo, -1)
        if messages[span.hi].role == "user":
            self.insertions.append(Insertion(span.hi, "last", text))
            self._place(span.hi, 2, text)
            self.changed[squash.n] = span.hi
        elif before is not None and messages[before].role == "user":
            self.insertions.append(Insertion(before, "last", text))
            self._place(before, 2, text)
            self.changed[squash.n] = before
        else:
            self.failed.add(squash.n)

    def _place(self, message: int, order: int, texts: Sequence[str]) -> None:
        if texts:
            self.placed.append(Placed(message, order, texts[-1]))


def _placed(context: _Context, spans: Sequence[_Span]) -> RewritePlan:
    """The plan that sends each span's summary in its place; a squash nothing can carry is
    left out whole (and said why), and the rest placed again without it."""
    request = context.request
    pinned = pinned_messages(request)
    keeps = {s.squash.n for s in spans if any(i in pinned for i in range(s.lo, s.hi + 1))}
    placement = _Placement(request, keeps)
    groups, whole = _grouped(spans, pinned)
    for group in groups:
        placement.carry(group)
    for span in whole:
        placement.carry_pinned(span)
    if placement.failed:
        # A squash applies whole or not at all: the plan is made again without it.
        kept_spans = [s for s in spans if s.squash.n not in placement.failed]
        reasons = [(n, "nothing before it can carry its summary") for n in sorted(placement.failed)]
        context = replace(context, skipped=(*context.skipped, *reasons))
        if not kept_spans:
            return RewritePlan(waiting=context.waiting, skipped=context.skipped)
        return _placed(context, kept_spans)
    applied = [s.squash for s in sorted(spans, key=lambda s: s.lo)]
    changed = placement.changed
    if context.policy == "bind":
        # The kept turns go as the host sent them; the API drops what no longer holds.
        return RewritePlan(
            replacements=tuple(placement.replacements),
            insertions=tuple(placement.insertions),
            applied=tuple(s.n for s in applied),
            waiting=context.waiting,
            skipped=context.skipped,
            drop_block=_thinks(request, min(changed.values()) + 1),
            anchor=anchor(request, placement.placed, placement.replacements, ()),
        )
    dropped, kept_stale = _stale_thinking(context, applied, placement)
    return RewritePlan(
        replacements=tuple(placement.replacements),
        insertions=tuple(placement.insertions),
        dropped=dropped,
        applied=tuple(s.n for s in applied),
        waiting=context.waiting,
        skipped=context.skipped,
        drop_block=kept_stale and context.policy == "strip",
        anchor=anchor(request, placement.placed, placement.replacements, dropped),
    )


def _stale_thinking(
    context: _Context, applied: Sequence[LiveSquash], placement: _Placement
) -> tuple[tuple[tuple[int, int], ...], bool]:
    """The thinking blocks (message, block) the squashes made stale and that can be left
    out, and whether a stale one stays (a message of thinking alone cannot lose it)."""
    messages = context.request.messages
    gone = {i for r in placement.replacements for i in range(r.first, r.last + 1)}
    last_index = len(messages) - 1
    where = {unit.key: unit.message for unit in context.units}
    fallback = _turn_start(context.request) - 1
    dropped: set[tuple[int, int]] = set()
    kept_stale = False
    for squash in applied if context.policy != "none" else ():
        mark = context.sent.get(squash.n)
        upto = last_index if mark is None else where.get(mark, fallback)
        # Every message after the first one it changes (its kept exchanges too) has a new
        # prefix: the signatures of their thinking no longer hold.
        for i in range(placement.changed[squash.n] + 1, min(upto, last_index) + 1):
            message = messages[i]
            if i in gone or message.role != "assistant":
                continue
            thinking = [j for j, b in enumerate(message.blocks) if b.kind in _THINKING]
            # A message of thinking alone cannot lose it (an empty message is refused).
            if thinking and len(thinking) < len(message.blocks):
                dropped.update((i, j) for j in thinking)
            elif thinking:
                kept_stale = True
    return tuple(sorted(dropped)), kept_stale


def _continued(members: Sequence[_Piece]) -> tuple[str, ...]:
    """The text of a message that stands for a later piece of squashes whose summaries were
    sent before it (an exchange they kept lies between)."""
    aliases = ", ".join(dict.fromkeys(p.squash.alias for p in members))
    return (f"[FRS squash {aliases}: more of what its summary above replaces]",)


def _beside(request: WireRequest, index: int, step: int) -> int | None:
    """The nearest message before (`step` -1) or after (+1) `index` that is not a system
    message: the one a removed span's summary can join."""
    at = index + step
    while 0 <= at < len(request.messages) and request.messages[at].role == "system":
        at += step
    return at if 0 <= at < len(request.messages) else None


def _open_loop(request: WireRequest) -> int:
    """The first message of the open tool loop (the last assistant message, when the last
    user message holds results), else the last user message: nothing from there on is ever
    replaced (system messages after it included)."""
    messages = request.messages
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        return 0
    last = users[-1]
    if any(b.kind == "tool_result" for b in messages[last].blocks):
        calls = [i for i in range(last) if messages[i].role == "assistant"]
        return calls[-1] if calls else last
    return last


def _turn_start(request: WireRequest) -> int:
    """The index just after the last user message that is not tool results: where the
    current turn's model output begins (0 when there is no such message)."""
    for i in range(len(request.messages) - 1, -1, -1):
        message = request.messages[i]
        if message.role == "user" and not any(b.kind == "tool_result" for b in message.blocks):
            return i + 1
    return 0


def mark_of(units: Sequence[Unit]) -> str | None:
    """The mark a squash first sent with this request keeps: its last unit's key."""
    return units[-1].key if units else None
