"""`frs.views.layout` on its own: what a view shows around and between hand-built entries.

Every function here is pure, so each test builds a few messages, decorates them, and reads the
lines `render_entry` makes of the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from frs.model import Checkpoint, FocusLayer, Message, Numbering, Session, SessionId
from frs.views.layout import (
    Shown,
    attach,
    focus_headings,
    footer_line,
    label,
    merge_runs,
    restored_gaps,
    spans,
    stamp,
)
from frs.views.render import Entry, checkpoint_line, render_entry
from tests.frs.views.test_render import msg, summary

PREVIEW = 1_200


def mark(name: str, after: int) -> Checkpoint:
    return Checkpoint(name, 1, after, "2025-01-01T00:00:00Z")


def layer(start: int, goal: str = "fix the parser", depth: int = 1) -> FocusLayer:
    return FocusLayer(depth, depth, goal, start, "2025-01-01T00:00:00Z")


def thought(ord_: int, content: str) -> Message:
    return replace(msg(ord_, content, role="assistant", kind="thinking"), number=None)


def session(live: int, **fields: Any) -> Session:
    values: dict[str, Any] = {
        "id": SessionId("s1"),
        "title": "t",
        "goal": "",
        "numbering": "position",
        "revision": 7,
        "created_at": "2025-01-01T00:00:00Z",
        "updated_at": "2025-01-01T00:00:00Z",
        "live_count": live,
        "live_tokens": 1_234,
        "lanes": {"user": live},
        "recorded": live,
        "next_number": live + 1,
    }
    values.update(fields)
    return Session(**values)


def shown(messages: Sequence[Message]) -> list[Shown]:
    return [Shown(i + 1, m) for i, m in enumerate(messages)]


def laid_out(
    messages: Sequence[Message],
    numbering: Numbering = "position",
    thinking: Sequence[Message] = (),
    marks: Sequence[Checkpoint] = (),
    layers: Sequence[FocusLayer] = (),
    merge: bool = False,
    times: bool = False,
) -> list[str]:
    """The lines a whole view shows for `messages` (positions 1..n) with these decorations,
    as `frs.views.thread.plain` lays them out, without the frame and the footer."""
    entries = shown(messages)
    labels = [label(s.message, s.position, numbering) for s in entries]
    built, before = attach(entries, labels, thinking, marks, True)
    built, trailing = focus_headings(built, layers, True)
    if merge:
        positions = [s.position for s in entries]
        built, _ = merge_runs(built, positions, numbering, ["whole"] * len(built))
    if times:
        built = stamp(built)
    return [*before, *(line for e in built for line in render_entry(e, PREVIEW)), *trailing]


def run(number: int, role: str, run_id: str = "r1", **fields: Any) -> Message:
    return msg(number, f"{role} {number}", role=role, run_id=run_id, **fields)


class TestLabel:
    def test_position_numbering_labels_by_position(self) -> None:
        assert label(msg(12, "x"), 3, "position") == "3"

    def test_absolute_numbering_labels_by_number_and_a_summary_by_its_span(self) -> None:
        assert label(msg(12, "x"), 3, "absolute") == "12"
        assert label(summary(4, "s", covered=5, ord_last=8), 2, "absolute") == "4–8"


class TestAttach:
    def test_thinking_goes_with_the_entry_at_or_before_it(self) -> None:
        messages = [msg(1, "a"), msg(3, "b")]
        built, before = attach(shown(messages), ["1", "2"], [thought(2, "hmm")], [], True)
        assert before == []
        assert [len(e.thinking) for e in built] == [1, 0]

    def test_thinking_before_the_first_entry_leads_the_view(self) -> None:
        built, before = attach(shown([msg(5, "a")]), ["1"], [thought(2, "early")], [], True)
        assert before == ["    (thinking) early"]
        assert built[0].thinking == ()

    def test_a_mark_before_every_entry_shows_only_when_the_view_starts_the_thread(self) -> None:
        marks = [mark("start", 0)]
        _, from_start = attach(shown([msg(1, "a")]), ["1"], [], marks, True)
        _, window = attach(shown([msg(1, "a")]), ["1"], [], marks, False)
        assert from_start == [checkpoint_line(marks[0])]
        assert window == []

    def test_a_mark_follows_the_entry_whose_span_holds_it_and_is_dropped_otherwise(self) -> None:
        messages = [summary(1, "s", covered=3, ord_last=3), msg(4, "b")]
        built, _ = attach(shown(messages), ["1", "2"], [], [mark("in", 2), mark("gone", 9)], True)
        assert [[m.name for m in e.checkpoints] for e in built] == [["in"], []]


class TestRestoredGaps:
    def entries(self, *messages: Message) -> list[Entry]:
        return [Entry(str(m.ord), m) for m in messages]

    def test_a_restored_summarys_number_stands_above_the_first_entry_past_it(self) -> None:
        entries = restored_gaps(self.entries(msg(10, "a"), msg(12, "b")), [(11, 3)], 9)
        assert [e.headings for e in entries] == [(), ("[11] (summary SQ.3, restored)",)]

    def test_a_number_inside_an_entrys_span_or_before_the_view_is_not_a_gap(self) -> None:
        spanning = summary(10, "s", covered=3, ord_last=12)
        assert restored_gaps(self.entries(spanning, msg(13, "b")), [(11, 1)], 9)[1].headings == ()
        assert restored_gaps(self.entries(msg(10, "a")), [(8, 1)], 9)[0].headings == ()


class TestFocusHeadings:
    def test_a_layers_goal_stands_above_its_first_entry(self) -> None:
        lines = laid_out([msg(1, "a"), msg(2, "b")], layers=[layer(2)])
        assert lines == ["[1] User: a", "▸ focus 1: fix the parser", "[2] User: b"]

    def test_a_layer_with_no_entry_yet_closes_a_view_that_reaches_the_end(self) -> None:
        _built, trailing = focus_headings([Entry("1", msg(1, "a"))], [layer(2)], True)
        assert trailing == ["▸ focus 1: fix the parser"]
        assert focus_headings([Entry("1", msg(1, "a"))], [layer(2)], False)[1] == []


class TestMergeRuns:
    def test_one_runs_adjacent_assistant_and_tool_messages_become_one_entry(self) -> None:
        messages = [msg(1, "go"), run(2, "assistant"), run(3, "tool"), run(4, "assistant")]
        entries = [Entry(str(m.ord), m) for m in messages]
        merged, tiers = merge_runs(entries, [1, 2, 3, 4], "position", ["whole"] * 4)
        assert [e.label for e in merged] == ["1", "2–4"]
        assert [m.ord for m in merged[1].members] == [2, 3, 4]
        assert tiers == ["whole", "whole"]

    def test_a_gap_another_run_another_tier_or_a_one_line_card_keeps_them_apart(self) -> None:
        messages = [run(2, "assistant"), run(3, "tool"), run(5, "tool"), run(6, "tool", "r2")]
        entries = [Entry(str(m.ord), m) for m in messages]
        merged, _ = merge_runs(entries, [2, 3, 5, 6], "position", ["whole"] * 4)
        assert [e.label for e in merged] == ["2–3", "5", "6"]
        merged, _ = merge_runs(entries[:2], [2, 3], "position", ["whole", "card"])
        assert [e.label for e in merged] == ["2", "3"]
        merged, _ = merge_runs(entries[:2], [2, 3], "position", ["line", "line"])
        assert [e.label for e in merged] == ["2", "3"]

    def test_in_absolute_numbering_a_merged_entry_spans_its_numbers(self) -> None:
        messages = [run(20, "assistant"), run(21, "tool")]
        entries = [Entry(str(m.ord), m) for m in messages]
        merged, _ = merge_runs(entries, [2, 3], "absolute", ["whole"] * 2)
        assert merged[0].label == "20–21"


class TestStamp:
    def test_user_messages_are_stamped_and_their_replies_indented_under_them(self) -> None:
        messages = [
            msg(1, "rules", role="system"),
            msg(2, "early", role="assistant", created_at="2025-01-02T09:00:00Z"),
            msg(3, "hi", created_at="2025-01-02T10:00:30Z"),
            msg(4, "hello", role="assistant"),
        ]
        stamped = stamp([Entry(str(m.ord), m) for m in messages])
        assert [(e.stamp, e.reply) for e in stamped] == [
            ("", False),
            ("2025-01-02 09:00", False),
            ("2025-01-02 10:00", False),
            ("", True),
        ]

    def test_a_message_recorded_without_a_time_gets_no_stamp(self) -> None:
        (entry,) = stamp([Entry("1", msg(1, "hi", created_at=None))])
        assert entry.stamp == ""


class TestFooter:
    def test_a_whole_thread_footer_counts_messages_entries_lanes_revision_and_tokens(self) -> None:
        line = footer_line(session(3), 3, [1, 2, 3], None)
        assert line == "· 3 messages in 3 entries · user 3 · revision 7 · ~1.2k tokens"

    def test_a_window_footer_names_what_it_shows(self) -> None:
        line = footer_line(session(9), 2, [4, 5], "positions 4–5", roles=("user",))
        assert line.startswith("· showing 2 user entries at positions 4–5 of 9 entries · ")

    def test_a_brief_footer_keeps_only_what_an_append_must_change(self) -> None:
        line = footer_line(session(9), 9, [], None, note="Budget ~300 tokens", brief=True)
        assert line == "· Budget ~300 tokens · 9 entries · revision 7 · ~1.2k tokens"

    def test_spans_never_claim_an_entry_that_is_not_there(self) -> None:
        assert spans([4, 5, 6]) == "4–6"
        assert spans([2, 6]) == "2, 6"
        assert spans([2, 6, 9, 12, 40]) == "2, 6, … 40 (5 entries)"
        assert spans([]) == ""


class TestAppends:
    """An append changes no line above the entries it touches: the prefix a host's prompt
    cache holds stays byte-identical."""

    def thread(self, count: int) -> list[Message]:
        roles = ["user", "assistant", "tool", "assistant"]
        return [
            msg(n, f"message {n}\nsecond line", role=roles[n % 4], run_id="r1" if n % 4 else None)
            for n in range(1, count + 1)
        ]

    def test_a_plain_view_keeps_every_line_above_the_new_entry(self) -> None:
        for options in [
            {},
            {"times": True},
            {"marks": [mark("a", 3)], "thinking": [thought(2, "why")]},
            {"layers": [layer(6)]},
        ]:
            before = laid_out(self.thread(9), **options)  # type: ignore[arg-type]
            after = laid_out(self.thread(10), **options)  # type: ignore[arg-type]
            assert after[: len(before)] == before, options

    def test_merged_runs_change_only_the_run_the_append_joins(self) -> None:
        before = laid_out(self.thread(10), merge=True)
        after = laid_out(self.thread(11), merge=True)  # 11 is the next message of run r1
        (run_start,) = [i for i, line in enumerate(before) if line.startswith("[9–10] ")]
        assert after[:run_start] == before[:run_start]
        assert after[run_start].startswith("[9–11] ")

    def test_a_focus_heading_moves_from_the_end_to_above_the_layers_first_entry(self) -> None:
        before = laid_out(self.thread(4), layers=[layer(5)])
        after = laid_out(self.thread(5), layers=[layer(5)])
        assert before[-1] == "▸ focus 1: fix the parser"
        assert after[: len(before)] == before
