"""`frs.views.fitting.fit` on its own: hand-built sizes, no store, no text.

A `Sizes` is a thread of candidates at positions 1..n whose estimated tokens per tier are given
outright, so each test says what fits and what it costs in plain numbers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frs.views.fitting import PER_GROUP, Fit, Shape, Tier, fit

RANK = {"group": 0, "line": 1, "card": 2, "whole": 3}


@dataclass
class Sizes:
    """Candidates at positions 1..n: (whole, card, line) estimated tokens each; every group
    line costs `group`. Records which sizes the walk asked for."""

    entries: Sequence[tuple[float, float, float]]
    group: float = 12.0
    asked: list[tuple[int, str]] = field(default_factory=list)
    count: int = field(init=False)

    def __post_init__(self) -> None:
        self.count = len(self.entries)

    def position(self, index: int) -> int:
        return index + 1

    def anchor(self, index: int) -> int:
        return index + 1

    async def size(self, index: int, tier: Tier) -> float:
        self.asked.append((index, tier))
        whole, card, line = self.entries[index]
        return {"whole": whole, "card": card, "line": line}[tier]

    async def group_size(self, lo: int, hi: int) -> float:
        assert (lo // PER_GROUP) == (hi // PER_GROUP), "a group line spans one aligned group"
        return self.group


def run_fit(sizes: Sizes, room: float) -> Fit | None:
    return asyncio.run(fit(sizes, room))


def uniform(count: int, whole: float, card: float, line: float) -> Sizes:
    return Sizes([(whole, card, line)] * count)


def tiers_by_index(fitted: Fit, count: int) -> dict[int, Tier | None]:
    """Each candidate's tier: "line" for the head, None for the left-out span."""
    shown: dict[int, Tier | None] = dict.fromkeys(range(count))
    for index in range(fitted.head):
        shown[index] = "line"
    for offset, tier in enumerate(fitted.tiers):
        shown[fitted.first + offset] = tier
    return shown


