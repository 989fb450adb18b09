"""The per-block arithmetic behind positions (storage/blocks.py), against counting every entry.

The contract suite proves positions through both engines; these pin the pure part on its own,
over threads whose live entries are spread, bunched and gapped across blocks at random.
"""

from __future__ import annotations

from collections import Counter
from itertools import accumulate

from hypothesis import given
from hypothesis import strategies as st

from storage.blocks import BLOCK_BITS, BlockCounts, block_of, block_shifts, first_ord

BLOCK = 1 << BLOCK_BITS
# Ords bunched in a few blocks, with whole blocks between them empty.
live_ords = st.lists(
    st.builds(lambda block, at: block * BLOCK + at, st.integers(0, 6), st.integers(0, BLOCK - 1)),
    unique=True,
    max_size=60,
).map(sorted)


def counts_of(ords: list[int]) -> BlockCounts:
    per_block = sorted(Counter(block_of(o) for o in ords).items())
    return BlockCounts.from_rows(per_block)


class TestBlockCounts:
    @given(ords=live_ords, data=st.data())
    def test_seek_finds_the_block_and_the_entries_before_a_position(
        self, ords: list[int], data: st.DataObject
    ) -> None:
        counts = counts_of(ords)
        if not ords:
            assert counts.seek(1) is None
            return
        position = data.draw(st.integers(1, len(ords) + 3))
        found = counts.seek(position)
        assert found is not None
        lowest, skip = found
        from_there = [o for o in ords if o >= lowest]
        assert lowest % BLOCK == 0
        assert skip >= 0
        if position <= len(ords):
            assert from_there[skip] == ords[position - 1]
        else:  # past the end: still a window that ends with the thread
            assert skip >= len(from_there)

    @given(ords=live_ords, block=st.integers(0, 8))
    def test_live_below_counts_the_entries_of_every_lower_block(
        self, ords: list[int], block: int
    ) -> None:
        assert counts_of(ords).live_below(block) == sum(block_of(o) < block for o in ords)

    def test_before_runs_from_zero_to_the_live_total(self) -> None:
        counts = BlockCounts.from_rows([(0, 3), (2, 5), (7, 1)])
        assert counts.before == [0, *accumulate([3, 5, 1])]
        assert counts.seek(4) == (first_ord(2), 0)
        assert counts.seek(9) == (first_ord(7), 0)


class TestBlockShifts:
    @given(changes=st.lists(st.tuples(st.integers(0, 10 * BLOCK), st.sampled_from((-1, 1)))))
    def test_shifts_sum_each_blocks_deltas_in_block_order(
        self, changes: list[tuple[int, int]]
    ) -> None:
        expected: Counter[int] = Counter()
        for ord_, delta in changes:
            expected[ord_ // BLOCK] += delta
        shifts = block_shifts(changes)
        assert shifts == sorted(shifts)
        assert dict(shifts) == {block: delta for block, delta in expected.items() if delta}
