"""Which tier each entry of a budgeted view gets: the arithmetic, apart from any text.

Top down, a view over its budget shows: in a room of `SMALL_ROOM` or more, the oldest entries
as cards in a fixed share of it (the rich head); once the thread outgrows the rest, the next
oldest as one-line cards in a fixed share of what is left (the head), then the span left out;
then group lines of `PER_GROUP` entries, one-line cards, cards, and the newest entries whole.
The regions below the heads get fixed shares and start on fixed blocks of positions, and a
region's start moves only when the region overflows, a whole block at a time. What they leave
unused goes to the band (`_filled`): from a start on a block of positions to the newest, each
entry whole when it is small, else a card, so the view fills its budget. The heads depend only
on the oldest entries, and the band's form of an entry on the entry alone: an append adds
below the band, the rare one that moves a start changes the view only from there on, and none
changes the heads, so a prompt cache over the view keeps hitting. In a room under
`SMALL_ROOM` there is no band: the head leaves no room for group lines, and the one-line cards
below it start on blocks of `_SMALL_TAIL_BLOCK` positions and also take what the frame did not
need.

A room is shared out among the tiers by a `Shape`, which also sizes the blocks of positions
each region starts on. `place` decides what the room alone decides, once per room;
`Placement.spend` then gives the band (or a small room's one-line cards) what the frame did not
need, without placing the heads again. Both see the entries only through a `Sizer` (what each
adds to the view in each tier), so this module knows nothing of rendering;
`frs.views.candidates` is the sizer a view uses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol

Tier = Literal["whole", "card", "line", "group"]
# Below this room for entries, most of it goes to group lines (see `Shape`).
SMALL_ROOM = 2_500
# Typical estimated tokens of a card, a one-line card (with its facts: 50 on the corpus) and a
# group line: they size the blocks a region starts on, so that a region's start moves about
# once per half of what it holds.
_CARD_TOKENS = 90
_LINE_TOKENS = 50
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
    spread: float = 1.0  # what a line block is under what its region holds
    group_spread: float = 1.0

    @classmethod
    def for_room(cls, room: float) -> Shape:
        # Tuned on corpus threads with `python -m bench.cache` (BENCHMARKS.md has the
        # figures): the median kept prefix after 1 and 10 appends at each budget it tries.
        if room >= SMALL_ROOM:
            shares, spread, group_spread, newest = (0.05, 0.09, 0.78), 1.1, 1.5, 0.16
        else:
            # Little room: most of it holds group lines, the one-line cards hold the group
            # being filled, and the newest entry is a card only when a small one fits.
            shares, spread, group_spread, newest = (0.03, 0.04, 0.30), 1.0, 1.0, 0.07
        whole, card, line = (room * share for share in shares)
        group = room - whole - card - line
        return cls.of(whole, card, line, group, spread, group_spread, room * newest)

    @classmethod
    def of(
        cls,
        whole: float,
        card: float,
        line: float,
        group: float,
        spread: float,
        group_spread: float,
        newest_card: float,
    ) -> Shape:
        """The shape of these rooms, its blocks sized by what each region holds."""
        per_group = PER_GROUP
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
            spread,
            group_spread,
        )


def _power_of_two(value: float, low: int, high: int) -> int:
    size = low
    while size * 2 <= min(value, high):
        size *= 2
    return size


# The share of the room the oldest entries keep as one-line cards once the thread outgrows it:
# what an append can change is the rest (at 0.75 no ten-append window of the corpus keeps less
# than 64% at 1,000 and 4,000 tokens; at 0.55, 50%).
_HEAD_SHARE = 0.75
# The band that fills what the regions leave (in a room of `SMALL_ROOM` or more): its start
# moves in blocks of this many positions (half as many in the rest under a rich head that is
# under `SMALL_ROOM`),
# and an entry is whole in it when its whole form takes at most this share of the room.
_FILL_BLOCK = 8
_FILL_WHOLE_SHARE = 1 / 16
# The share of a room of `SMALL_ROOM` or more the oldest entries keep as cards (the rich head),
# and the share of the rest the next ones keep as one-line cards once the thread outgrows it
# (measured on the corpus: at 0.6 no ten-append window keeps less than 55%; at 0.55, 51%).
_RICH_SHARE = 0.6
_RICH_HEAD_SHARE = 0.5
# In a room under `SMALL_ROOM`, the head leaves the group lines no room, and the one-line cards
# below it a few hundred tokens: on blocks of this many positions (a block of 8 one-line cards
# is more than that, which left them empty), with the room the frame did not need. On the
# corpus at budget 1,000, blocks of 8 / 4 / 2: median use 75 / 81 / 86% of the budget in o200k,
# median kept prefix after one append 91 / 94 / 91%, after ten 86 / 79 / 75%, worst window 69%.
_SMALL_TAIL_BLOCK = 2


@dataclass(frozen=True, slots=True)
class Fit:
    """Which candidates a budgeted view shows and how: `first` is the index of the oldest
    shown after the left-out span; `tiers` holds one tier per candidate from `first` on, and
    runs of "group" stand for group lines of the aligned blocks of `per_group` positions they
    fall in. The `head` oldest candidates, when any, are one-line cards above the span."""

    first: int
    tiers: tuple[Tier, ...]
    per_group: int = 8
    # Candidates 0..head-1 are above the left-out span (head..first-1): the first len(rich)
    # in the tiers `rich` holds (the rich head), the others one-line cards.
    head: int = 0
    rich: tuple[Tier, ...] = ()

    def count(self, tier: Tier) -> int:
        return self.tiers.count(tier)


@dataclass(frozen=True, slots=True)
class Placement:
    """What a room decides: `fitted`, the fit of the room itself. A spare (what the view's
    frame turned out not to need) then goes only where `spend` puts it, so the heads and the
    regions above are placed once per room however it is spent."""

    fitted: Fit
    regions: _Regions

    async def spend(self, sizer: Sizer, spare: float) -> Fit:
        """The fit with `spare` more room for the band, or in a room under `SMALL_ROOM` for
        the one-line cards below the head; the regions above keep their room."""
        return await self.regions.spend(sizer, spare) if spare else self.fitted


@dataclass(frozen=True, slots=True)
class _Regions:
    """The heads, each region's room and start, and where a spare may go."""

    shaped: Fit  # the regions; below a small room's head, the walk without that head
    room: float  # what the band gets before the spare
    cap: float | None  # an entry is whole in the band up to this size; None: no band
    bottom: int  # the first candidate below the rich head
    floor: int = 0  # the band starts here or after
    rich: tuple[Tier, ...] = ()
    # In a room under `SMALL_ROOM`: the shape below the head, whose one-line cards take the
    # spare, and where that head ends.
    tail: Shape | None = None
    head: int = 0

    async def spend(self, sizer: Sizer, spare: float = 0.0) -> Fit:
        shaped = self.shaped
        if self.tail is not None:
            tail = replace(self.tail, line=self.tail.line + spare)
            walked = await _walk(sizer, tail, self.head)
            if walked is not None:
                shaped = replace(walked, head=self.head)
        filled = await _filled(sizer, shaped, self.room + spare, self.cap, self.bottom, self.floor)
        if not self.rich:
            return filled
        return replace(filled, head=max(filled.head, len(self.rich)), rich=self.rich)


