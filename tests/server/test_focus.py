"""Focus layers (issue 5, the seeds' ReasoningThreadStack), through an in-process MCP client.

`frs_focus(action=open, goal=...)` nests a layer that owns every message recorded after it; the
view shows its goal above its first entry. `close` squashes the whole innermost layer into one
summary in its parent: one ordinary squash, restorable, its originals behind get_alias.
`frs_compress_last` never reaches out of the innermost open layer and `frs_compress_range` may
not cross a layer's start. Every refusal names what to do and changes nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextResourceContents

from tests.calls import body, call, refused, revision, text_of, view
from tests.conftest import Connect

OUTER = "find the race"
INNER = "read flush"


async def users(client: Client, *contents: str) -> None:
    """One user message per text; each is a sentence, so a one-word summary is smaller."""
    messages = [
        {"role": "user", "content": f"Note {c}: something worth keeping."} for c in contents
    ]
    await call(client, "frs_record", messages=messages)


async def focus(client: Client, action: str, **arguments: Any) -> CallToolResult:
    return await call(client, "frs_focus", action=action, **arguments)


async def nested(client: Client) -> None:
    """A B, then layer 1 (C D), then layer 2 (E F G): positions 1 to 7."""
    await users(client, "A", "B")
    await focus(client, "open", goal=OUTER)
    await users(client, "C", "D")
    await focus(client, "open", goal=INNER)
    await users(client, "E", "F", "G")


def note(letter: str, position: int) -> str:
    return f"[{position}] User: Note {letter}: something worth keeping."


class TestOpen:
    async def test_open_nests_layers_and_the_view_shows_each_goal_above_its_first_entry(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await users(client, "A", "B")
            opened = await focus(client, "open", goal=OUTER)
            await users(client, "C", "D")
            await focus(client, "open", goal=INNER)
            await users(client, "E", "F", "G")
            shown = await view(client)
            by_number = await view(client, numbering="absolute")
        assert text_of(opened) == (
            f"Opened focus layer 1 ('{OUTER}'); messages recorded now belong to it · revision 2"
        )
        assert opened.structured_content is not None
        assert opened.structured_content["revision"] == 2
        assert body(shown) == [
            note("A", 1),
            note("B", 2),
            f"▸ focus 1: {OUTER}",
            note("C", 3),
            note("D", 4),
            f"▸ focus 2: {INNER}",
            note("E", 5),
            note("F", 6),
            note("G", 7),
        ]
        assert body(by_number) == body(shown)

    async def test_a_layer_with_no_entries_yet_shows_its_goal_after_the_last_entry(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await users(client, "A")
            await focus(client, "open", goal=OUTER)
            shown = await view(client)
        assert shown.split("\n")[1:3] == [note("A", 1), f"▸ focus 1: {OUTER}"]
        assert shown.split("\n")[3].startswith("· 1 message in 1 entry")

    async def test_a_window_inside_layers_shows_their_goals_above_the_first_entry_shown(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            tail = await view(client, last=2)
            before = await view(client, **{"from": 1, "to": 2})
        assert body(tail) == [
            f"▸ focus 1: {OUTER}",
            f"▸ focus 2: {INNER}",
            note("F", 6),
            note("G", 7),
        ]
        assert body(before) == [note("A", 1), note("B", 2)]

    async def test_a_run_inside_a_layer_merges_under_the_goal_but_not_across_it(
        self, connect: Connect
    ) -> None:
        def step(text: str, call_id: str) -> list[dict[str, Any]]:
            call = {"id": call_id, "name": "bash", "arguments": {"cmd": text}}
            return [
                {"role": "assistant", "content": text, "run_id": "r1", "tool_calls": [call]},
                {"role": "tool", "content": "done", "run_id": "r1", "tool_call_id": call_id},
            ]

        async with connect() as client:
            await call(client, "frs_record", messages=step("ls", "c1"))
            await focus(client, "open", goal=OUTER)
            await call(client, "frs_record", messages=step("cat a.py", "c2"))
            merged = await view(client, merge_runs=True)
        assert re.findall(r"^(▸ .*|\[[^\]]+\])", merged, flags=re.MULTILINE) == [
            "[1–2]",
            f"▸ focus 1: {OUTER}",
            "[3–4]",
        ]


class TestClose:
    async def test_close_squashes_the_whole_innermost_layer_into_one_summary_in_its_parent(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            before = await revision(client)
            closed = await focus(client, "close", summary="flush misses the lock")
            shown = await view(client)
            session = json.loads(_text(await client.read_resource("frs://sessions")))["current"]
            log = json.loads(
                _text(await client.read_resource(f"frs://sessions/{session}/squashes"))
            )
        assert text_of(closed).startswith(
            f"Closed focus layer 2 ('{INNER}'). Squashed focus layer 2 (positions 5–7) "
            "(3 entries, 3 messages) into a summary at position 5. "
        )
        assert closed.structured_content is not None
        assert closed.structured_content["revision"] == before + 1, "one change, one revision"
        [squash] = log["squashes"]
        assert (squash["numbers"], squash["entries"], squash["restored"]) == ([5, 7], 3, False)
        assert body(shown) == [
            note("A", 1),
            note("B", 2),
            f"▸ focus 1: {OUTER}",
            note("C", 3),
            note("D", 4),
            f"[5] Summary of 3 messages ({squash['alias']}): flush misses the lock",
        ]

    async def test_the_closed_layer_is_an_ordinary_squash_restorable_with_its_originals(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            await focus(client, "close", summary="flush misses the lock")
            originals = text_of(await call(client, "get_alias", alias="SQ.1"))
            restored = await call(client, "frs_restore", alias="SQ.1")
            shown = await view(client)
        assert originals.split("\n")[1:] == [
            line
            for letter, number in zip("EFG", (5, 6, 7), strict=True)
            for line in (f"[{number}] User:", f"    Note {letter}: something worth keeping.")
        ]
        assert text_of(restored).startswith("Restored SQ.1: positions 5–7 hold its 3 entries")
        assert body(shown) == [
            note("A", 1),
            note("B", 2),
            f"▸ focus 1: {OUTER}",
            *(note(letter, p) for letter, p in zip("CDEFG", range(3, 8), strict=True)),
        ], "the layer stays closed: its goal is gone, its messages are back in the parent"

    async def test_closing_the_outer_layer_squashes_the_inner_summary_with_it(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            await focus(client, "close", summary="flush misses the lock")
            closed = await focus(client, "close", summary="race found")
            shown = await view(client)
            by_number = await view(client, numbering="absolute")
        assert "Squashed focus layer 1 (positions 3–5) (3 entries, 5 messages)" in text_of(closed)
        assert [line.split(" (SQ")[0] for line in body(shown)] == [
            note("A", 1),
            note("B", 2),
            "[3] Summary of 5 messages",
        ]
        assert body(by_number)[2].startswith("[3–7] Summary of 5 messages")

    async def test_closing_an_empty_layer_squashes_nothing(self, connect: Connect) -> None:
        async with connect() as client:
            await users(client, "A")
            await focus(client, "open", goal=OUTER)
            closed = await focus(client, "close", summary="nothing needed")
            shown = await view(client)
        assert text_of(closed) == f"Closed focus layer 1 ('{OUTER}'). It was empty · revision 3"
        assert body(shown) == [note("A", 1)]

    async def test_a_layer_opened_between_a_call_and_its_result_can_still_be_closed(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call(
                client,
                "frs_record",
                messages=[
                    {"role": "user", "content": "Run the whole suite please, it takes a while."},
                    {
                        "role": "assistant",
                        "content": "Starting it.",
                        "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"cmd": "make"}}],
                    },
                ],
            )
            await focus(client, "open", goal=OUTER)
            await call(
                client,
                "frs_record",
                messages=[
                    {"role": "tool", "tool_call_id": "c1", "content": "ok " * 50},
                    {"role": "assistant", "content": "Suite passes. " * 10},
                ],
            )
            result = await client.call_tool("frs_focus", {"action": "close", "summary": "passes"})
            if result.is_error:  # then the range it names must be one that can be squashed
                named = re.search(r"keeps them together is (\d+)\.\.(\d+)", text_of(result))
                assert named, text_of(result)
                await call(
                    client,
                    "frs_compress_range",
                    **{"from": int(named[1]), "to": int(named[2])},
                    summary="passes",
                )


class TestCompressLast:
    async def test_compress_last_counts_from_the_end_of_the_innermost_layer(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            done = await call(client, "frs_compress_last", count=3, summary="E to G")
            shown = await view(client)
        assert text_of(done).startswith("Squashed positions 5–7 (3 entries, 3 messages)")
        assert body(shown)[-2:] == [f"▸ focus 2: {INNER}", body(shown)[-1]]
        assert body(shown)[-1].startswith("[5] Summary of 3 messages")

    async def test_compress_last_never_reaches_into_the_parent(self, connect: Connect) -> None:
        async with connect() as client:
            await nested(client)
            before = await view(client)
            text = await refused(client, "frs_compress_last", count=4, summary="too far")
            after = await view(client)
        assert text == (
            "Error executing tool frs_compress_last: count=4 reaches out of the open focus layer "
            f"'{INNER}', which holds positions 5–7 (3 entries); squash at most count=3, or close "
            "the layer with frs_focus(action='close', summary=...)."
        )
        assert after == before

    async def test_an_empty_innermost_layer_has_nothing_to_compress(self, connect: Connect) -> None:
        async with connect() as client:
            await nested(client)
            await focus(client, "open", goal="third")
            before = await view(client)
            text = await refused(client, "frs_compress_last", count=1, summary="x")
            after = await view(client)
        assert "the open focus layer 'third' has no entries yet" in text
        assert "never reaches into its parent" in text
        assert after == before

    async def test_after_closing_the_inner_layer_the_outer_one_bounds_compress_last(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            await focus(client, "close", summary="E to G")
            text = await refused(client, "frs_compress_last", count=4, summary="x")
            done = await call(client, "frs_compress_last", count=3, summary="C to G")
        assert f"the open focus layer '{OUTER}', which holds positions 3–5 (3 entries)" in text
        assert text_of(done).startswith("Squashed positions 3–5 (3 entries, 5 messages)")


class TestCompressRange:
    @pytest.mark.parametrize(
        ("first", "last", "boundary", "goal"),
        [(2, 3, 3, OUTER), (4, 5, 5, INNER), (1, 7, 3, OUTER), (3, 6, 5, INNER)],
    )
    async def test_a_range_across_a_layer_start_is_refused_naming_the_boundary(
        self, connect: Connect, first: int, last: int, boundary: int, goal: str
    ) -> None:
        async with connect() as client:
            await nested(client)
            before = await view(client)
            text = await refused(
                client, "frs_compress_range", **{"from": first, "to": last}, summary="x"
            )
            after = await view(client)
        assert text == (
            "Error executing tool frs_compress_range: The range crosses the start of the open "
            f"focus layer '{goal}' at position {boundary}: squash entries before position "
            f"{boundary}, or from {boundary} on, or close the layer with "
            "frs_focus(action='close', summary=...)."
        )
        assert after == before

    async def test_absolute_numbers_across_a_layer_start_are_refused_naming_the_number(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await nested(client)
            await call(client, "frs_compress_range", **{"from": 1, "to": 2}, summary="AB")
            text = await refused(
                client,
                "frs_compress_range",
                **{"from": 4, "to": 5},
                numbering="absolute",
                summary="x",
            )
        # Number 5 sits at position 4 now; a caller counting in numbers is told the number.
        assert (
            f"focus layer '{INNER}' at number 5: squash entries before number 5, or from 5 on"
            in text
        )

    @pytest.mark.parametrize(("first", "last"), [(1, 2), (3, 4), (5, 7), (6, 7)])
    async def test_a_range_on_one_side_of_every_layer_start_is_squashed(
        self, connect: Connect, first: int, last: int
    ) -> None:
        async with connect() as client:
            await nested(client)
            done = await call(
                client, "frs_compress_range", **{"from": first, "to": last}, summary="ok"
            )
            shown = await view(client)
        assert text_of(done).startswith(f"Squashed positions {first}–{last} ")
        assert shown.count("▸ focus") == 2, "both layers stay open"


class TestRefusals:
    async def test_closing_with_no_open_layer_is_a_clear_error(self, connect: Connect) -> None:
        async with connect() as client:
            await users(client, "A")
            text = await refused(client, "frs_focus", action="close", summary="done")
        assert text == (
            "Error executing tool frs_focus: No focus layer is open. Open one with "
            "frs_focus(action='open', goal=...)."
        )

    async def test_opening_past_the_depth_limit_is_a_clear_error(self, connect: Connect) -> None:
        async with connect() as client:
            for depth in range(1, 9):
                opened = await focus(client, "open", goal=f"level {depth}")
                assert text_of(opened).startswith(f"Opened focus layer {depth} ")
            text = await refused(client, "frs_focus", action="open", goal="level 9")
            shown = await view(client)
        assert text == (
            "Error executing tool frs_focus: 8 focus layers are open; the limit is 8. Close the "
            "innermost one first with frs_focus(action='close', summary=...)."
        )
        assert "level 9" not in shown
        assert shown.count("▸ focus") == 8

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            ({"action": "close", "summary": "done"}, "No focus layer is open"),
            ({"action": "open"}, "goal is empty"),
            ({"action": "open", "goal": "two\nlines"}, "goal must be one line"),
            ({"action": "wander"}, "action is 'wander'; use open or close"),
            ({"action": "open", "goal": "late", "expected_revision": 0}, "Stale revision"),
        ],
    )
    async def test_every_refusal_leaves_revision_and_view_unchanged(
        self, connect: Connect, arguments: dict[str, Any], expected: str
    ) -> None:
        async with connect() as client:
            await users(client, "A", "B")
            before, at = await view(client), await revision(client)
            text = await refused(client, "frs_focus", **arguments)
            after, now = await view(client), await revision(client)
        assert expected in text
        assert (after, now) == (before, at)

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            ({"action": "close"}, "The summary is empty"),
            ({"action": "close", "summary": "x" * 9_000}, "8,000"),
            ({"action": "close", "summary": "ok", "expected_revision": 1}, "Stale revision"),
            ({"action": "open", "goal": "deeper", "expected_revision": 1}, "Stale revision"),
        ],
    )
    async def test_refusals_inside_open_layers_change_nothing(
        self, connect: Connect, arguments: dict[str, Any], expected: str
    ) -> None:
        async with connect() as client:
            await nested(client)
            before, at = await view(client), await revision(client)
            text = await refused(client, "frs_focus", **arguments)
            after, now = await view(client), await revision(client)
        assert expected in text
        assert (after, now) == (before, at)


def _text(result: Any) -> str:
    content = result.contents[0]
    assert isinstance(content, TextResourceContents)
    return content.text
