"""The use cases over the real SQLite store: numbering in both modes, the tool-call
pairing rule, absolute-mode edges, nested squash and restore, thinking, checkpoints, and the
revision guard. A refused call must leave the revision and the view exactly as they were."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from frs import (
    AlreadyRestored,
    CoveredByLaterSquash,
    Env,
    FrsError,
    InvalidRequest,
    NewMessage,
    PlanStep,
    PositionOutOfRange,
    SplitsToolCall,
    StaleRevision,
    SummaryNotSmaller,
    ViewOptions,
    pages,
    plans,
    recording,
    replies,
    sessions,
    squashes,
    viewing,
)
from frs.errors import AliasNotFound, InvalidContent, NothingToSquash
from frs.recording import OFFLOAD_CHARS
from storage import SqliteStore, open_database
from tests.frs.conftest import (
    assistant,
    entry_lines,
    open_env,
    thinking,
    tool,
    user,
    view_lines,
)

WORDS = [
    "alpha: the first message of the thread",
    "bravo: a second, somewhat longer message",
    "charlie: the third one, with details",
    "delta: the fourth, adding a fact",
    "echo: the fifth, restating a plan",
    "foxtrot: the sixth and last",
]


@asynccontextmanager
async def service_with(
    tmp_path: Path, messages: list[NewMessage], numbering: str = "position"
) -> AsyncIterator[Env]:
    """A service whose current session (titled "T") holds `messages`."""
    async with open_env(tmp_path / "frs.db") as env:
        await sessions.start(env, "T", numbering=numbering)  # type: ignore[arg-type]
        if messages:
            await recording.record(env, messages)
        yield env


async def state(env: Env) -> tuple[int, str]:
    """Revision and full view (with thinking): what a refused call must not change."""
    session = await sessions.ensure(env)
    return session.revision, await viewing.view(env, ViewOptions(show_thinking=True))


async def refused(env: Env, kind: type[FrsError], call: Callable[[], Awaitable[Any]]) -> FrsError:
    """Run `call`, expect `kind`, and check that nothing changed."""
    before = await state(env)
    with pytest.raises(kind) as caught:
        await call()
    assert await state(env) == before
    return caught.value


class TestNumbering:
    async def test_position_mode_renumbers_after_a_squash(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(c) for c in "ABCD"]) as env:
            # One letter: a two-letter summary would cost 2 estimated tokens, as much as the
            # two one-letter messages it replaces.
            squashed = await squashes.compress_range(env, 2, 3, "B")
            view = await viewing.view(env, ViewOptions())
        assert squashed.position == 2
        assert squashed.replaced == "positions 2–3"
        assert entry_lines(view) == [
            "[1] User: A",
            f"[2] Summary of 2 messages ({squashed.squash.alias}): B",
            "[3] User: D",
        ]
        assert view.split("\n")[-1] == (
            "· 4 messages in 3 entries · user 2, summary 1 · revision 2 · ~3 tokens"
        )

    async def test_absolute_mode_keeps_numbers_and_shows_the_span(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(c) for c in "ABCD"], "absolute") as env:
            squashed = await squashes.compress_range(env, 2, 3, "B")
            absolute = await viewing.view(env, ViewOptions())
            positions = await viewing.view(env, ViewOptions(numbering="position"))
        assert squashed.replaced == "numbers 2–3"
        assert entry_lines(absolute) == [
            "[1] User: A",
            f"[2–3] Summary of 2 messages ({squashed.squash.alias}): B",
            "[4] User: D",
        ]
        assert entry_lines(positions) == [
            "[1] User: A",
            f"[2] Summary of 2 messages ({squashed.squash.alias}): B",
            "[3] User: D",
        ]

    async def test_new_messages_get_the_next_position_and_a_fresh_number(
        self, tmp_path: Path
    ) -> None:
        async with service_with(tmp_path, [user(c) for c in "ABCD"]) as env:
            await squashes.compress_range(env, 2, 3, "B")
            recorded = await recording.record(env, [user("E")])
            absolute = await viewing.view(env, ViewOptions(numbering="absolute"))
            summary = await pages.get_alias(env, "M.5")
            e = await pages.get_alias(env, "M.6")
        # The summary took number 5; numbers are never reused, so E is 6 at position 4.
        assert (recorded.positions, recorded.numbers) == ((4,), (6,))
        assert entry_lines(absolute)[-1] == "[6] User: E"
        assert (summary.text, e.text) == ("B", "E")

    async def test_a_position_session_can_address_numbers(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(c * 8) for c in "ABCDEF"]) as env:
            await squashes.compress_range(env, 2, 3, "BC")
            squashed = await squashes.compress_range(env, 4, 5, "DE", numbering="absolute")
            view = await viewing.view(env, ViewOptions())
        assert (squashed.position, squashed.replaced) == (3, "numbers 4–5")
        assert entry_lines(view) == [
            "[1] User: AAAAAAAA",
            "[2] Summary of 2 messages (SQ.1@" + view.split("(SQ.1@")[1][:8] + "): BC",
            f"[3] Summary of 2 messages ({squashed.squash.alias}): DE",
            "[4] User: FFFFFFFF",
        ]

    async def test_squashing_a_summary_with_its_neighbours_counts_every_original(
        self, tmp_path: Path
    ) -> None:
        async with service_with(tmp_path, [user(c * 8) for c in "ABCDE"]) as env:
            await squashes.compress_range(env, 2, 3, "BC")
            squashed = await squashes.compress_range(env, 2, 3, "BCD")
            view = await viewing.view(env, ViewOptions())
        assert (squashed.squash.count, squashed.squash.covered) == (2, 3)
        assert entry_lines(view)[1] == f"[2] Summary of 3 messages ({squashed.squash.alias}): BCD"
        assert view.split("\n")[-1].startswith("· 5 messages in 3 entries · user 2, summary 1 ·")

    async def test_windows_in_both_modes(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(c * 8) for c in "ABCDEF"]) as env:
            squashed = await squashes.compress_range(env, 2, 4, "BCD")
            by_position = await viewing.view(env, ViewOptions(start=2, end=3))
            by_number = await viewing.view(env, ViewOptions(numbering="absolute", start=3, end=5))
        summary = f"Summary of 3 messages ({squashed.squash.alias}): BCD"
        assert entry_lines(by_position) == [f"[2] {summary}", "[3] User: EEEEEEEE"]
        assert by_position.split("\n")[-1].startswith(
            "· showing 2 entries at positions 2–3 of 4 entries · 6 messages ·"
        )
        # A window starting inside a summary shows the whole summary.
        assert entry_lines(by_number) == [f"[2–4] {summary}", "[5] User: EEEEEEEE"]
        assert by_number.split("\n")[-1].startswith(
            "· showing 2 entries at positions 2–3 of 4 entries · 6 messages ·"
        )


PARALLEL = [
    user("run both searches"),
    assistant("searching", ("c1", "bash", {"cmd": "ls"}), ("c2", "grep", {"query": "x"})),
    tool("c2", "out2: " + "y" * 40, name="grep"),
    tool("c1", "out1: " + "z" * 40),
    assistant("both searches are done now"),
]
# Call id c1 is used twice; each result pairs with the nearest preceding call carrying it.
REPEATED = [
    user("start the work please"),
    assistant("first", ("c1", "bash", {"cmd": "make"})),
    tool("c1", "first output " + "a" * 40),
    assistant("again", ("c1", "bash", {"cmd": "make test"})),
    tool("c1", "second output " + "b" * 40),
    assistant("all done with both runs"),
]


class TestToolCallPairs:
    @pytest.mark.parametrize(
        ("start", "end", "suggested"),
        [(2, 3, (2, 4)), (3, 4, (2, 4)), (3, 3, (2, 4)), (1, 2, (1, 4)), (4, 5, (2, 5))],
    )
    async def test_parallel_calls_stay_with_all_their_results(
        self, tmp_path: Path, start: int, end: int, suggested: tuple[int, int]
    ) -> None:
        async with service_with(tmp_path, PARALLEL) as env:
            error = await refused(
                env, SplitsToolCall, lambda: squashes.compress_range(env, start, end, "s")
            )
        assert isinstance(error, SplitsToolCall)
        assert error.suggested == suggested
        assert str(error) == (
            f"Range {start}..{end} would separate a tool call from its result. The smallest range "
            f"that keeps them together is {suggested[0]}..{suggested[1]}; squash that instead."
        )

    async def test_the_suggested_range_is_accepted(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, PARALLEL) as env:
            squashed = await squashes.compress_range(env, 2, 4, "searched: found x")
            view = await viewing.view(env, ViewOptions())
        assert squashed.squash.count == 3
        assert len(entry_lines(view)) == 3

    async def test_compress_last_names_the_count_that_keeps_pairs_together(
        self, tmp_path: Path
    ) -> None:
        async with service_with(tmp_path, PARALLEL) as env:
            error = await refused(env, InvalidRequest, lambda: squashes.compress_last(env, 2, "s"))
            squashed = await squashes.compress_last(env, 4, "searched: found x")
        assert str(error) == (
            "count=2 would separate a tool call from its result. The smallest count that keeps "
            "them together is 4 (positions 2–5); squash that instead."
        )
        assert squashed.replaced == "positions 2–5"

    @pytest.mark.parametrize("batches", [[6], [2, 1, 1, 2], [1, 1, 1, 1, 1, 1]])
    async def test_a_repeated_call_id_pairs_with_the_nearest_preceding_call(
        self, tmp_path: Path, batches: list[int]
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await sessions.start(env, "T")
            done = 0
            for size in batches:
                await recording.record(env, REPEATED[done : done + size])
                done += size
            for start, end, suggested in [(3, 4, (2, 5)), (5, 6, (4, 6)), (1, 2, (1, 3))]:
                attempt = partial(squashes.compress_range, env, start, end, "s")
                error = await refused(env, SplitsToolCall, attempt)
                assert isinstance(error, SplitsToolCall)
                assert error.suggested == suggested
            # Each call squashes with its own result alone.
            await squashes.compress_range(env, 4, 5, "second run passed")
            await squashes.compress_range(env, 2, 3, "first run passed")
            view = await viewing.view(env, ViewOptions())
        assert len(entry_lines(view)) == 4

    async def test_a_result_far_from_its_call_pulls_in_everything_between(
        self, tmp_path: Path
    ) -> None:
        thread = [
            assistant("checking", ("k", "bash", {"cmd": "sleep 5"})),
            user("while that runs: " + "u" * 30),
            user("and another note " + "v" * 30),
            tool("k", "slept " + "w" * 30),
        ]
        async with service_with(tmp_path, thread) as env:
            first = await refused(
                env, SplitsToolCall, lambda: squashes.compress_range(env, 2, 4, "s")
            )
            second = await refused(
                env, SplitsToolCall, lambda: squashes.compress_range(env, 1, 3, "s")
            )
            await squashes.compress_range(env, 2, 3, "two notes")  # no pair is split
        assert isinstance(first, SplitsToolCall)
        assert isinstance(second, SplitsToolCall)
        assert first.suggested == second.suggested == (1, 4)

    async def test_a_result_for_an_unknown_call_pairs_with_nothing(self, tmp_path: Path) -> None:
        thread = [user("hello there"), tool("nobody", "orphan output " + "o" * 40), user("bye")]
        async with service_with(tmp_path, thread) as env:
            squashed = await squashes.compress_range(env, 2, 2, "orphan")
        assert squashed.replaced == "position 2"

    async def test_a_result_recorded_after_its_call_was_squashed_pairs_with_the_summary(
        self, tmp_path: Path
    ) -> None:
        thread = [
            user("please look into it " + "q" * 20),
            assistant("looking", ("late", "bash", {"cmd": "find /"})),
            user("meanwhile, a note " + "n" * 30),
        ]
        async with service_with(tmp_path, thread) as env:
            await squashes.compress_range(env, 1, 2, "asked; ran find")
            await recording.record(env, [tool("late", "found " + "f" * 40)])
            error = await refused(
                env, SplitsToolCall, lambda: squashes.compress_range(env, 2, 3, "s")
            )
            last = await refused(env, InvalidRequest, lambda: squashes.compress_last(env, 1, "s"))
            await squashes.restore(env, "SQ.1")
            after_restore = await refused(
                env, SplitsToolCall, lambda: squashes.compress_range(env, 3, 4, "s")
            )
        assert isinstance(error, SplitsToolCall)
        assert error.suggested == (1, 3)
        assert "smallest count that keeps them together is 3 (positions 1–3)" in str(last)
        assert isinstance(after_restore, SplitsToolCall)
        assert after_restore.suggested == (2, 4)

    async def test_a_suggestion_that_ends_on_a_summary_ends_at_its_position(
        self, tmp_path: Path
    ) -> None:
        thread = [
            user("question " * 5),
            assistant("calling", ("k", "bash", {"cmd": "ls"})),
            tool("k", "result " * 5),
            user("note four " * 5),
            user("note five " * 5),
        ]
        async with service_with(tmp_path, thread) as env:
            await squashes.compress_range(env, 4, 5, "notes")  # [4] is now the last entry
            by_range = await refused(
                env, SplitsToolCall, lambda: squashes.compress_range(env, 3, 4, "s")
            )
            by_count = await refused(
                env, InvalidRequest, lambda: squashes.compress_last(env, 2, "s")
            )
            accepted = await squashes.compress_range(env, 2, 4, "called ls; notes")
        assert isinstance(by_range, SplitsToolCall)
        assert by_range.suggested == (2, 4)
        assert str(by_count) == (
            "count=2 would separate a tool call from its result. The smallest count that keeps "
            "them together is 3 (positions 2–4); squash that instead."
        )
        assert accepted.live_count == 2


class TestAbsoluteEdges:
    async def test_a_range_must_hold_whole_entries(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS], "absolute") as env:
            await squashes.compress_range(env, 2, 4, "b-c-d")
            starts_inside = await refused(
                env, InvalidRequest, lambda: squashes.compress_range(env, 3, 5, "s")
            )
            ends_inside = await refused(
                env, InvalidRequest, lambda: squashes.compress_range(env, 1, 3, "s")
            )
            inside = await refused(
                env, InvalidRequest, lambda: squashes.compress_range(env, 3, 3, "s")
            )
            nothing = await refused(
                env, NothingToSquash, lambda: squashes.compress_range(env, 7, 7, "s")
            )
            beyond = await refused(
                env, PositionOutOfRange, lambda: squashes.compress_range(env, 6, 8, "s")
            )
            outer = await squashes.compress_range(env, 2, 5, "b-c-d-e")
            view = await viewing.view(env, ViewOptions())
        assert str(starts_inside) == (
            "Number 3 lies inside the summary [2–4]; a range must hold whole entries. "
            "Start at 2 instead, or restore SQ.1 first."
        )
        assert str(ends_inside) == (
            "Number 3 lies inside the summary [2–4]; a range must hold whole entries. "
            "End at 4 instead."
        )
        assert str(inside).startswith("Number 3 lies inside the summary [2–4]")
        assert str(nothing).startswith("Numbers 7–7 hold no entry of the thread")
        assert str(beyond) == (
            "Numbers 6..8 are outside the thread: the thread has numbers 1..7. "
            "View the thread and try again."
        )
        assert outer.position == 2
        assert entry_lines(view) == [
            f"[1] User: {WORDS[0]}",
            f"[2–5] Summary of 4 messages ({outer.squash.alias}): b-c-d-e",
            f"[6] User: {WORDS[5]}",
        ]

    async def test_edges_on_whole_entries_are_accepted(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS], "absolute") as env:
            await squashes.compress_range(env, 3, 4, "c-d")
            squashed = await squashes.compress_range(env, 1, 4, "a-b-c-d")
        assert (squashed.position, squashed.squash.count, squashed.squash.covered) == (1, 3, 4)


class TestNestedSquash:
    async def test_restore_goes_outermost_first_and_gives_the_thread_back(
        self, tmp_path: Path
    ) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            original = await viewing.view(env, ViewOptions())
            first = await squashes.compress_range(env, 2, 3, "b-c")
            second = await squashes.compress_range(env, 4, 5, "e-f")
            # [1] A [2] SQ.1 [3] D [4] SQ.2 -> one summary over SQ.1, D and SQ.2
            outer = await squashes.compress_range(env, 2, 4, "b-c-d-e-f")
            nested = await viewing.view(env, ViewOptions())
            covered = await refused(
                env, CoveredByLaterSquash, lambda: squashes.restore(env, "SQ.1")
            )
            originals = await pages.get_alias(env, "SQ.3")
            inner = await pages.get_alias(env, first.squash.alias)
            restored = await squashes.restore(env, "SQ.3")
            middle = await viewing.view(env, ViewOptions())
            again = await refused(env, AlreadyRestored, lambda: squashes.restore(env, "SQ.3"))
            await squashes.restore(env, "SQ.2")
            await squashes.restore(env, "SQ.1")
            final = await viewing.view(env, ViewOptions())
        assert (outer.squash.count, outer.squash.covered) == (3, 5)
        assert entry_lines(nested) == [
            f"[1] User: {WORDS[0]}",
            f"[2] Summary of 5 messages ({outer.squash.alias}): b-c-d-e-f",
        ]
        assert str(covered) == (
            "SQ.1 is inside the later squash SQ.3, so its summary is not in the thread. "
            "Restore SQ.3 first, then SQ.1."
        )
        assert originals.text.split("\n") == [
            f"[2–3] Summary of 2 messages ({first.squash.alias}):",
            "    b-c",
            "[4] User:",
            f"    {WORDS[3]}",
            f"[5–6] Summary of 2 messages ({second.squash.alias}):",
            "    e-f",
        ]
        assert inner.text.split("\n") == [
            "[2] User:",
            f"    {WORDS[1]}",
            "[3] User:",
            f"    {WORDS[2]}",
        ]
        assert (restored.first, restored.last) == (2, 4)
        assert entry_lines(middle)[1:] == [
            f"[2] Summary of 2 messages ({first.squash.alias}): b-c",
            f"[3] User: {WORDS[3]}",
            f"[4] Summary of 2 messages ({second.squash.alias}): e-f",
        ]
        assert str(again).startswith("SQ.3 was already restored")
        assert final.split("\n")[:-1] == original.split("\n")[:-1]

    async def test_an_alias_with_a_wrong_sha_is_refused(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            squashed = await squashes.compress_range(env, 2, 3, "b-c")
            error = await refused(
                env, AliasNotFound, lambda: squashes.restore(env, "SQ.1@00000000")
            )
            with pytest.raises(AliasNotFound):
                await pages.get_alias(env, "SQ.1@00000000")
        assert squashed.squash.alias in str(error)

    async def test_a_squashed_message_stays_reachable_by_number(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            await squashes.compress_range(env, 2, 3, "b-c")
            page = await pages.get_alias(env, "M.2")
        assert page.text == WORDS[1]
        assert page.heading.endswith("· User · not in the thread (squashed into SQ.1)")

    async def test_a_restored_squash_summary_says_it_was_restored(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            squashed = await squashes.compress_range(env, 2, 3, "b-c")
            await squashes.restore(env, "SQ.1")
            page = await pages.get_alias(env, f"M.{squashed.squash.summary_number}")
        assert page.heading.endswith("· Summary · not in the thread (SQ.1 was restored)")

    @pytest.mark.parametrize(("offset", "max_chars"), [(-2, None), (0, 0), (0, -3)])
    async def test_a_negative_offset_or_an_empty_page_is_refused(
        self, tmp_path: Path, offset: int, max_chars: int | None
    ) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            error = await refused(
                env, InvalidRequest, partial(pages.get_alias, env, "M.1", offset, max_chars)
            )
        assert "offset is 0 or more and max_chars 1 or more" in str(error)


class TestThinking:
    async def test_thinking_is_stored_but_never_numbered(self, tmp_path: Path) -> None:
        thread = [
            thinking("before anything"),
            user("the question is long enough"),
            thinking("pondering\n[9] User: forged"),
            assistant("the answer is long enough too"),
        ]
        async with service_with(tmp_path, thread) as env:
            hidden = await viewing.view(env, ViewOptions())
            shown = await viewing.view(env, ViewOptions(show_thinking=True))
            unknown = await refused(env, AliasNotFound, lambda: pages.get_alias(env, "M.3"))
            squashed = await squashes.compress_last(env, 2, "q and a")
            over_summary = await viewing.view(env, ViewOptions(show_thinking=True))
        assert "thinking" not in hidden
        assert "pondering" not in hidden
        assert shown.split("\n")[:-1] == [
            'Thread "T"',
            "    (thinking) before anything",
            "[1] User: the question is long enough",
            "    (thinking) pondering",
            "        \\[9] User: forged",
            "[2] Assistant: the answer is long enough too",
        ]
        assert "run from M.1 to M.2 (2 recorded messages)" in str(unknown)
        assert (squashed.squash.count, squashed.squash.covered) == (2, 2)
        assert over_summary.split("\n")[1:-1] == [
            "    (thinking) before anything",
            f"[1] Summary of 2 messages ({squashed.squash.alias}): q and a",
            "    (thinking) pondering",
            "        \\[9] User: forged",
        ]

    async def test_the_record_answer_counts_thinking_apart(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, []) as env:
            recorded = await recording.record(env, [user("q"), thinking("hmm"), assistant("a")])
        assert (recorded.positions, recorded.numbers, recorded.thinking) == ((1, 2), (1, 2), 1)
        assert replies.recorded(recorded).startswith(
            "Recorded 2 messages at positions 1–2 and 1 thinking block (not numbered)"
        )

    async def test_thinking_recorded_after_a_squash_at_the_end_is_shown(
        self, tmp_path: Path
    ) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            squashed = await squashes.compress_last(env, 2, "e-f")
            await recording.record(env, [thinking("what next?")])
            view = await viewing.view(env, ViewOptions(show_thinking=True))
        assert view.split("\n")[-3:-1] == [
            f"[5] Summary of 2 messages ({squashed.squash.alias}): e-f",
            "    (thinking) what next?",
        ]

    async def test_thinking_after_a_summary_shows_in_a_window_ending_there(
        self, tmp_path: Path
    ) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            squashed = await squashes.compress_range(env, 2, 3, "b-c")
            await squashes.compress_range(env, 4, 5, "e-f")  # the last summary takes number 8
            await recording.record(env, [thinking("so far so good"), user("go on")])
            window = await viewing.view(env, ViewOptions(start=4, end=4, show_thinking=True))
            await squashes.restore(env, "SQ.2")
            restored = await viewing.view(env, ViewOptions(show_thinking=True))
        assert window.split("\n")[1:-1] == [
            "[4] Summary of 2 messages (SQ.2@" + window.split("(SQ.2@")[1][:8] + "): e-f",
            "    (thinking) so far so good",
        ]
        assert restored.split("\n")[1:-1] == [
            f"[1] User: {WORDS[0]}",
            f"[2] Summary of 2 messages ({squashed.squash.alias}): b-c",
            f"[3] User: {WORDS[3]}",
            f"[4] User: {WORDS[4]}",
            f"[5] User: {WORDS[5]}",
            "    (thinking) so far so good",
            "[6] User: go on",
        ]


class TestCheckpoints:
    async def test_a_checkpoint_stays_after_the_entry_it_followed(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS[:3]]) as env:
            await plans.update(env, checkpoint="found it")
            mark = '— checkpoint "found it" · revision 2'
            await recording.record(env, [user(w) for w in WORDS[3:]])
            plain = await view_lines(env)
            squashed = await squashes.compress_range(env, 2, 4, "b-c-d")
            in_summary = await view_lines(env)
            await squashes.restore(env, "SQ.1")
            restored = await view_lines(env)
        assert plain[3:6] == [f"[3] User: {WORDS[2]}", mark, f"[4] User: {WORDS[3]}"]
        assert in_summary[2:5] == [
            f"[2] Summary of 3 messages ({squashed.squash.alias}): b-c-d",
            mark,
            f"[3] User: {WORDS[4]}",
        ]
        assert restored == plain

    async def test_a_checkpoint_before_any_message_leads_the_view(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, []) as env:
            await plans.update(env, checkpoint="start")
            await recording.record(env, [user("first")])
            lines = await view_lines(env)
        assert lines == ['Thread "T"', '— checkpoint "start" · revision 1', "[1] User: first"]

    async def test_a_checkpoint_after_a_summary_at_the_end(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            squashed = await squashes.compress_last(env, 2, "e-f")
            await plans.update(env, [PlanStep("verify", "doing")], checkpoint="squashed")
            await recording.record(env, [user("next")])
            lines = await view_lines(env, numbering="absolute")
        assert lines[1] == "Plan: ▶ verify"
        assert lines[-3:] == [
            f"[5–6] Summary of 2 messages ({squashed.squash.alias}): e-f",
            '— checkpoint "squashed" · revision 3',
            "[8] User: next",
        ]


class TestRevision:
    async def test_every_mutation_adds_one_and_nothing_else_does(self, tmp_path: Path) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            session = (await sessions.start(env, "T")).session
            revisions = [session.revision]
            revisions.append((await recording.record(env, [user(w) for w in WORDS[:4]])).revision)
            revisions.append((await recording.record(env, [user(w) for w in WORDS[4:]])).revision)
            revisions.append((await squashes.compress_range(env, 2, 3, "b-c")).revision)
            revisions.append((await squashes.compress_last(env, 2, "e-f")).revision)
            revisions.append((await squashes.restore(env, "SQ.2")).revision)
            plan = await plans.update(env, [PlanStep("x")], checkpoint="both at once")
            revisions.append(plan.session.revision)
            await viewing.view(env, ViewOptions(show_thinking=True))
            await pages.get_alias(env, "SQ.1")
            await sessions.use(env, session.id)
            await sessions.page(env)
            await sessions.squash_log(env)
            revisions.append((await sessions.ensure(env)).revision)
        assert revisions == [0, 1, 2, 3, 4, 5, 6, 6]

    async def test_refused_calls_change_nothing(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            await refused(env, InvalidRequest, lambda: squashes.compress_range(env, 4, 2, "s"))
            await refused(env, PositionOutOfRange, lambda: squashes.compress_range(env, 0, 2, "s"))
            await refused(env, PositionOutOfRange, lambda: squashes.compress_range(env, 5, 7, "s"))
            await refused(env, InvalidRequest, lambda: squashes.compress_last(env, 0, "s"))
            await refused(env, InvalidRequest, lambda: squashes.compress_last(env, 7, "s"))
            await refused(env, InvalidRequest, lambda: squashes.compress_range(env, 1, 2, "  "))
            await refused(
                env, SummaryNotSmaller, lambda: squashes.compress_range(env, 1, 1, "x" * 200)
            )
            await refused(env, AliasNotFound, lambda: squashes.restore(env, "SQ.1"))
            await refused(env, InvalidRequest, lambda: squashes.restore(env, "M.1"))
            await refused(
                env, InvalidRequest, lambda: recording.record(env, [user("ok"), user("\ud800")])
            )
            await refused(env, InvalidRequest, lambda: plans.update(env))

    async def test_a_stale_revision_is_refused_and_lists_the_changes(self, tmp_path: Path) -> None:
        async with service_with(tmp_path, [user(w) for w in WORDS]) as env:
            await squashes.compress_range(env, 2, 3, "b-c")
            await squashes.restore(env, "SQ.1")
            await plans.update(env, [PlanStep("x")], checkpoint="cp")
            attempts: list[Callable[[], Awaitable[Any]]] = [
                lambda: recording.record(env, [user("late")], expected_revision=1),
                lambda: squashes.compress_range(env, 1, 2, "s", expected_revision=1),
                lambda: squashes.compress_last(env, 2, "s", expected_revision=1),
                lambda: squashes.restore(env, "SQ.1", expected_revision=1),
                lambda: plans.update(env, checkpoint="cp2", expected_revision=1),
            ]
            errors = [await refused(env, StaleRevision, attempt) for attempt in attempts]
            ahead = await refused(
                env, StaleRevision, lambda: squashes.compress_last(env, 2, "s", expected_revision=9)
            )
            accepted = await squashes.compress_last(env, 2, "e-f", expected_revision=4)
        for error in errors:
            assert isinstance(error, StaleRevision)
            assert (error.expected, error.actual) == (1, 4)
            assert error.changes == (
                "revision 2: squashed positions 2–3 into SQ.1",
                "revision 3: restored SQ.1",
                "revision 4: plan set to 1 step and checkpoint 'cp'",
            )
            assert str(error) == (
                "Stale revision: you expected revision 1, the session is at revision 4 (since "
                "then: revision 2: squashed positions 2–3 into SQ.1; revision 3: restored SQ.1; "
                "revision 4: plan set to 1 step and checkpoint 'cp'). Nothing was changed. "
                "View the thread again and retry with expected_revision=4."
            )
        assert "(since then: changes not listed)" in str(ahead)
        assert accepted.revision == 5


class TestOffload:
    async def test_a_large_batch_is_checked_and_measured_through_the_offload_a_small_one_not(
        self, tmp_path: Path
    ) -> None:
        """The server passes a worker thread (`anyio.to_thread.run_sync`); this offload runs
        the work inline and notes each time it was given some."""
        given: list[int] = []

        async def offload(work: Callable[[], Any]) -> Any:
            given.append(1)
            return work()

        async with open_database(tmp_path / "frs.db") as db:
            env = Env(SqliteStore(db), offload=offload)
            small = await recording.record(env, [user("short")] * 10)
            assert given == []
            large = await recording.record(env, [user("x" * 1_000)] * (OFFLOAD_CHARS // 1_000 + 1))
            assert given == [1]
            with pytest.raises(InvalidContent):  # the checks run there too, and still refuse
                await recording.record(env, [user("x" * 1_000)] * 300 + [NewMessage("robot", "x")])  # type: ignore[arg-type]
            messages = await pages.get_alias(env, f"M.{large.numbers[-1]}")
        assert small.numbers == tuple(range(1, 11))
        assert messages.text == "x" * 1_000
        assert given == [1, 1]
