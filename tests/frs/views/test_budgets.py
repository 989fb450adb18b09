"""`frs.views.budgets` through `frs.viewing.view`, on small hand-built threads in SQLite: the
fitted text never over its budget, the edge cases, and an append that leaves the top as it was.

(`tests/server/test_budget.py` drives the same views through an MCP client and a 100,000-message
thread; these stay small enough to read.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from frs import Env, InvalidRequest, ViewOptions, sessions, viewing
from frs import recording as frs_recording
from frs.text import estimate_tokens, token_weight
from frs.views import budgets
from frs.views.candidates import weigh
from frs.views.fitting import Fit, Placement, Sizer, place
from tests.frs.conftest import assistant, open_env, user

MARKER = "… entries left out here (the last line says which)"


def text(number: int) -> str:
    return f"message {number}\n" + "\n".join(f"line {j} of message {number}" for j in range(6))


def minimum_of(error: InvalidRequest) -> int:
    """The budget a refusal names: `... use at least 173.`"""
    return int(str(error).rsplit(" ", 1)[1].rstrip("."))


async def budgeted(env: Env, budget: int) -> str:
    return await viewing.view(env, ViewOptions(budget_tokens=budget))


Seen = tuple[float, float, Fit | None]  # the room placed, the spare spent, the fit


class Recorded:
    """A placement that notes its fit, and each fit it is spent into."""

    def __init__(self, placed: Placement, room: float, seen: list[Seen]) -> None:
        self.placed, self.room, self.seen = placed, room, seen
        self.fitted = placed.fitted
        seen.append((room, 0.0, placed.fitted))

    async def spend(self, sizer: Sizer, spare: float) -> Fit:
        fitted = await self.placed.spend(sizer, spare)
        self.seen.append((self.room, spare, fitted))
        return fitted


class TestEdges:
    async def test_an_empty_thread_below_its_frame_names_the_minimum_and_that_is_enough(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await sessions.start(env, "t")
            with pytest.raises(InvalidRequest, match=r"use at least (\d+)") as refused:
                await budgeted(env, 5)
            assert "header and footer need" in str(refused.value)
            view = await budgeted(env, minimum_of(refused.value))
            assert estimate_tokens(view) <= minimum_of(refused.value)

    async def test_a_budget_smaller_than_one_line_is_refused_and_nothing_changes(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user(text(n)) for n in range(1, 6)])
            before = await viewing.view(env, ViewOptions())
            with pytest.raises(InvalidRequest, match="newest entry as a one-line card need") as no:
                await budgeted(env, 20)
            assert await viewing.view(env, ViewOptions()) == before
            view = await budgeted(env, minimum_of(no.value))
            assert estimate_tokens(view) <= minimum_of(no.value)
            entries = [line[:4] for line in view.split("\n") if line.startswith("[")]
            assert entries == ["[1] ", "[5] "]  # the task pinned, the newest as one-line cards

    async def test_one_huge_entry_becomes_a_one_line_card_within_the_budget(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user("start"), user("x" * 150_000 + "\nend")])
            view = await budgeted(env, 400)
            assert estimate_tokens(view) <= 400
            entries = [line for line in view.split("\n") if line.startswith("[")]
            assert entries[0] == "[1] User: start"
            assert entries[1].startswith("[2] User: ")
            assert "M.2" in entries[1]
            assert len(view) < 2_000


class TestNeverOver:
    @pytest.mark.parametrize("budget", [200, 300, 1_000, 4_000])
    async def test_a_fitted_view_stays_within_its_budget_and_ends_at_the_newest(
        self, tmp_path: Path, budget: int
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user(text(n)) for n in range(1, 301)])
            view = await budgeted(env, budget)
            assert estimate_tokens(view) <= budget
            entries = [line for line in view.split("\n") if line.startswith("[")]
            assert entries[-1].startswith("[300] ")


class TestAppends:
    async def test_an_append_keeps_the_head_and_the_marker_byte_identical(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user(text(n)) for n in range(1, 401)])
            views = [await budgeted(env, 1_000)]
            for n in range(401, 406):
                await frs_recording.record(env, [user(text(n))])
                views.append(await budgeted(env, 1_000))
            tops = [view.split("\n")[: view.split("\n").index(MARKER) + 1] for view in views]
            assert len(tops[0]) > 20  # the title, the task and the oldest entries' head
            assert all(top == tops[0] for top in tops)
            assert all(estimate_tokens(view) <= 1_000 for view in views)


class TestRoom:
    """The room the entries get: the budget less the frame (header, marker, footer) at its
    widest, sized as the view draws it."""

    @staticmethod
    def fits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float, Fit | None]]:
        """Each fit the budgeted views ask for, as it is made: the room placed, the spare it
        is spent with, and the fit."""
        seen: list[tuple[float, float, Fit | None]] = []

        async def placing(sizer: Sizer, room: float) -> Placement | Recorded | None:
            placed = await place(sizer, room)
            if placed is None:
                seen.append((room, 0.0, None))
                return None
            return Recorded(placed, room, seen)

        monkeypatch.setattr(budgets, "place", placing)
        return seen

    @pytest.mark.parametrize(
        "options",
        [ViewOptions(budget_tokens=1_000), ViewOptions(budget_tokens=1_000, start=1, end=380)],
        ids=["thread", "span"],
    )
    async def test_the_frame_is_sized_as_the_view_draws_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: ViewOptions
    ) -> None:
        # A view of the whole thread draws the short last line (entries, revision, tokens), a
        # span the long one (positions shown, messages, lanes): the frame was sized with the
        # other one, ~37 tokens too many for the first and too few for the second.
        fits = self.fits(monkeypatch)
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user(text(n)) for n in range(1, 401)])
            view = await viewing.view(env, options)
        lines = view.split("\n")
        drawn = estimate_tokens("\n".join([lines[0], MARKER, lines[-1]]))
        reserved = 1_000 - fits[0][0]
        # At its widest the footer names all four tiers, each with the count's width, and a
        # span's positions in their longest form: some 15 tokens more than the drawn one.
        assert drawn <= reserved <= drawn + 20, (drawn, reserved, lines[-1])

    async def test_appends_that_keep_the_figures_widths_keep_the_room(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The revision and the token figure change with every append; the estimator prices a
        # repeated digit lower, so sized as drawn the room moved by a token or so, and a head
        # at its edge lost its last entry (the test above of the head at 1,000 tokens).
        fits = self.fits(monkeypatch)
        async with open_env(tmp_path / "frs.db") as env:
            for n in range(1, 400, 40):  # revision 10 after these: two digits from here on
                await frs_recording.record(env, [user(text(k)) for k in range(n, n + 40)])
            for n in range(401, 420):
                await frs_recording.record(env, [user(text(n))])
                await viewing.view(env, ViewOptions(budget_tokens=1_000))
        rooms = {room for room, _, _ in fits}
        assert len(fits) >= 19
        assert len(rooms) == 1, sorted(rooms)

    def test_the_footer_is_sized_at_its_widest_for_its_figures_widths(self) -> None:
        # Sized with "1010…" in place of each run of digits, the footer's room holds any
        # figures of those widths: a refit of the weights that made a repeated digit dearer
        # than another would break it.
        samples = ["0000", "1111", "1234", "9999", "1000", "2468", "1010", "4444"]
        for width in range(1, 5):
            widest = ("10" * width)[:width]
            for digits in {sample[:width] for sample in samples}:
                line = f"· Budget ~{digits} tokens: revision {digits} · ~{digits}.5k tokens"
                sized = line.replace(digits, widest)
                assert token_weight(sized) >= token_weight(line), (digits, widest)

    async def test_a_small_rooms_unused_frame_room_shows_more_of_the_newest(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        fits = self.fits(monkeypatch)
        grew = 0
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user(text(n)) for n in range(1, 401)])
            for n in range(401, 441):
                await frs_recording.record(
                    env, [user(text(n) if n % 2 else f"ok {n}")]
                )  # two sizes
                fits.clear()
                view = await viewing.view(env, ViewOptions(budget_tokens=1_000))
                assert estimate_tokens(view) <= 1_000
                (_, _, plain), *spent_fits = fits
                if not spent_fits or spent_fits[0][2] in (None, plain):
                    continue
                ((_, spare, spent),) = spent_fits
                assert plain is not None
                assert spent is not None
                assert spare >= 5
                assert spent.head == plain.head
                assert spent.first < plain.first
                below = view.split("\n")[view.split("\n").index(MARKER) + 1 : -1]
                assert len(below) == len(spent.tiers), below
                grew += 1
        assert grew >= 10, grew


class TestPlacedOnce:
    """A view's room is placed (the heads, the regions' rooms and starts) once, twice when the
    task is pinned in room the entries give up; the spare the frame left then goes to the
    band, or a small room's one-line cards, without placing it again."""

    @staticmethod
    def counted(monkeypatch: pytest.MonkeyPatch) -> list[float]:
        rooms: list[float] = []
        # `place`, or what `TestRoom.fits` put in its stead.
        placing: Callable[[Sizer, float], Awaitable[Placement | None]] = vars(budgets)["place"]

        async def counting(sizer: Sizer, room: float) -> Placement | None:
            rooms.append(room)
            return await placing(sizer, room)

        monkeypatch.setattr(budgets, "place", counting)
        return rooms

    async def test_a_small_room_filled_with_its_spare_is_placed_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        fits = TestRoom.fits(monkeypatch)
        rooms = self.counted(monkeypatch)
        filled = 0
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user(text(n)) for n in range(1, 401)])
            for n in range(401, 421):
                await frs_recording.record(env, [user(text(n) if n % 2 else f"ok {n}")])
                fits.clear()
                rooms.clear()
                view = await budgeted(env, 1_000)
                assert estimate_tokens(view) <= 1_000
                assert len(rooms) == 1
                (_, _, plain), *spent_fits = fits
                filled += any(spent not in (None, plain) for _, _, spent in spent_fits)
        assert filled >= 5, filled

    async def test_a_pinned_task_places_the_room_twice(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            # The task (the first user message) is third: the head it would be in is left out.
            others = [user(text(n)) if n % 3 == 0 else assistant(text(n)) for n in range(2, 30)]
            await frs_recording.record(env, [assistant("hello"), *others])
            rooms = self.counted(monkeypatch)
            view = await budgeted(env, 180)
        assert estimate_tokens(view) <= 180
        lines = view.split("\n")
        assert lines[1].startswith("[3] User: message 3 ")  # pinned under the title
        assert MARKER in lines
        assert len(rooms) == 2
        assert rooms[1] < rooms[0]  # the task's lines come out of the entries' room

    async def test_an_empty_view_over_its_budget_is_refused_without_refitting(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await frs_recording.record(env, [user("hi")])
            rooms = self.counted(monkeypatch)
            with pytest.raises(InvalidRequest, match="header and footer need"):
                await viewing.view(env, ViewOptions(budget_tokens=10, roles=("tool",)))
        assert len(rooms) == 1


class TestWeigh:
    LINES = (
        'Thread "t"',
        "[1] User: message 1 line 0 … · M.1",
        "    [tool_use:bash, command:ls -la]",
        "    <output>",
        "",
        "[22] Tool bash: 18 passed, 2 failed · src/a.py, src/b.py",
        "· Budget ~1,000 tokens: 0 whole, 27 one-line; 22–394 out · 400 entries",
    )

    def test_the_sizes_of_lines_add_up_to_the_views_estimate(self) -> None:
        # Each line is priced after the newline before it, as the view draws it: the sum over
        # the lines below the first is exact, with nothing left over to go unused.
        first, *rest = self.LINES
        whole = token_weight("\n".join(self.LINES) + "\n")
        assert token_weight(first + "\n") + weigh(rest) == pytest.approx(whole, abs=1e-9)
        for cut in range(len(rest) + 1):
            assert weigh(rest[:cut]) + weigh(rest[cut:]) == pytest.approx(weigh(rest), abs=1e-9)