async def fit(sizer: Sizer, room: float, spare: float = 0.0) -> Fit | None:
    """The tiers of a view whose entries get `room` estimated tokens, and `spare` for the band
    (see `Placement.spend`); None when not even the newest candidate fits as a one-line card."""
    regions = await _place(sizer, room)
    return None if regions is None else await regions.spend(sizer, spare)


async def place(sizer: Sizer, room: float) -> Placement | None:
    """The placement of a view whose entries get `room` estimated tokens; None when not even
    the newest candidate fits as a one-line card."""
    regions = await _place(sizer, room)
    return None if regions is None else Placement(await regions.spend(sizer), regions)


async def _place(sizer: Sizer, room: float) -> _Regions | None:
    """The regions of a view whose entries get `room` estimated tokens (see `place`).

    In a room of `SMALL_ROOM` or more, the oldest entries keep their card form in a fixed
    share of it (the rich head), and the rest of the thread is fitted below them in what is
    left. Once the oldest entry after them no longer fits as a one-line card, the next entries
    keep that form in a fixed share of the rest (the head), and the span left out is the one
    after them. Neither head depends on what the thread adds later, so an append changes the
    view only below them; the room the regions below leave is filled (`_filled`)."""
    if sizer.count == 0:
        return _Regions(Fit(0, ()), room, None, 0)
    shape = Shape.for_room(room)
    cap = max(shape.whole, room * _FILL_WHOLE_SHARE)
    if room >= SMALL_ROOM:
        rich, used = await _rich_head(sizer, room * _RICH_SHARE)
        if rich:
            rest = await _place_from(sizer, room - used, len(rich), _RICH_HEAD_SHARE, cap)
            if rest is not None:
                return replace(rest, rich=tuple(rich))
        return await _place_from(sizer, room, 0, _HEAD_SHARE, cap)
    # Under SMALL_ROOM no band: what it adds there is a few points of the budget, and it
    # would move the tail of a view of a few entries with most appends.
    return await _place_from(sizer, room, 0, _HEAD_SHARE, None, _SMALL_TAIL_BLOCK)


