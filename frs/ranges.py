"""Which entries a squash would take, and whether it may take them.

A range names positions (what the view numbers) or, absolute, message numbers. Either way it
resolves to a window of whole entries, checked against three things a squash must never do:
cut a summary in two (absolute numbers only), cross the start of an open focus layer, or
separate a tool call from its result. Each refusal names the range that would work.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from frs.checks import check_numbers, check_positions
from frs.errors import InvalidRequest, NothingToSquash, SplitsToolCall
from frs.model import Message, Numbering, Session
from frs.ports import ThreadReader


@dataclass(frozen=True, slots=True)
class AskedRange:
    """A range a caller asks to squash: positions (or, absolute, numbers) `start`..`end`,
    inclusive, and the summary to put in their place. Unchecked: `plan_range` checks it."""

    start: int
    end: int
    summary: str


@dataclass(frozen=True, slots=True)
class Range:
    """A checked range: its entries, the position of the first, and its name in replies."""

    window: tuple[Message, ...]
    first: int
    named: str  # "positions 3–5" or "numbers 3–5"

    @property
    def span(self) -> tuple[int, int]:
        """The ords the window covers, first to last."""
        return self.window[0].ord, self.window[-1].ord_last


async def plan_range(
    reader: ThreadReader, session: Session, start: int, end: int, mode: Numbering
) -> Range:
    """The entries start..end would squash, checked against edges, layers and pairs."""
    if mode == "absolute":
        check_numbers(session, start, end)
        window = await reader.entries_between(session.id, start, end)
        await _check_absolute_edges(reader, session, window, start, end)
        first = (await reader.positions_of(session.id, [window[0].ord]))[0]
        named = span_name("number", start, end)
    else:
        check_positions(session, start, end)
        window = await reader.entries_at(session.id, start, end - start + 1)
        first = start
        named = span_name("position", start, end)
    await check_layers(reader, session, window, mode)
    await check_pairs(reader, session, window, first, mode)
    return Range(tuple(window), first, named)


def check_apart(ranges: Sequence[Range], given: Sequence[AskedRange]) -> None:
    """Ranges of one call may not overlap: each would squash what another squashes."""
    by_start = sorted(range(len(ranges)), key=lambda i: ranges[i].span[0])
    for earlier, later in itertools.pairwise(by_start):
        if ranges[later].span[0] <= ranges[earlier].span[1]:
            a, b = given[earlier], given[later]
            raise InvalidRequest(
                f"ranges[{earlier}] ({a.start}..{a.end}) and ranges[{later}] ({b.start}..{b.end}) "
                "overlap; give ranges that do not share an entry."
            )


async def check_layers(
    reader: ThreadReader, session: Session, window: Sequence[Message], mode: Numbering
) -> None:
    """A range may not cross the start of an open focus layer."""
    lo, hi = window[0].ord, window[-1].ord_last
    for layer in await reader.open_layers(session.id):
        if lo < layer.start_ord <= hi:
            if mode == "absolute":
                unit, at = "number", layer.start_ord
            else:
                unit, at = "position", (await reader.positions_of(session.id, [layer.start_ord]))[0]
            raise InvalidRequest(
                f"The range crosses the start of the open focus layer {layer.goal!r} at "
                f"{unit} {at}: squash entries before {unit} {at}, or from {at} on, "
                "or close the layer with frs_focus(action='close', summary=...)."
            )


async def check_pairs(
    reader: ThreadReader,
    session: Session,
    window: Sequence[Message],
    first: int,
    mode: Numbering,
    as_count: bool = False,
) -> None:
    """Refuse a window that would separate a tool call from its result, naming the smallest
    range that keeps every pair together (`as_count`: as a compress_last count, when that
    range ends where the window does)."""
    lo, hi = window[0].ord, window[-1].ord_last
    new_lo, new_hi = await _pairs_closed(reader, session, lo, hi)
    if (new_lo, new_hi) == (lo, hi):
        return
    last = first + len(window) - 1
    if mode == "absolute":
        raise SplitsToolCall(lo, hi, new_lo, new_hi)
    # Position the entry that ends at new_hi by its own ord: a summary's ord_last lies
    # past its ord, so mapping ord_last itself gives the position after the summary.
    end_entry = await reader.entry_covering(session.id, new_hi)
    end_ord = end_entry.ord if end_entry is not None else new_hi
    start_pos, end_pos = await reader.positions_of(session.id, [new_lo, end_ord])
    if as_count and end_pos == last and new_hi == hi:
        raise SplitsToolCall(first, last, start_pos, last, count=last - start_pos + 1)
    raise SplitsToolCall(first, last, start_pos, end_pos)


async def _pairs_closed(
    reader: ThreadReader, session: Session, lo: int, hi: int
) -> tuple[int, int]:
    """The smallest span of whole entries around lo..hi that no call/result pair crosses:
    grown until a pass adds nothing, since a grown edge may bring in a new pair."""
    while True:
        before, after = await reader.pair_partners(session.id, lo, hi)
        grown = False
        if before is not None and before < lo:
            cover = await reader.entry_covering(session.id, before)
            if cover is not None and cover.ord < lo:
                lo, grown = cover.ord, True
        if after is not None and after > hi:
            cover = await reader.entry_covering(session.id, after)
            if cover is not None and cover.ord_last > hi:
                hi, grown = cover.ord_last, True
        if not grown:
            return lo, hi


async def _check_absolute_edges(
    reader: ThreadReader,
    session: Session,
    window: Sequence[Message],
    start: int,
    end: int,
) -> None:
    """In absolute mode a range must hold whole entries: no summary may straddle an edge."""
    cover = await reader.entry_covering(session.id, start)
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


def span_name(unit: str, first: int, last: int) -> str:
    """`position 4`, or `positions 4–6` for a span."""
    return f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"
