"""The prompt-cache breakpoint a rewritten request adds: on its newest summary, within the API's
rules (at most four breakpoints, a 1-hour one never after a 5-minute one), and only where the
host caches at all."""

from __future__ import annotations

from frs.wire.anchors import Placed, anchor
from frs.wire.requests import Replacement, Span, WireBlock, WireMessage, WireRequest

AT = Span(0, 0)


def message(role: str, *markers: tuple[str, ...]) -> WireMessage:
    """A message of one block per `markers` entry, each with those breakpoints."""
    blocks = tuple(WireBlock("text", AT, "x", markers=m) for m in markers or ((),))
    return WireMessage(role, AT, blocks, AT)  # type: ignore[arg-type]


def request(*messages: WireMessage, head: tuple[str, ...] = ("5m",), auto: str | None = None):
    marked = tuple(
        (i, j, marker)
        for i, message in enumerate(messages)
        for j, block in enumerate(message.blocks)
        for marker in block.markers
    )
    return WireRequest(messages, head_markers=head, automatic_marker=auto, marked=marked)


SUMMARIES = [Placed(0, 2, "SQ.1 cards"), Placed(2, 1, "SQ.2 cards")]
THREAD = (message("user"), message("assistant"), message("user"), message("user", ("5m",)))


class TestAnchor:
    def test_the_newest_summary_gets_a_five_minute_breakpoint(self):
        assert anchor(request(*THREAD), SUMMARIES, (), ()) == ("SQ.2 cards", "5m")

    def test_newest_is_by_place_not_by_order_of_placing(self):
        placed = [Placed(2, 0, "later"), Placed(2, 2, "last in its message"), Placed(0, 2, "a")]
        assert anchor(request(*THREAD), placed, (), ()) == ("last in its message", "5m")

    def test_a_request_that_sets_no_breakpoint_gets_none(self):
        bare = (message("user"), message("assistant"), message("user"))
        assert anchor(request(*bare, head=()), SUMMARIES, (), ()) is None

    def test_four_breakpoints_leave_no_slot(self):
        full = request(*THREAD, head=("5m", "5m", "5m"))
        assert anchor(full, SUMMARIES, (), ()) is None
        assert anchor(request(*THREAD, head=("5m", "5m")), SUMMARIES, (), ()) is not None

    def test_a_top_level_automatic_breakpoint_takes_a_slot(self):
        full = request(*THREAD, head=("5m", "5m"), auto="5m")
        assert anchor(full, SUMMARIES, (), ()) is None

    def test_breakpoints_of_replaced_messages_and_dropped_blocks_are_not_spent(self):
        marked = (message("user"), message("assistant", ("5m",)), message("user", ("5m",)))
        thread = (*marked, message("assistant"), message("user", ("5m",)))
        crowded = request(*thread, head=("5m",))  # 4 with the replaced message's
        placed = [Placed(0, 2, "cards")]
        assert anchor(crowded, placed, (), ()) is None
        assert anchor(crowded, placed, (Replacement(1, 2, None),), ()) == ("cards", "5m")
        assert anchor(crowded, placed, (), ((1, 0), (2, 0))) == ("cards", "5m")

    def test_a_one_hour_breakpoint_after_it_makes_it_one_hour(self):
        later = (message("user"), message("assistant"), message("user", ("1h",)))
        assert anchor(request(*later, head=("1h",)), [Placed(0, 2, "c")], (), ()) == ("c", "1h")
        assert anchor(request(*later, head=(), auto="1h"), [Placed(0, 2, "c")], (), ()) == (
            "c",
            "1h",
        )

    def test_a_block_after_it_in_its_own_message_counts_as_after(self):
        # Placed first in message 2 (order 0): that message's own 1-hour breakpoint is after.
        later = (message("user"), message("assistant"), message("user", ("1h",)))
        assert anchor(request(*later, head=()), [Placed(2, 0, "c")], (), ()) == ("c", "1h")
        # Placed last in it (order 2): the breakpoint is before, a 5-minute anchor is fine.
        assert anchor(request(*later, head=()), [Placed(2, 2, "c")], (), ()) == ("c", "5m")

    def test_no_breakpoint_where_only_a_one_hour_one_fits_after_a_five_minute_one(self):
        later = (message("user"), message("assistant"), message("user", ("1h",)))
        assert anchor(request(*later, head=("5m",)), [Placed(0, 2, "c")], (), ()) is None

    def test_nothing_placed_nothing_anchored(self):
        assert anchor(request(*THREAD), [], (), ()) is None