async def _rich_head(sizer: Sizer, room: float) -> tuple[list[Tier], float]:
    """The oldest candidates (never the newest) that fit `room` as cards, and what they
    take."""
    tiers: list[Tier] = []
    used = 0.0
    for index in range(sizer.count - 1):
        size = await sizer.size(index, "card")
        if used + size > room:
            break
        tiers.append("card")
        used += size
    return tiers, used


async def _place_from(
    sizer: Sizer,
    room: float,
    bottom: int,
    head_share: float,
    cap: float | None,
    tail_block: int | None = None,
) -> _Regions | None:
    """The regions of the candidates from `bottom` on in `room` (see `place`); under a
    head, the one-line cards start on blocks of `tail_block` positions, when given, and take
    the spare."""
    last = sizer.count - 1
    shape = Shape.for_room(room)
    plain = await _walk(sizer, shape, bottom)
    if plain is None:
        return None
    if plain.first == bottom and plain.tiers[0] != "group":
        # Under a rich head the band may reach the top of the rest; without one, only the
        # cards and the entries whole: the band's start moving would rewrite the whole view.
        floor = bottom or next((i for i, t in enumerate(plain.tiers) if t != "line"), last)
        return _Regions(plain, room, cap, bottom, floor)
    head, used = await _head_lines(sizer, room * head_share, last, bottom)
    if head == bottom:
        return _Regions(plain, room, cap, bottom)
    taken = min(shape.group, used)
    headed = Shape.of(
        shape.whole,
        shape.card,
        max(0.0, shape.line - used + taken),
        shape.group - taken,
        shape.spread,
        shape.group_spread,
        shape.newest_card,
    )
    if tail_block is not None:
        tail = replace(headed, line_block=tail_block)
        return _Regions(plain, room, cap, bottom, tail=tail, head=head)
    walked = await _walk(sizer, headed, head)
    if walked is None:
        return _Regions(plain, room, cap, bottom)
    return _Regions(replace(walked, head=head), room, cap, bottom)


async def spent(sizer: Sizer, shaped: Fit) -> float:
    """Estimated tokens the entries of `shaped` take, by the sizer's measure."""
    rich = 0.0
    for index, tier in enumerate(shaped.rich):
        rich += await sizer.size(index, tier)
    return rich + await _used(sizer, shaped, len(shaped.rich))


async def _used(sizer: Sizer, shaped: Fit, bottom: int) -> float:
    """Estimated tokens of the candidates of `shaped` from `bottom` on: head, group lines and
    the rest."""
    used = 0.0
    for index in range(bottom, shaped.head):
        used += await sizer.size(index, "line")
    top = shaped.first + shaped.count("group")
    index = shaped.first
    while index < top:
        end = index
        group = (sizer.anchor(index) - 1) // shaped.per_group
        while end + 1 < top and (sizer.anchor(end + 1) - 1) // shaped.per_group == group:
            end += 1
        used += await sizer.group_size(index, end)
        index = end + 1
    for index in range(top, sizer.count):
        used += await sizer.size(index, shaped.tiers[index - shaped.first])
    return used


async def _band_tier(sizer: Sizer, index: int, cap: float) -> Tier:
    return "whole" if await sizer.size(index, "whole") <= cap else "card"


