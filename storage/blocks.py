"""Live entries counted per block of 1024 ords (table `blocks`), the arithmetic both engines share.

A position (1-based, what the model sees) is the live entries of the blocks below its block
plus those before it inside its block: one short row per block and a scan of at most one block
of the `messages_live` index, however long the thread grows. Every write that changes a live
flag shifts its block's count in the same transaction (`storage.writes`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

BLOCK_BITS = 10  # 1024 ords per block


def block_of(ord_: int) -> int:
    return ord_ >> BLOCK_BITS


def first_ord(block: int) -> int:
    """The lowest ord of `block`."""
    return block << BLOCK_BITS


def block_shifts(changes: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each (ord, delta) summed per block: (block, delta) in block order, none that nets 0."""
    deltas: Counter[int] = Counter()
    for ord_, delta in changes:
        deltas[block_of(ord_)] += delta
    return sorted((block, delta) for block, delta in deltas.items() if delta)


@dataclass(frozen=True, slots=True)
class BlockCounts:
    """The blocks of a session holding live entries, in order, and the live entries before each
    (`before` has one more item: the live entries of them all)."""

    blocks: list[int]
    before: list[int]

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]]) -> BlockCounts:
        """From rows (block, live) of blocks whose live count is above 0, in block order."""
        return cls([row[0] for row in rows], [0, *accumulate(row[1] for row in rows)])

    def seek(self, position: int) -> tuple[int, int] | None:
        """Where the live entry at `position` (1-based) is found: the first ord of the block
        holding it and how many live entries of that block come before it (past the last entry,
        counted from the last block); None when no entry is live."""
        if not self.blocks:
            return None
        # The first block whose running count reaches `position` holds it.
        index = min(bisect_left(self.before, position, 1), len(self.blocks)) - 1
        return first_ord(self.blocks[index]), position - 1 - self.before[index]

    def live_below(self, block: int) -> int:
        """The live entries of the blocks below `block`, whether or not it holds any itself."""
        return self.before[bisect_left(self.blocks, block)]
