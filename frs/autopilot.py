"""The autopilot: squashes a gateway (or a runtime) makes on its own, as fact cards.

Models rarely squash unprompted, so where FRS sends the model its thread it squashes finished
tool exchanges itself: an assistant message's calls with the results that answer them, written
as fact cards (`frs.cards`: tool, telling argument, command, paths, outcome or first error
line, sizes and numbers, and the aliases that return the originals). It never takes:

- the newest `keep` exchanges (the working set) or anything after them (the open tool loop);
- what the model is not sent (before a host's compaction): only entries the request holds;
- the task, a summary (the model's own squashes win; the autopilot never nests them), a
  message between exchanges (its words stay), an exchange that loads tools (pinned), or a
  span the model restored (it asked for the originals back);
- an exchange whose messages in the request hold anything else (Claude Code puts text after
  the results in their user message: a reminder, the files it attaches after a compaction):
  a squash never cuts a request message (`frs.wire.rewriting`), so it could never be sent.

Its own cards pile up too: once the cards the model is sent pass `rollup` tokens, each run of
two or more adjacent ones (never the newest, never a model's summary) is rolled up into one: a
digest of what they say (`frs.digest`: files, commands with their last outcome, open errors,
decisions, each with the alias that returns its original), nested over them, so `get_alias` of
the roll-up returns the cards and each card's alias its originals. A roll-up is left as it is
until the roll-ups pass `TIER` times `rollup`; then they are rolled up together. So the digests
at the front stay as they were sent, and the prompt cache keeps them: a roll-up that took them
along each time would write the whole conversation after the task again (the API reads a
cache only up to an entry a breakpoint wrote before the change, `frs.wire.anchors`).

When: in batches, and only when a batch pays back within `payback` later calls under a prompt
cache (`frs.economics`: squashing S tokens into Σ with T after them costs 1.25·(Σ+T) − 0.1·(S+T)
once and saves 0.1·(S−Σ) a call), and within `seen` of the calls the session has made (a short
session may end before it pays), and only once what the model is sent has reached `after`
tokens: a short session is never squashed, so it never costs more than without FRS. A batch
is every candidate run at once: each run of adjacent exchanges one squash, all in one
revision, so a cache breaks once per batch.

The plan is pure (`plan_batch`); the edge reads the entries, calls it after a model call, and
writes the batch with `frs.squashes.compress_ranges(automatic=True)` at the revision it read,
so a squash the model made meanwhile wins (a stale revision: no batch this time), and of
several gateway instances, one writes the batch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from frs.cards import HEADER, card, header
from frs.digest import digest
from frs.economics import payback_calls
from frs.facts import Exchange, ExchangeFacts, exchange_facts, exchanges
from frs.model import Message
from frs.text import estimate_tokens

#: Defaults, each an option of `frs-mcp gateway` (and of the runtime adapters).
#: Tokens of automatic summaries sent before the older ones are rolled up into a digest, and
#: the budget of that digest.
ROLLUP = 6_000
ROLLUP_BUDGET = 1_200
#: Roll-ups are rolled up together only once they pass this many times `rollup`.
TIER = 3
#: A batch pays back within this share of the calls the session has made, at most: a session
#: that has made n calls is about as likely to end within n more as to go on (a session's
#: length is heavy-tailed), so a batch that needs most of them may never pay.
SEEN = 0.5
#: How a roll-up's summary starts: the view and `frs.digest` know it as automatic.
ROLLED = f"{HEADER}, rolled up"
# Chosen on the bench's corpus sessions (bench/gateway_sessions.py: thinking in the tool
# loops, a compaction at 40k, billed as the API bills a prompt cache, the gateway's breakpoint
# on its newest summary): 1, 9,000, 8, a roll-up at 6,000 and `SEEN` 0.5 cost least of the
# settings tried with no transcript costlier than without the gateway (pooled 0.71 of the
# host's run; 2 / 12,000 / 8 with a roll-up at 2,000, the earlier defaults: 0.78; a lower
# threshold, or no `SEEN`, made the 12- and 13-call sessions 2-7% costlier).
KEEP = 1  # newest finished exchanges left verbatim
AFTER = 9_000  # tokens the model is sent before the autopilot squashes at all
PAYBACK = 8  # later calls a batch must pay back within


@dataclass(frozen=True, slots=True)
class Autopilot:
    """When and how much the autopilot squashes (see the module docstring)."""

    keep: int = KEEP
    after: int = AFTER
    payback: int = PAYBACK
    rollup: int = ROLLUP  # tokens of its own summaries before the older ones are rolled up
    seen: float = SEEN  # share of the calls made so far a batch must pay back within


@dataclass(frozen=True, slots=True)
class Run:
    """Adjacent exchanges squashed as one: numbers first..last (inclusive; a message's number
    is its ord, its place in the thread) and their cards."""

    first: int
    last: int
    summary: str
    tokens: int  # estimated tokens of what it replaces


@dataclass(frozen=True, slots=True)
class Batch:
    """What the autopilot squashes now, and the economics that let it."""

    runs: tuple[Run, ...]
    squashed: int  # S: tokens the runs replace
    summaries: int  # Σ: tokens of their cards
    following: int  # T: tokens sent after the first run's start that stay
    payback: float  # later calls until it has paid for its cache break


def plan_batch(
    entries: Sequence[Message],
    sent: Collection[str] | None,
    sent_tokens: int,
    settings: Autopilot,
    *,
    next_squash: int = 1,
    pinned: Collection[str] = (),
    restored: Collection[int] = (),
    max_chars: int = 8_000,
    max_ranges: int = 100,
    placed: Mapping[str, int] | None = None,
    automatic: Collection[int] = (),
    made: int | None = None,
) -> Batch | None:
    """The batch to squash now, or None.

    `entries` are the live entries in thread order from the first one the model is sent (a
    window, not the whole thread); `sent` the keys (`interface_message_id`) of the messages
    the latest request held (None: the model is sent every live entry, as a runtime that
    builds its prompt from the thread sends it); `sent_tokens` that request's size;
    `next_squash` the n the batch's first squash gets (the session's); `pinned` the keys of
    messages that must stay where they are; `restored` the numbers of messages of squashes
    the model restored; `max_chars` the longest summary a squash may have (`Limits`): a run
    whose cards would be longer is squashed in several pieces, one after the other, and a batch
    holds at most `max_ranges` of them (the oldest; `Limits.max_plan_steps`); `placed`
    the request message (its index) each sent key sits in (None: each alone); `automatic` the
    squash numbers the autopilot made, whose summaries it may roll up; `made` the model calls
    the session has made (None: not known, and `payback` alone bounds the wait; a gateway
    counts the assistant messages of the request, so after a host's compaction the count
    starts again and the autopilot waits as at a session's start).
    """
    if sent_tokens < settings.after:
        return None
    candidates = _candidates(entries, sent, settings.keep, pinned, restored, placed or {})
    runs = _runs(entries, candidates)
    rolls = _rollups(entries, sent, automatic, settings.rollup)
    if (not runs and not rolls) or not _may_pay_back(entries, runs, rolls, settings.payback):
        return None
    # The oldest first, as many as one call may squash (`Limits.max_plan_steps`): a backlog of
    # thousands of exchanges goes over several batches, not never.
    spans = _spans(runs, rolls, max_chars, max_ranges)
    if not spans:
        return None
    first = spans[0].lo
    squashed = sum(span.tokens for span in spans)
    following = sum(e.tokens for e in entries if e.ord >= first) - squashed
    written = [span.written(next_squash + i, max_chars) for i, span in enumerate(spans)]
    summaries = sum(estimate_tokens(run.summary) for run in written)
    calls = payback_calls(squashed, summaries, following)
    if calls is None or calls > _horizon(settings, made):
        return None
    return Batch(tuple(written), squashed, summaries, following, calls)


def _horizon(settings: Autopilot, made: int | None) -> float:
    """The later calls a batch must pay back within: `payback`, and no more than `seen` of the
    calls the session has made (`made`; None: not known)."""
    if made is None:
        return float(settings.payback)
    return min(float(settings.payback), max(made * settings.seen, 1.0))


def _may_pay_back(
    entries: Sequence[Message],
    runs: Sequence[Sequence[Exchange]],
    rolls: Sequence[Sequence[Message]],
    payback: int,
) -> bool:
    """Whether the batch could pay back within `payback` calls were every card free: the
    cheap check each call makes, before any fact or card is worked out."""
    starts = [x.call.ord for run in runs for x in run[:1]] + [r[0].ord for r in rolls]
    first = min(starts)
    most = sum(_tokens(x) for run in runs for x in run) + sum(e.tokens for r in rolls for e in r)
    bound = payback_calls(most, 0, sum(e.tokens for e in entries if e.ord >= first) - most)
    return bound is not None and bound <= payback


def _spans(
    runs: Sequence[Sequence[Exchange]],
    rolls: Sequence[Sequence[Message]],
    max_chars: int,
    max_ranges: int,
) -> list[_Span]:
    """The batch's squashes in thread order, at most `max_ranges`: each roll-up of automatic
    summaries, and each run's cards in pieces that fit `max_chars`, the oldest first (cards are
    worked out only for the pieces taken: a backlog of thousands costs one batch's worth)."""
    spans = [_Span(r[0].ord, r[-1].ord_last, r) for r in rolls]
    for run in runs:
        for piece in _fitted((_Card.of(x) for x in run), max_chars):
            if len(spans) >= max_ranges:
                break
            spans.append(_Span(piece[0].exchange.call.ord, piece[-1].members[-1].ord, piece))
    spans.sort(key=lambda span: span.lo)
    return spans[:max_ranges]


def _rollups(
    entries: Sequence[Message],
    sent: Collection[str] | None,
    automatic: Collection[int],
    threshold: int,
) -> list[list[Message]]:
    """Runs of two or more adjacent automatic summaries to roll up, the newest left out: the
    cards once they pass `threshold` tokens, else the roll-ups once they pass `TIER` times it
    (each only among the summaries the model is sent)."""
    mine = [
        e
        for e in entries
        if e.kind == "summary"
        and e.squash_n in automatic
        and (sent is None or e.interface_message_id is None or e.interface_message_id in sent)
    ]
    cards = [e for e in mine if not e.content.startswith(ROLLED)]
    rolled = [e for e in mine if e.content.startswith(ROLLED)]
    for tier, limit in ((cards, threshold), (rolled, TIER * threshold)):
        # Cards too far apart to roll up (a user turn, a model's squash between them) leave
        # the roll-ups their turn.
        runs = _adjacent(entries, tier[:-1]) if sum(e.tokens for e in tier) >= limit else []
        if runs:
            return runs
    return []


def _adjacent(entries: Sequence[Message], chosen: Sequence[Message]) -> list[list[Message]]:
    """The runs of two or more of `chosen` with nothing else between them, in thread order."""
    older = {e.ord for e in chosen}
    runs: list[list[Message]] = []
    current: list[Message] = []
    for entry in entries:
        if entry.ord in older:
            current.append(entry)
            continue
        if len(current) > 1:
            runs.append(current)
        current = []
    if len(current) > 1:
        runs.append(current)
    return runs


def _size(content: Sequence[_Card] | Sequence[Message]) -> int:
    return sum(c.tokens for c in content)


@dataclass(frozen=True, slots=True)
class _Span:
    """One squash of the batch before its summary is written: entries lo..hi (ords,
    inclusive) and what stands for them, the cards of exchanges or the automatic summaries
    a roll-up takes."""

    lo: int
    hi: int
    content: Sequence[_Card] | Sequence[Message]

    @property
    def tokens(self) -> int:
        return _size(self.content)

    def written(self, n: int, max_chars: int) -> Run:
        """The span as squash `SQ.n`: cards of exchanges, or a roll-up of summaries."""
        content = self.content
        if content and isinstance(content[0], _Card):
            return _run([c for c in content if isinstance(c, _Card)], n)
        summaries = [c for c in content if isinstance(c, Message)]
        head = (
            f'{ROLLED}: get_alias("SQ.{n}") returns the cards, each card\'s SQ alias its originals.'
        )
        body = digest(summaries, budget=ROLLUP_BUDGET)
        text = f"{head}\n{body}"[:max_chars]
        return Run(self.lo, self.hi, text, _size(summaries))


def _tokens(exchange: Exchange) -> int:
    return exchange.call.tokens + sum(result.tokens for result in exchange.results)


@dataclass(frozen=True, slots=True)
class _Card:
    """A candidate exchange with its facts and card lines, worked out once."""

    exchange: Exchange
    facts: ExchangeFacts
    lines: tuple[str, ...]
    tokens: int  # of the messages it stands for

    @classmethod
    def of(cls, exchange: Exchange) -> _Card:
        facts = exchange_facts(exchange)
        return cls(exchange, facts, tuple(card(facts)), _tokens(exchange))

    @property
    def members(self) -> tuple[Message, ...]:
        return (self.exchange.call, *self.exchange.results)

    @property
    def chars(self) -> int:
        return sum(len(line) + 1 for line in self.lines)


def _candidates(
    entries: Sequence[Message],
    sent: Collection[str] | None,
    keep: int,
    pinned: Collection[str],
    restored: Collection[int],
    placed: Mapping[str, int],
) -> list[Exchange]:
    """The finished exchanges the autopilot may squash, oldest first."""
    held: dict[int, set[str]] = {}
    for key, index in placed.items():
        held.setdefault(index, set()).add(key)
    found = exchanges([e for e in entries if e.kind == "message"])
    found = found[: max(len(found) - keep, 0)]
    out = []
    for exchange in found:
        members = [exchange.call, *exchange.results]
        keys = [m.interface_message_id for m in members]
        if sent is not None and any(key is None or key not in sent for key in keys):
            continue
        if any(key in pinned for key in keys if key is not None):
            continue
        own = {m.interface_message_id or "" for m in members}
        if any(held.get(placed[key], own) - own for key in own if key in placed):
            continue  # a request message it is in holds more: it would be cut
        if any(m.number in restored for m in members):
            continue
        out.append(exchange)
    return out


def _runs(entries: Sequence[Message], candidates: Sequence[Exchange]) -> list[list[Exchange]]:
    """Candidates grouped into runs of adjacent entries (in thread order): a run holds every
    entry from its first to its last (nothing between them stays), so it is one squash of
    a whole range."""
    of = {m.ord: x for x in candidates for m in (x.call, *x.results)}
    runs: list[list[Exchange]] = []
    current: list[Exchange] = []
    for entry in entries:
        found = of.get(entry.ord) if entry.kind == "message" else None
        if found is None:
            if current:
                runs.append(current)
            current = []
            continue
        if not current or current[-1] is not found:
            current.append(found)
    if current:
        runs.append(current)
    # A run whose exchange has a result away from it (another entry between) is not whole.
    return [run for run in runs if _whole(run, entries)]


def _whole(run: Sequence[Exchange], entries: Sequence[Message]) -> bool:
    ords = sorted(m.ord for x in run for m in (x.call, *x.results))
    span = [e.ord for e in entries if ords[0] <= e.ord <= ords[-1]]
    return ords == span


#: Room a batch's header takes (`frs.cards.header`: counts, a span of aliases, the squash's).
_HEADER_CHARS = 200


def _fitted(run: Iterable[_Card], max_chars: int) -> Iterator[list[_Card]]:
    """The run cut into adjacent pieces whose cards each fit in `max_chars` (an exchange
    whose card alone is longer is left out: it stays as it is), each as soon as it is whole."""
    room = max_chars - _HEADER_CHARS
    current: list[_Card] = []
    used = 0
    for card_ in run:
        if current and used + card_.chars <= room:
            current.append(card_)
            used += card_.chars
            continue
        if current:
            yield current
        current, used = ([card_], card_.chars) if card_.chars <= room else ([], 0)
    if current:
        yield current


def _run(piece: Sequence[_Card], n: int) -> Run:
    """The piece as squash `SQ.n` (its cards name the alias that returns the originals); a
    message's number is its ord, so the range is one of thread order too."""
    ords = [m.ord for c in piece for m in c.members]
    lines = [header([c.facts for c in piece], f"SQ.{n}"), *(x for c in piece for x in c.lines)]
    return Run(min(ords), max(ords), "\n".join(lines), sum(c.tokens for c in piece))