async def _filled(
    sizer: Sizer, shaped: Fit, room: float, cap: float | None, bottom: int, floor: int = 0
) -> Fit:
    """`shaped` with the room it leaves spent on its newest entries: from a start on a block
    of `_FILL_BLOCK` positions to the newest, every entry whole when that is small, else a
    card. Each entry's form in the band depends on the entry alone, so between two moves of
    its start an append only adds below; the start moves by whole blocks, when the band
    outgrows the room. The candidates from `bottom` on are the fit's; the band starts at
    `floor` or after."""
    top = max(bottom, floor, shaped.first + shaped.count("group"))
    last = sizer.count - 1
    if cap is None or top > last:
        return shaped
    left = room - await _used(sizer, shaped, bottom)
    block = _FILL_BLOCK if room >= SMALL_ROOM else _FILL_BLOCK // 2
    extra = 0.0
    start: int | None = None
    bands: list[Tier] = []
    for index in range(last, top - 1, -1):
        tier = await _band_tier(sizer, index, cap)
        base = shaped.tiers[index - shaped.first]
        extra += await sizer.size(index, tier) - await sizer.size(index, base)
        if extra > left:
            break
        bands.append(tier)
        if index == top or _starts_block(sizer.anchor(index), block):
            start = index
    if start is None:
        return shaped
    tiers = list(shaped.tiers)
    for offset, tier in enumerate(bands[: last - start + 1]):
        tiers[last - offset - shaped.first] = tier
    return replace(shaped, tiers=tuple(tiers))


async def _head_lines(sizer: Sizer, room: float, limit: int, bottom: int = 0) -> tuple[int, float]:
    """Where the oldest candidates from `bottom` (before `limit`) that fit `room` as one-line
    cards end, and what they take."""
    used = 0.0
    for index in range(bottom, limit):
        size = await sizer.size(index, "line")
        if used + size > room:
            return index, used
        used += size
    return limit, used


async def _walk(sizer: Sizer, shape: Shape, bottom: int = 0) -> Fit | None:
    """One walk from the newest candidate back to `bottom` (the first it may show), each
    region in its room."""
    last = sizer.count - 1
    newest = await _newest_tier(sizer, last, shape)
    if newest is None:
        return None
    tier, used = newest
    tiers: list[Tier] = [tier]
    # The newest entries whole, entry by entry: this part changes with every append anyway.
    index = last - 1
    whole_left = shape.whole - min(used, shape.whole)
    while index >= bottom and (size := await sizer.size(index, "whole")) <= whole_left:
        tiers.append("whole")
        whole_left -= size
        index -= 1
    # A newest entry larger than its share takes the rest from the cards, then the lines.
    over = max(0.0, used - shape.whole)
    card_room = max(0.0, shape.card - over)
    start = await _region_start(sizer, index, "card", card_room, shape.card_block, bottom=bottom)
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
    while filling > bottom and _group_of(sizer, filling - 1, shape) == _group_of(
        sizer, index, shape
    ):
        filling -= 1
    start = await _region_start(
        sizer, index, "line", line_room, shape.line_block, floor=filling, bottom=bottom
    )
    tiers.extend("line" for _ in range(index - start + 1))
    index = start - 1
    start = await _groups_start(sizer, index, shape, group_room, bottom)
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
    sizer: Sizer,
    end: int,
    tier: Tier,
    room: float,
    block: int,
    floor: int | None = None,
    bottom: int = 0,
) -> int:
    """The smallest index whose position starts a block (or is the first candidate, or
    `floor`) such that the entries from it to `end` fit `room` in `tier`; `end + 1` when none
    does (the region is empty). The start only moves forward as `end` grows, and then by whole
    blocks."""
    start = end + 1
    used = 0.0
    for index in range(end, bottom - 1, -1):
        used += await sizer.size(index, tier)
        if used > room:
            break
        if index in (bottom, floor) or _starts_block(sizer.anchor(index), block):
            start = index
    return start


async def _groups_start(sizer: Sizer, end: int, shape: Shape, room: float, bottom: int = 0) -> int:
    """Like `_region_start`, for group lines: the region holds whole groups of `per_group`
    positions and starts on a block (or at `bottom`, the first candidate it may take)."""
    block, size = shape.group_block, shape.per_group
    start = end + 1
    used = 0.0
    hi = end
    while hi >= bottom:
        lo = hi
        group = (sizer.anchor(hi) - 1) // size
        while lo > bottom and (sizer.anchor(lo - 1) - 1) // size == group:
            lo -= 1
        used += await sizer.group_size(lo, hi)
        if used > room:
            break
        if lo == bottom or _starts_block(sizer.anchor(lo), block):
            start = lo
        hi = lo - 1
    return start


def _starts_block(position: int, block: int) -> bool:
    return (position - 1) % block == 0
