"""Fitting a view into a token budget so that an append changes only the view's tail.

A view over its budget shows, from the newest entry back: the newest entries whole (at most a
tenth of the room, entry by entry), then entries as cards, then as one-line cards; the oldest
are left out behind one marker line. The cards and the one-line cards start on fixed blocks of
positions, and a region's start moves only when the region overflows, a whole block at a time.
So most appends change nothing above the newest entries, and the rare one that moves a start
changes the view only from there on: a prompt cache over the view keeps hitting. Every figure
that changes with an append (the budget note, the omitted span, the counts) is on the last line.

Sizes are estimated tokens (`frs.text.token_weight`, additive), so the sum of an entry's lines
is what it adds to the view.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from frs.errors import InvalidRequest
from frs.layout import (
    Shown,
    attach,
    focus_heading,
    focus_headings,
    footer_line,
    label,
    merge_runs,
    spans,
    stamp,
)
from frs.model import Message
from frs.render import (
    REPLY_INDENT,
    Entry,
    checkpoint_line,
    group_line,
    one_line,
    render_entry,
)
from frs.selection import Request, Selection
from frs.text import estimate_tokens, token_weight

Tier = Literal["whole", "card", "line", "group"]
#: A card's preview in budgeted views, shorter than the server's preview cap.
CARD_CHARS = 300
#: The first words a one-line card shows.
LINE_CHARS = 56
# Below this room for entries, most of it goes to group lines of 4 entries (see `Shape`).
_SMALL_ROOM = 2_500
# Typical estimated tokens of a card, a one-line card and a group line: they size the blocks a
# region starts on, so that a region's start moves about once per half of what it holds.
_CARD_TOKENS = 90
_LINE_TOKENS = 38
_GROUP_TOKENS = 48
#: Entries a group line stands for: groups start on positions 1, 9, 17, …
PER_GROUP = 8


class Sizer(Protocol):
    """The candidates of a view (oldest first), read as the walk needs them."""

    count: int

    def position(self, index: int) -> int: ...
    def anchor(self, index: int) -> int:
        """Where the entry at `index` sits for blocks and groups: its position in the thread
        when the candidates are a stretch of it, its 1-based place among them otherwise (a
        role or run view), so that blocks hold entries the view shows."""
        ...

    async def size(self, index: int, tier: Tier) -> float:
        """Estimated tokens the entry at `index` adds to the view in `tier` (not "group")."""
        ...

    async def group_size(self, lo: int, hi: int) -> float:
        """Estimated tokens of the group line standing for the entries at `lo`..`hi`."""
        ...


@dataclass(frozen=True, slots=True)
class Shape:
    """How the room for entries is shared out, newest first: entries whole, cards, one-line
    cards, group lines; and the blocks of positions each region but the first starts on.

    A small room gives most of itself to group lines: the one-line cards then hold little more
    than the group being filled, so an append adds a line at the end of the view and a full
    group folds into one group line just above it, and what lies above stays as it was.
    """

    whole: float
    card: float
    line: float
    group: float
    card_block: int
    line_block: int
    group_block: int
    per_group: int  # entries a group line stands for: groups start on positions 1, 1 + this, …
    newest_card: float  # room the newest entry may take as a card

    @classmethod
    def for_room(cls, room: float) -> Shape:
        # Tuned on corpus threads with `python -m bench.cache`: the median kept prefix after
        # 1 and 10 appends is over 90% and 75% for each budget the benchmark tries.
        # Tuned with `python -m bench.cache` on corpus threads (BENCHMARKS.md has the figures).
        if room >= _SMALL_ROOM:
            shares, spread, group_spread, newest = (0.05, 0.09, 0.78), 1.1, 1.5, 0.16
        else:
            # Little room: most of it holds group lines, the one-line cards hold the group
            # being filled, and the newest entry is a card only when a small one fits.
            shares, spread, group_spread, newest = (0.03, 0.04, 0.30), 1.0, 1.0, 0.07
        whole, card, line = (room * share for share in shares)
        group, per_group, newest_card = room - whole - card - line, PER_GROUP, room * newest
        # A block is what its region holds, divided by a spread: after a move the region still
        # holds part of its room, and the next move comes only once a block's worth arrived.
        line_block = _power_of_two(line / _LINE_TOKENS / spread, per_group, 256)
        groups = group / _GROUP_TOKENS * per_group / group_spread
        return cls(
            whole,
            card,
            line,
            group,
            _power_of_two(card / _CARD_TOKENS, 2, 64),
            line_block,
            _power_of_two(groups, line_block, 4096),
            per_group,
            newest_card,
        )


def _power_of_two(value: float, low: int, high: int) -> int:
    size = low
    while size * 2 <= min(value, high):
        size *= 2
    return size


@dataclass(frozen=True, slots=True)
class Fit:
    """Which candidates a budgeted view shows and how: `first` is the index of the oldest
    shown (those before are left out); `tiers` holds one tier per shown candidate, and runs of
    "group" stand for group lines of the aligned blocks of `per_group` positions they fall in."""

    first: int
    tiers: tuple[Tier, ...]
    per_group: int = 8

    def count(self, tier: Tier) -> int:
        return self.tiers.count(tier)


async def fit(sizer: Sizer, room: float) -> Fit | None:
    """The tiers of a view whose entries get `room` estimated tokens; None when not even the
    newest candidate fits as a one-line card."""
    last = sizer.count - 1
    if last < 0:
        return Fit(0, ())
    shape = Shape.for_room(room)
    newest = await _newest_tier(sizer, last, shape)
    if newest is None:
        return None
    tier, used = newest
    tiers: list[Tier] = [tier]
    # The newest entries whole, entry by entry: this part changes with every append anyway.
    index = last - 1
    whole_left = shape.whole - min(used, shape.whole)
    while index >= 0 and (size := await sizer.size(index, "whole")) <= whole_left:
        tiers.append("whole")
        whole_left -= size
        index -= 1
    # A newest entry larger than its share takes the rest from the cards, then the lines.
    over = max(0.0, used - shape.whole)
    card_room = max(0.0, shape.card - over)
    start = await _region_start(sizer, index, "card", card_room, shape.card_block)
    tiers.extend("card" for _ in range(index - start + 1))
    index = start - 1
    # The regions above keep their room whatever the newest entry takes (else their starts
    # would move back and forth with it), unless it takes more than the cards' share: then
    # the room is so small that only fitting at all matters.
    line_room = shape.line - max(0.0, over - shape.card)
    group_room = shape.group - max(0.0, over - shape.card - shape.line)
    # The one-line cards hold the group being filled (the entries after the last whole group)
    # when they can: a group line then changes only once its group is complete.
    filling = index
    while filling > 0 and _group_of(sizer, filling - 1, shape) == _group_of(sizer, index, shape):
        filling -= 1
    start = await _region_start(sizer, index, "line", line_room, shape.line_block, floor=filling)
    tiers.extend("line" for _ in range(index - start + 1))
    index = start - 1
    start = await _groups_start(sizer, index, shape, group_room)
    tiers.extend("group" for _ in range(index - start + 1))
    return Fit(start, tuple(reversed(tiers)), shape.per_group)


def _group_of(sizer: Sizer, index: int, shape: Shape) -> int:
    return (sizer.anchor(index) - 1) // shape.per_group


async def _newest_tier(sizer: Sizer, last: int, shape: Shape) -> tuple[Tier, float] | None:
    """The newest entry in the largest tier that fits: whole in the newest entries' share,
    else a card in `newest_card`, else a one-line card anywhere in the room."""
    limits: tuple[tuple[Tier, float], ...] = (
        ("whole", shape.whole),
        ("card", shape.newest_card),
        ("line", shape.whole + shape.card + shape.line + shape.group),
    )
    for tier, limit in limits:
        size = await sizer.size(last, tier)
        if size <= limit:
            return tier, size
    return None


async def _region_start(
    sizer: Sizer, end: int, tier: Tier, room: float, block: int, floor: int | None = None
) -> int:
    """The smallest index whose position starts a block (or is the first candidate, or
    `floor`) such that the entries from it to `end` fit `room` in `tier`; `end + 1` when none
    does (the region is empty). The start only moves forward as `end` grows, and then by whole
    blocks."""
    start = end + 1
    used = 0.0
    for index in range(end, -1, -1):
        used += await sizer.size(index, tier)
        if used > room:
            break
        if index in (0, floor) or _starts_block(sizer.anchor(index), block):
            start = index
    return start


async def _groups_start(sizer: Sizer, end: int, shape: Shape, room: float) -> int:
    """Like `_region_start`, for group lines: the region holds whole groups of `per_group`
    positions and starts on a block."""
    block, size = shape.group_block, shape.per_group
    start = end + 1
    used = 0.0
    hi = end
    while hi >= 0:
        lo = hi
        group = (sizer.anchor(hi) - 1) // size
        while lo > 0 and (sizer.anchor(lo - 1) - 1) // size == group:
            lo -= 1
        used += await sizer.group_size(lo, hi)
        if used > room:
            break
        if lo == 0 or _starts_block(sizer.anchor(lo), block):
            start = lo
        hi = lo - 1
    return start


def _starts_block(position: int, block: int) -> bool:
    return (position - 1) % block == 0


# -- a budgeted view -------------------------------------------------------------------------

_CHUNK = 64  # entries read at a time as the walk goes back
_LEAST_ENTRY_TOKENS = 5
_TRIES = 6  # assemble, measure, and shrink the room by any excess: merged runs can grow
_MARKER = "… older entries left out here (the last line says which)"
_STAMP = " [2025-01-02 10:00]"
_PINNED_CARD_SHARE = 0.10  # the pinned task is a card when that fits this share of the budget
_POSITIONS = 'numbering="position", '


class Candidates:
    """A selection's entries, read a chunk at a time as the walk asks for them, each rendered
    once per tier however often the walk sizes it."""

    def __init__(self, request: Request, selection: Selection) -> None:
        self.request, self.selection = request, selection
        self.count = selection.count
        self._shown: dict[int, Shown] = dict(enumerate(selection.shown or ()))
        self._thoughts: dict[int, list[Message]] = {}
        self._read: set[int] = set()  # chunks read (thinking included)
        self._lines: dict[tuple[int, Tier], list[str]] = {}
        self._sizes: dict[tuple[int, Tier], float] = {}
        self._groups: dict[tuple[int, int], str] = {}

    def position(self, index: int) -> int:
        if self.selection.shown is not None:
            return self.selection.shown[index].position
        return self.selection.first + index

    def positions(self, lo: int, hi: int) -> Sequence[int]:
        """The positions of candidates `lo`..`hi - 1`: a range for a stretch of the thread,
        which names 100,000 left-out positions without listing them."""
        if self.selection.shown is None:
            return range(self.selection.first + lo, self.selection.first + hi)
        return [s.position for s in self.selection.shown[lo:hi]]

    def anchor(self, index: int) -> int:
        return self.selection.first + index if self.selection.shown is None else index + 1

    async def shown(self, index: int) -> Shown:
        chunk = index // _CHUNK if self.selection.shown is None else 0
        if chunk not in self._read:
            await self._read_chunk(chunk)
        return self._shown[index]

    def thoughts(self, index: int) -> list[Message]:
        return self._thoughts.get(index, [])

    async def _read_chunk(self, chunk: int) -> None:
        selection = self.selection
        if selection.shown is None:
            lo, hi = chunk * _CHUNK, min(self.count, (chunk + 1) * _CHUNK)
            found = await self.request.reader.entries_at(
                self.request.session.id, selection.first + lo, hi - lo
            )
            for offset, message in enumerate(found):
                self._shown[lo + offset] = Shown(selection.first + lo + offset, message)
        else:
            lo, hi = 0, self.count
        self._read.add(chunk)
        if self.request.options.show_thinking and hi > lo:
            await self._read_thinking(lo, hi)

    async def _read_thinking(self, lo: int, hi: int) -> None:
        """Each thinking block goes with the newest candidate at or before it."""
        first, last = self._shown[lo].message, self._shown[hi - 1].message
        found = await self.request.reader.thinking(
            self.request.session.id, first.ord, last.ord_last
        )
        index = lo
        for thought in found:
            while index + 1 < hi and self._shown[index + 1].message.ord <= thought.ord:
                index += 1
            self._thoughts.setdefault(index, []).append(thought)

    async def size(self, index: int, tier: Tier) -> float:
        key = (index, tier)
        if key not in self._sizes:
            lines = self._lines[key] = self._render(await self.shown(index), index, tier)
            size = weigh(lines)
            if self.request.options.show_times:
                # Room for a stamp on the first line, or a reply's indent on every line.
                size += max(token_weight(_STAMP), len(lines) * token_weight(REPLY_INDENT))
            self._sizes[key] = size
        return self._sizes[key]

    def _render(self, shown: Shown, index: int, tier: Tier) -> list[str]:
        request, message = self.request, shown.message
        marks = tuple(
            m for m in request.frame.checkpoints if message.ord <= m.after_ord <= message.ord_last
        )
        thoughts = tuple(self.thoughts(index)) if tier == "whole" else ()
        entry = Entry(label(message, shown.position, request.mode), message, thoughts, marks)
        return tier_lines(entry, tier, request.preview)

    async def group_size(self, lo: int, hi: int) -> float:
        return weigh([await self.group(lo, hi)])

    async def group(self, lo: int, hi: int) -> str:
        """The group line for the candidates at `lo`..`hi`."""
        key = (lo, hi)
        if key not in self._groups:
            members = [(await self.shown(index)).message for index in range(lo, hi + 1)]
            if self.request.mode == "position":
                first, last = self.position(lo), self.position(hi)
            else:
                first, last = members[0].ord, members[-1].ord_last
            span = str(first) if first == last else f"{first}–{last}"
            self._groups[key] = group_line(span, members)
        return self._groups[key]

    def lines(self, entry: Entry, index: int, tier: Tier) -> list[str]:
        """An entry's lines as sized, unless the view added to it (a heading, a stamp, a merged
        run), which sizing left out or reserved."""
        plain = not (entry.headings or entry.stamp or entry.reply or entry.members)
        sized = self._lines.get((index, tier)) if plain else None
        return sized if sized is not None else tier_lines(entry, tier, self.request.preview)


def tier_lines(entry: Entry, tier: Tier, preview: int) -> list[str]:
    if tier == "line":
        line = one_line(entry, LINE_CHARS)
        if entry.reply:
            line = REPLY_INDENT + line
        return [*entry.headings, line, *(checkpoint_line(m) for m in entry.checkpoints)]
    return render_entry(entry, preview if tier == "whole" else min(preview, CARD_CHARS))


def weigh(lines: Sequence[str]) -> float:
    """Estimated tokens of lines joined by newlines, counting one newline after each. One call
    for them all: the estimate of a whole is at most the sum of its parts', so the weights of
    an entry's lines, summed over entries, never fall short of the view's."""
    return sum(token_weight(line) for line in lines) + len(lines) * token_weight("\n")


@dataclass(frozen=True, slots=True)
class Pinned:
    """What a budgeted view of the thread keeps above the left-out entries: the task (the
    first user message) and the goals of open focus layers whose first entry is left out."""

    task: Shown | None
    task_lines: list[str]


async def _task(request: Request, budget: int) -> Pinned:
    reader, session = request.reader, request.session
    first = await reader.entries_between(session.id, 0, session.next_number, ("user",), limit=1)
    found = first[0] if first else None
    if found is None:
        return Pinned(None, [])
    (position,) = await reader.positions_of(session.id, [found.ord])
    task = Shown(position, found)
    entry = Entry(label(found, position, request.mode), found)
    lines = tier_lines(entry, "card", request.preview)
    if weigh(lines) > budget * _PINNED_CARD_SHARE:
        lines = tier_lines(entry, "line", request.preview)
    return Pinned(task, lines)


async def fits_whole(candidates: Candidates, room: float) -> bool:
    """Whether every candidate whole fits `room`; reads back from the newest only as far as
    the room reaches, so a long thread far over it costs what its last entries cost."""
    # An entry whole is at least its label, role and newline, some 6 estimated tokens: a
    # selection of more entries than that leaves room for cannot fit, and is not read.
    if candidates.count * _LEAST_ENTRY_TOKENS > room:
        return False
    used = 0.0
    for index in range(candidates.count - 1, -1, -1):
        used += await candidates.size(index, "whole")
        if used > room:
            return False
    return True


async def budgeted(request: Request, candidates: Candidates, budget: int, pin: bool) -> str:
    """The candidates fitted into `budget` estimated tokens (see the module's docstring)."""
    selection = candidates.selection
    pinned = await _task(request, budget) if pin else Pinned(None, [])
    fixed = weigh(_frame_lines(request, selection, budget))
    room = budget - fixed
    shape = await fit(candidates, room)
    if shape is not None and _pins(pinned, candidates, shape):
        # The task is not shown as an entry of its own: pin it, in room the entries give up.
        room -= weigh(pinned.task_lines)
        shape = await fit(candidates, room)
    for _ in range(_TRIES):
        if shape is None:
            break
        text = await _assemble(request, candidates, shape, budget, pinned)
        excess = estimate_tokens(text) - budget
        if excess <= 0:
            return text
        room -= excess + 1  # merged runs came out larger than their parts: show less
        shape = await fit(candidates, room)
    raise await _too_small(request, candidates, pinned, budget)


def _pins(pinned: Pinned, candidates: Candidates, shape: Fit) -> bool:
    """Whether the task is not shown as an entry of its own (left out, or in a group line)."""
    if pinned.task is None or not candidates.count:
        return False
    top = shape.first + shape.count("group")
    return top >= candidates.count or pinned.task.position < candidates.position(top)


async def _too_small(
    request: Request, candidates: Candidates, pinned: Pinned, budget: int
) -> InvalidRequest:
    # The frame holds the budget's own digits: size it at the minimum it names.
    needed = 0.0 if not candidates.count else await candidates.size(candidates.count - 1, "line")
    minimum = budget
    for _ in range(3):
        fixed = weigh(_frame_lines(request, candidates.selection, minimum))
        minimum = math.ceil(fixed + (weigh(pinned.task_lines) if needed else 0) + needed) + 1
    if not candidates.count:
        return InvalidRequest(
            f"budget_tokens={budget} is below what this view's header and footer need "
            f"(~{minimum} estimated tokens); use at least {minimum}."
        )
    return InvalidRequest(
        f"budget_tokens={budget} is below what the view's header and footer and its newest "
        f"entry as a one-line card need (~{minimum} estimated tokens); use at least {minimum}."
    )


def _frame_lines(request: Request, selection: Selection, budget: int) -> list[str]:
    """Every line a budgeted view may add besides its entries, at its widest: the header, the
    marker, every open layer's goal, and the footer with the largest figures it can hold."""
    session, count = request.session, selection.count
    top = session.live_count
    # The note at its widest: a whole view is never all four tiers of every candidate, but the
    # figures can each reach the count's width; a gap makes `spans` write its longest form.
    gappy = [max(top - 5, 1), top - 3, top - 2, top - 1, top] if selection.shown else [1, top]
    widest = _note(request, budget, (count, count, count, count), [], gappy)
    scope = selection.scope
    footer = footer_line(
        session,
        count,
        [top - 1, top],
        scope,
        request.options.roles,
        count,
        widest,
        scope is not None,
    )
    headings = [focus_heading(layer) for layer in request.frame.layers]
    return [*request.header(), _MARKER, *headings, footer]


async def _assemble(
    request: Request, candidates: Candidates, shape: Fit, budget: int, pinned: Pinned
) -> str:
    """The budgeted view of the fitted candidates, with every option the caller asked for."""
    grouped = shape.count("group")
    top = shape.first + grouped  # the first candidate shown as an entry of its own
    groups = await _group_lines(request, candidates, shape, top)
    entries, trailing, counts = await _entries(request, candidates, shape, top)
    left_out = candidates.positions(0, shape.first)
    figures = (shape.count("whole"), shape.count("card"), shape.count("line"), grouped)
    note = _note(request, budget, figures, left_out, [])
    shown = [candidates.position(i) for i in range(shape.first, candidates.count)]
    scope = candidates.selection.scope
    footer = footer_line(
        request.session,
        len(shown),
        shown,
        scope,
        request.options.roles,
        len(shown) - counts[0] + counts[1],  # merged runs show fewer entries than they hold
        note,
        scope is None,
    )
    first_ord = (await candidates.shown(top)).message.ord if top < candidates.count else 10**18
    left_behind = [
        layer
        for layer in request.frame.layers
        if shape.first + grouped and layer.start_ord < first_ord
    ]
    lines = request.header()
    if _pins(pinned, candidates, shape):
        lines.extend(pinned.task_lines)
    lines.extend(focus_heading(layer) for layer in left_behind)
    if shape.first:
        lines.append(_MARKER)
    return "\n".join([*lines, *groups, *entries, *trailing, footer])


async def _group_lines(request: Request, candidates: Candidates, shape: Fit, hi: int) -> list[str]:
    """The group lines of candidates `shape.first`..`hi - 1`, each with the checkpoints inside."""
    lines: list[str] = []
    index, size = shape.first, shape.per_group
    while index < hi:
        end = index
        block = (candidates.anchor(index) - 1) // size
        while end + 1 < hi and (candidates.anchor(end + 1) - 1) // size == block:
            end += 1
        lines.append(await candidates.group(index, end))
        first = (await candidates.shown(index)).message.ord
        last = (await candidates.shown(end)).message.ord_last
        marks = request.frame.checkpoints
        lines.extend(checkpoint_line(m) for m in marks if first <= m.after_ord <= last)
        index = end + 1
    return lines


async def _entries(
    request: Request, candidates: Candidates, shape: Fit, top: int
) -> tuple[list[str], list[str], tuple[int, int]]:
    """The lines of the candidates shown one by one (from `top` on), decorated as the options
    ask; the lines after them; and how many entries they are, before and after merging."""
    options, session, mode = request.options, request.session, request.mode
    indexes = range(top, candidates.count)
    shown = [await candidates.shown(i) for i in indexes]
    tiers: list[str] = list(shape.tiers[top - shape.first :])
    thinking = [
        t
        for i, tier in zip(indexes, tiers, strict=True)
        if tier == "whole"
        for t in candidates.thoughts(i)
    ]
    starts = top == 0 and candidates.selection.starts_thread
    if options.show_thinking and starts and not options.roles:
        thinking = [*await request.reader.thinking(session.id, 0, 0), *thinking]
    labels = [label(s.message, s.position, mode) for s in shown]
    built, before = attach(shown, labels, thinking, request.frame.checkpoints, starts)
    first_ord = shown[0].message.ord if shown else 10**18
    in_view = [layer for layer in request.frame.layers if layer.start_ord >= first_ord or not top]
    ends = not shown or shown[-1].position == session.live_count
    built, trailing = focus_headings(built, in_view, ends)
    count = len(built)
    if options.merge_runs:
        built, tiers = merge_runs(built, [s.position for s in shown], mode, tiers)
    if options.show_times:
        built = stamp(built)
    index_of = {s.message.ord: i for i, s in zip(indexes, shown, strict=True)}
    lines = list(before)
    for entry, tier in zip(built, tiers, strict=True):
        lines.extend(candidates.lines(entry, index_of[entry.message.ord], tier))  # type: ignore[arg-type]
    return lines, trailing, (count, len(built))


def _note(
    request: Request,
    budget: int,
    counts: tuple[int, int, int, int],
    left_out: Sequence[int],
    widest: Sequence[int],
) -> str:
    """`Budget ~4,000 tokens: 1 whole, 6 cards, 58 one-line, 96 grouped; 2–103 out:
    frs_view_thread(from=2, to=103)`: entries by how they are shown, then the positions left
    out and the call that shows them. Short: at small budgets it is a tenth of the view."""
    whole, cards, lines, grouped = counts
    shown = [f"{whole:,} whole"]
    shown += [f"{n:,} {what}" for n, what in ((cards, "cards"), (lines, "one-line")) if n]
    shown += [f"{grouped:,} grouped"] if grouped else []
    text = f"Budget ~{budget:,} tokens: {', '.join(shown)}"
    positions = left_out or widest
    if not positions:
        return text
    text += f"; {spans(positions)} out"
    options = request.options
    if options.run_id is not None:
        return text
    args = [f"from={positions[0]}", f"to={positions[-1]}"]
    if options.roles:
        args.append("roles=[" + ", ".join(f'"{r}"' for r in options.roles) + "]")
    prefix = _POSITIONS if request.mode == "absolute" else ""
    return f"{text}: frs_view_thread({prefix}{', '.join(args)})"
