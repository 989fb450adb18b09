"""The shape of a budgeted view's room, apart from any entry: how it is shared out among the
tiers (entries whole, cards, one-line cards, group lines), the blocks of positions each region
starts on, and the `Sizer` through which `frs.views.fitting` sees the entries.
"""

from __future__ import annotations

from dataclasses import dataclass
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
