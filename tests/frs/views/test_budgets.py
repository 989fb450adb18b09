"""`frs.views.budgets` through `ReasoningService.view`, on small hand-built threads in SQLite: the
fitted text never over its budget, the edge cases, and an append that leaves the top as it was.

(`tests/server/test_budget.py` drives the same views through an MCP client and a 100,000-message
thread; these stay small enough to read.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from frs import InvalidRequest, ReasoningService, ViewOptions
from frs.text import estimate_tokens
from tests.frs.conftest import open_service, user

MARKER = "… entries left out here (the last line says which)"


def text(number: int) -> str:
    return f"message {number}\n" + "\n".join(f"line {j} of message {number}" for j in range(6))


def minimum_of(error: InvalidRequest) -> int:
    """The budget a refusal names: `... use at least 173.`"""
    return int(str(error).rsplit(" ", 1)[1].rstrip("."))


async def budgeted(service: ReasoningService, budget: int) -> str:
    return await service.view(ViewOptions(budget_tokens=budget))


class TestEdges:
    async def test_an_empty_thread_below_its_frame_names_the_minimum_and_that_is_enough(
        self, tmp_path: Path
    ) -> None:
        async with open_service(tmp_path / "frs.db") as service:
            await service.start_session("t")
            with pytest.raises(InvalidRequest, match=r"use at least (\d+)") as refused:
                await budgeted(service, 5)
            assert "header and footer need" in str(refused.value)
            view = await budgeted(service, minimum_of(refused.value))
            assert estimate_tokens(view) <= minimum_of(refused.value)

    async def test_a_budget_smaller_than_one_line_is_refused_and_nothing_changes(
        self, tmp_path: Path
    ) -> None:
        async with open_service(tmp_path / "frs.db") as service:
            await service.record([user(text(n)) for n in range(1, 6)])
            before = await service.view(ViewOptions())
            with pytest.raises(InvalidRequest, match="newest entry as a one-line card need") as no:
                await budgeted(service, 20)
            assert await service.view(ViewOptions()) == before
            view = await budgeted(service, minimum_of(no.value))
            assert estimate_tokens(view) <= minimum_of(no.value)
            entries = [line[:4] for line in view.split("\n") if line.startswith("[")]
            assert entries == ["[1] ", "[5] "]  # the task pinned, the newest as one-line cards

    async def test_one_huge_entry_becomes_a_one_line_card_within_the_budget(
        self, tmp_path: Path
    ) -> None:
        async with open_service(tmp_path / "frs.db") as service:
            await service.record([user("start"), user("x" * 150_000 + "\nend")])
            view = await budgeted(service, 400)
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
        async with open_service(tmp_path / "frs.db") as service:
            await service.record([user(text(n)) for n in range(1, 301)])
            view = await budgeted(service, budget)
            assert estimate_tokens(view) <= budget
            entries = [line for line in view.split("\n") if line.startswith("[")]
            assert entries[-1].startswith("[300] ")


class TestAppends:
    async def test_an_append_keeps_the_head_and_the_marker_byte_identical(
        self, tmp_path: Path
    ) -> None:
        async with open_service(tmp_path / "frs.db") as service:
            await service.record([user(text(n)) for n in range(1, 401)])
            views = [await budgeted(service, 1_000)]
            for n in range(401, 406):
                await service.record([user(text(n))])
                views.append(await budgeted(service, 1_000))
            tops = [view.split("\n")[: view.split("\n").index(MARKER) + 1] for view in views]
            assert len(tops[0]) > 20  # the title, the task and the oldest entries' head
            assert all(top == tops[0] for top in tops)
            assert all(estimate_tokens(view) <= 1_000 for view in views)
