"""Issue 22: after frs_restore, an absolute view says why the restored summary's number is
missing, in one short line where the gap is; position numbering shows no such line."""

from __future__ import annotations

import re

from mcp import Client

from frs.text import estimate_tokens
from tests.calls import call, view
from tests.conftest import Connect

GAP = "[11] (summary SQ.1, restored)"


async def restored_thread(client: Client, filler: str = "", late: str = "") -> str:
    """Ten messages, 4..8 squashed (the summary takes number 11) and restored, two more after
    (12, 13); the absolute view before the restore, to compare prefixes. `filler` lengthens
    1..8, `late` 9, 10 and 12."""
    messages = [
        {"role": "user", "content": f"message number {i}" + (filler if i < 9 else late)}
        for i in range(1, 11)
    ]
    await call(client, "frs_record", messages=messages)
    await call(client, "frs_compress_range", **{"from": 4, "to": 8}, summary="four to eight")
    await call(client, "frs_record", messages=[{"role": "user", "content": "message 12" + late}])
    before = await view(client, numbering="absolute")
    await call(client, "frs_restore", alias="SQ.1")
    await call(client, "frs_record", messages=[{"role": "user", "content": "message 13"}])
    return before


def body(text: str) -> list[str]:
    return text.split("\n· ")[0].split("\n")


class TestRestoredGap:
    async def test_the_absolute_view_explains_the_missing_number(self, connect: Connect) -> None:
        async with connect() as client:
            before = await restored_thread(client)
            absolute = await view(client, numbering="absolute")
            positions = await view(client)
        lines = body(absolute)
        at = lines.index(GAP)
        assert lines[at - 1] == "[10] User: message number 10"
        assert lines[at + 1] == "[12] User: message 12"
        assert absolute.count("restored") == 1
        # Before the squash's span nothing changed: the prefix a host's cache holds.
        kept = [a for a, b in zip(body(before), lines, strict=False) if a == b]
        assert kept[-1] == "[3] User: message number 3"
        # Position numbering is contiguous and has no gap line.
        assert "restored" not in positions
        numbers = [int(n) for n in re.findall(r"^\[(\d+)\] User", positions, re.M)]
        assert numbers == list(range(1, 13))

    async def test_a_budgeted_view_keeps_the_line_within_its_budget(self, connect: Connect) -> None:
        async with connect() as client:
            await restored_thread(client, "\nfiller line" * 60)
            fitted = await view(client, numbering="absolute", budget_tokens=700)
        lines = body(fitted)
        assert lines[lines.index(GAP) + 1] == "[12] User: message 12"
        assert re.search(r"^\[10\] User: message number 10", fitted, re.M)
        assert "Budget ~700 tokens" in fitted, "the view was fitted"
        assert estimate_tokens(fitted) <= 700

    async def test_a_budgeted_view_shows_the_line_above_a_card_too(self, connect: Connect) -> None:
        """Where 12 is shown as a card below the one-line head, not as a one-line card."""
        async with connect() as client:
            await restored_thread(client, "\nfiller line" * 60, "\nfiller line" * 8)
            fitted = await view(client, numbering="absolute", budget_tokens=1400)
        lines = body(fitted)
        assert lines[lines.index(GAP) + 1] == "[12] User: message 12"
        assert lines[lines.index(GAP) - 1].startswith("[10] User: message number 10")
        assert "Budget ~1,400 tokens: 1 whole, 1 card" in fitted, "12 is a card"
        assert estimate_tokens(fitted) <= 1400

    async def test_a_window_that_starts_in_the_gap_says_so_first(self, connect: Connect) -> None:
        async with connect() as client:
            await restored_thread(client)
            window = await view(client, numbering="absolute", **{"from": 11, "to": 13})
            after = await view(client, numbering="absolute", **{"from": 12, "to": 13})
            last = await view(client, numbering="absolute", last=2)
        lines = body(window)
        assert lines[lines.index(GAP) + 1] == "[12] User: message 12"
        assert "restored" not in after, "a window after the gap shows no line for it"
        assert "restored" not in last, "nor does a view that merely starts after it"

    async def test_a_later_squash_over_the_gap_spans_it_without_the_line(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await restored_thread(client)
            await call(
                client,
                "frs_compress_range",
                **{"from": 10, "to": 12},
                summary="ten to twelve",
                numbering="absolute",
            )
            absolute = await view(client, numbering="absolute")
        assert "restored" not in absolute
        assert re.search(r"^\[10–12\] Summary of 2 messages", absolute, re.M)