def cost(sizes: Sizes, fitted: Fit) -> float:
    """What the fitted candidates take: the head as one-line cards, each entry in its tier,
    one group line per aligned group of `per_group` positions a run of "group" touches."""
    total = 0.0
    groups: set[int] = set()
    for index, tier in tiers_by_index(fitted, sizes.count).items():
        whole, card, line = sizes.entries[index]
        if tier == "group":
            groups.add((sizes.anchor(index) - 1) // fitted.per_group)
        elif tier is not None:
            total += {"whole": whole, "card": card, "line": line}[tier]
    return total + sizes.group * len(groups)


class TestEdges:
    def test_an_empty_thread_fits_with_nothing_shown(self) -> None:
        assert run_fit(Sizes([]), 1_000) == Fit(0, ())

    def test_a_room_smaller_than_the_newest_one_line_card_fits_nothing(self) -> None:
        # Nothing smaller than a one-line card exists: the caller turns None into an error.
        assert run_fit(uniform(3, 40, 20, 11), 10) is None

    def test_a_room_of_exactly_the_newest_one_line_card_shows_it_alone(self) -> None:
        fitted = run_fit(uniform(3, 40, 20, 10), 10)
        assert fitted == Fit(2, ("line",), PER_GROUP)  # the two older ones are left out

    def test_one_huge_newest_entry_falls_to_a_one_line_card_and_the_rest_still_fit(self) -> None:
        sizes = Sizes([(10, 8, 5)] * 5 + [(50_000, 900, 30)])
        fitted = run_fit(sizes, 1_000)
        assert fitted is not None
        assert fitted.tiers[-1] == "line"  # whole and card are both over their shares
        assert cost(sizes, fitted) <= 1_000
        assert fitted.first == 0
        assert len(fitted.tiers) == 6

    def test_one_huge_old_entry_shrinks_and_the_newer_ones_stay_whole(self) -> None:
        sizes = Sizes([(50_000, 900, 30)] + [(10, 8, 5)] * 5)
        fitted = run_fit(sizes, 1_000)
        assert fitted is not None
        assert fitted.first == 0
        assert fitted.tiers[0] == "line"
        assert fitted.tiers[-3:] == ("whole",) * 3  # what the newest whole share (30) holds
        assert cost(sizes, fitted) <= 1_000


class TestWhatFits:
    def test_entries_that_fit_the_newest_share_are_all_whole(self) -> None:
        # A room of 1,000 gives the newest entries whole 3% (30 tokens): three of 10 each.
        fitted = run_fit(uniform(3, 10, 8, 5), 1_000)
        assert fitted == Fit(0, ("whole", "whole", "whole"), PER_GROUP)

    def test_the_newest_whole_share_holds_what_it_can_and_older_entries_shrink(self) -> None:
        fitted = run_fit(uniform(10, 10, 8, 5), 1_000)
        assert fitted is not None
        assert fitted.count("whole") == 3
        assert fitted.tiers[-3:] == ("whole", "whole", "whole")
        assert "whole" not in fitted.tiers[:-3]

    def test_a_newest_entry_too_large_whole_becomes_a_card(self) -> None:
        # Whole 100 is over the whole share (30); its card (20) fits the newest card's (70).
        fitted = run_fit(uniform(4, 100, 20, 5), 1_000)
        assert fitted is not None
        assert fitted.tiers[-1] == "card"

    def test_older_entries_become_cards_then_one_line_cards_then_group_lines(self) -> None:
        # The oldest entry's one-line card is over the head's share, so no head forms and the
        # walk's own regions reach back to it.
        sizes = Sizes([(2_000, 900, 800)] + [(60, 30, 10)] * 200)
        fitted = run_fit(sizes, 1_000)
        assert fitted is not None
        assert (fitted.first, fitted.head) == (0, 0)
        assert fitted.tiers[0] == "group"
        assert fitted.tiers[-1] == "card"
        assert {"card", "line", "group"} == set(fitted.tiers)
        assert cost(sizes, fitted) <= 1_000

    @pytest.mark.parametrize("room", [1_000, 4_000])
    def test_one_line_cards_hold_the_group_being_filled(self, room: int) -> None:
        # Group lines stand for whole groups only: the entries after the last whole group are
        # one-line cards, so a group line changes only once its group is complete. (At 4,000
        # the one-line cards start on blocks of 32 positions, a group is 8.)
        for count in range(200, 216):
            sizes = Sizes([(9_000, 3_500, 3_100)] + [(60, 30, 10)] * count)
            fitted = run_fit(sizes, room)
            assert fitted is not None
            assert fitted.head == 0
            assert fitted.count("group")
            assert (fitted.first + fitted.count("group")) % PER_GROUP == 0, count

    def test_a_thread_that_outgrows_the_room_keeps_its_oldest_as_a_head(self) -> None:
        sizes = uniform(3_000, 60, 30, 10)
        fitted = run_fit(sizes, 1_000)
        assert fitted is not None
        # The head: as many of the oldest entries as three quarters of the room holds as
        # one-line cards; the span after them is left out; the newest entries follow.
        assert fitted.head == 75
        assert fitted.first > fitted.head
        assert fitted.tiers[-1] == "card"
        assert cost(sizes, fitted) <= 1_000

    def test_the_walk_reads_only_as_far_back_as_the_room_reaches(self) -> None:
        sizes = uniform(3_000, 60, 30, 10)
        run_fit(sizes, 1_000)
        asked = {index for index, _ in sizes.asked}
        head = {index for index in asked if index < 1_000}
        # The head's entries and the newest ones, not the thousands in between.
        assert len(asked) < 400
        assert head == set(range(len(head)))


class TestShape:
    def test_a_small_room_gives_most_of_itself_to_group_lines(self) -> None:
        shape = Shape.for_room(1_000)
        assert shape.group > shape.line > shape.card > shape.whole
        assert shape.whole + shape.card + shape.line + shape.group == 1_000

    def test_a_large_room_gives_most_of_itself_to_one_line_cards(self) -> None:
        shape = Shape.for_room(10_000)
        assert shape.line > shape.group
        assert abs(shape.whole + shape.card + shape.line + shape.group - 10_000) < 1e-6

    def test_blocks_are_powers_of_two_and_groups_hold_whole_line_blocks(self) -> None:
        for room in (300, 1_000, 4_000, 20_000):
            shape = Shape.for_room(room)
            for block in (shape.card_block, shape.line_block, shape.group_block):
                assert block & (block - 1) == 0
            assert shape.group_block % shape.line_block == 0
            assert shape.line_block % shape.per_group == 0


# An entry whole, as a card (at most what it is whole) and as a one-line card (small by
# construction: `frs.views.render.one_line` caps what it holds).
entry_sizes = st.tuples(st.floats(4, 3_000), st.floats(4, 120), st.floats(3, 60)).map(
    lambda t: (t[0], min(t[0], t[1]), min(t[0], t[1], t[2]))
)


class TestInvariants:
    @pytest.mark.parametrize("count", [50, 100, 300, 3_000])
    @pytest.mark.parametrize("room", [300, 1_000, 4_000])
    def test_long_threads_fill_their_room_without_crossing_it(self, count: int, room: int) -> None:
        # Like entries fill every region to its edge: a region that took one entry too many
        # would cross the room here.
        sizes = uniform(count, 60, 30, 10)
        fitted = run_fit(sizes, room)
        assert fitted is not None
        assert cost(sizes, fitted) <= room

    @given(st.lists(entry_sizes, max_size=300), st.floats(5, 30_000))
    def test_a_fit_never_takes_more_than_its_room(
        self, entries: list[tuple[float, float, float]], room: float
    ) -> None:
        sizes = Sizes(entries)
        fitted = run_fit(sizes, room)
        if fitted is None:
            # Only when not even the newest entry fits as a one-line card (the regions' rooms
            # are shares of the room, so their sum can fall a rounding error short of it).
            assert entries[-1][2] > room * (1 - 1e-9)
        else:
            assert cost(sizes, fitted) <= room + 1e-6

    @given(st.lists(entry_sizes, min_size=1, max_size=300), st.floats(5, 30_000))
    def test_tiers_shrink_from_the_newest_back_and_the_newest_is_always_shown(
        self, entries: list[tuple[float, float, float]], room: float
    ) -> None:
        fitted = run_fit(Sizes(entries), room)
        if fitted is None:
            return
        # Before the newest (which takes the largest tier it fits): whole, cards, one-line
        # cards, group lines, from the newest back.
        ranks = [RANK[tier] for tier in fitted.tiers[:-1]]
        assert ranks == sorted(ranks)
        assert fitted.first + len(fitted.tiers) == len(entries)
        assert 0 <= fitted.head <= fitted.first

    @given(st.lists(entry_sizes, min_size=1, max_size=200), st.data())
    def test_an_append_never_takes_an_entry_out_of_the_head(
        self, entries: list[tuple[float, float, float]], data: st.DataObject
    ) -> None:
        room = data.draw(st.floats(1_000, 5_000))
        before = run_fit(Sizes(entries), room)
        appended = data.draw(st.lists(entry_sizes, min_size=1, max_size=20))
        after = run_fit(Sizes([*entries, *appended]), room)
        if before is not None and after is not None and before.head:
            # A head that reached the thread's end may grow; a full one stays as it was. Below
            # a full rich head, one-line cards join the head once the rest outgrows its room.
            assert after.head >= before.head
            rich = len(before.rich)
            assert after.rich[:rich] == before.rich
            if rich < len(entries) - 1:
                assert after.rich == before.rich
            if rich < before.head < len(entries) - 1:
                assert after.head == before.head

    def test_appends_move_the_start_forward_by_whole_blocks_and_keep_the_head(self) -> None:
        # 1,200 like entries, then one append at a time: the first entry after the left-out
        # span starts a block of positions (of 2, below the head of a room under 2,500
        # tokens), moves only forward, a block at a time, once per block of appends; the head
        # stays as it was.
        block = 2
        starts = []
        for count in range(1_200, 1_264):
            fitted = run_fit(uniform(count, 60, 30, 10), 1_000)
            assert fitted is not None
            assert fitted.head == 75
            assert fitted.first % block == 0
            starts.append(fitted.first)
        moves = [b - a for a, b in itertools.pairwise(starts) if b != a]
        assert moves
        assert all(move == block for move in moves)
        assert len(moves) <= 64 // block
