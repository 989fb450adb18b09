"""The autopilot: squashes a gateway (or a runtime) makes on its own, as fact cards.

Models rarely squash unprompted, so where FRS sends the model its thread it squashes finished
tool exchanges itself: an assistant message's calls with the results that answer them, written
as fact cards (`frs.cards`: tool, telling argument, command, paths, outcome or first error
line, sizes and numbers, and the aliases that return the originals). It never takes:

- the newest `keep` exchanges (the working set) or anything after them (the open tool loop);
- what the model is not sent (before a host's compaction): only entries the request holds;
- the task, a summary (the model's own squashes win; the autopilot never nests them), a
  message between exchanges (its words stay), an exchange that loads tools (pinned), or a
  span the model restored (it asked for the originals back).

When: in batches, and only when a batch pays back within `payback` later calls under a prompt
cache (`frs.economics`: squashing S tokens into Σ with T after them costs 1.25·(Σ+T) − 0.1·(S+T)
once and saves 0.1·(S−Σ) a call), and only once what the model is sent has reached `after`
tokens: a short session is never squashed, so it never costs more than without FRS. A batch
is every candidate run at once: each run of adjacent exchanges one squash, all in one
revision, so a cache breaks once per batch.

The plan is pure (`plan_batch`); the edge reads the entries, calls it after a model call, and
writes the batch with `frs.squashes.compress_ranges(automatic=True)` at the revision it read,
so a squash the model made meanwhile wins (a stale revision: no batch this time), and of
several gateway instances, one writes the batch.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from frs.cards import cards
from frs.economics import payback_calls
from frs.facts import Exchange, exchanges
from frs.model import Message
from frs.text import estimate_tokens

#: Defaults, each an option of `frs-mcp gateway` (and of the runtime adapters).
KEEP = 4  # newest finished exchanges left verbatim
AFTER = 20_000  # tokens the model is sent before the autopilot squashes at all
PAYBACK = 4  # later calls a batch must pay back within


@dataclass(frozen=True, slots=True)
class Autopilot:
    """When and how much the autopilot squashes (see the module docstring)."""

    keep: int = KEEP
    after: int = AFTER
    payback: int = PAYBACK


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
) -> Batch | None:
    """The batch to squash now, or None.

    `entries` are the live entries in thread order from the first one the model is sent (a
    window, not the whole thread); `sent` the keys (`interface_message_id`) of the messages
    the latest request held (None: the model is sent every live entry, as a runtime that
    builds its prompt from the thread sends it); `sent_tokens` that request's size;
    `next_squash` the n the batch's first squash gets (the session's); `pinned` the keys of
    messages that must stay where they are; `restored` the numbers of messages of squashes
    the model restored.
    """
    if sent_tokens < settings.after:
        return None
    candidates = _candidates(entries, sent, settings.keep, pinned, restored)
    if not candidates:
        return None
    runs = _runs(entries, candidates)
    if not runs:
        return None
    start = next(i for i, e in enumerate(entries) if e.ord == runs[0][0].call.ord)
    squashed = sum(_tokens(x) for run in runs for x in run)
    following = sum(e.tokens for e in entries[start:]) - squashed
    # The cards cost nothing yet: if even free cards would not pay back, write none.
    bound = payback_calls(squashed, 0, following)
    if bound is None or bound > settings.payback:
        return None
    written = [_run(run, next_squash + i) for i, run in enumerate(runs)]
    summaries = sum(estimate_tokens(run.summary) for run in written)
    calls = payback_calls(squashed, summaries, following)
    if calls is None or calls > settings.payback:
        return None
    return Batch(tuple(written), squashed, summaries, following, calls)


def _candidates(
    entries: Sequence[Message],
    sent: Collection[str] | None,
    keep: int,
    pinned: Collection[str],
    restored: Collection[int],
) -> list[Exchange]:
    """The finished exchanges the autopilot may squash, oldest first."""
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
        exchange = of.get(entry.ord) if entry.kind == "message" else None
        if exchange is None:
            if current:
                runs.append(current)
            current = []
            continue
        if not current or current[-1] is not exchange:
            current.append(exchange)
    if current:
        runs.append(current)
    # A run whose exchange has a result away from it (another entry between) is not whole.
    return [run for run in runs if _whole(run, entries)]


def _whole(run: Sequence[Exchange], entries: Sequence[Message]) -> bool:
    ords = sorted(m.ord for x in run for m in (x.call, *x.results))
    span = [e.ord for e in entries if ords[0] <= e.ord <= ords[-1]]
    return ords == span


def _tokens(exchange: Exchange) -> int:
    return exchange.call.tokens + sum(result.tokens for result in exchange.results)


def _run(run: Sequence[Exchange], n: int) -> Run:
    """The run as squash `SQ.n` (its cards name the alias that returns the originals); a
    message's number is its ord, so the range is one of thread order too."""
    ords = [m.ord for x in run for m in (x.call, *x.results)]
    summary = cards(run, f"SQ.{n}")
    return Run(min(ords), max(ords), summary, sum(_tokens(x) for x in run))
