"""frs_record's pairing feedback through MCP: a result for a call id no call made, a second
result for one call, and a call id made again are recorded all the same, each with a warning
line naming messages[index] and the id, in the text and in structured `warnings`."""

from __future__ import annotations

from typing import Any

from mcp import Client

from tests.calls import call, text_of, user, view
from tests.conftest import Connect


def calling(*ids: str) -> dict[str, Any]:
    """An assistant message making one bash call per id."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": i, "name": "bash", "arguments": {"cmd": "ls"}} for i in ids],
    }


def result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "name": "bash", "tool_call_id": call_id, "content": content}


async def record(client: Client, *messages: dict[str, Any]) -> tuple[list[str], list[str]]:
    """frs_record(messages=[...]), which must succeed: its text lines after the first, and
    its structured warnings."""
    done = await call(client, "frs_record", messages=list(messages))
    assert done.structured_content is not None
    first, *rest = text_of(done).split("\n")
    assert first.startswith("Recorded ")
    return rest, done.structured_content["warnings"]


NEVER_MADE = (
    "Warning: messages[{index}] answers call id '{id}', which no recorded call made; exports "
    "send it as plain text."
)


class TestWarnings:
    async def test_a_clean_batch_has_none(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, calling("c1", "c2"), result("c2"), result("c1"))
            lines, warnings = await record(client, calling("c3"), result("c3"))
        assert (lines, warnings) == ([], [])

    async def test_a_result_for_a_call_never_made_is_recorded_with_a_warning(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            lines, warnings = await record(client, user("go"), calling("c1"), result("c9"))
            later, _ = await record(client, result("c8"), calling("c8"))
            shown = await view(client)
        assert lines == warnings == [NEVER_MADE.format(index=2, id="c9")]
        assert later == [NEVER_MADE.format(index=0, id="c8")], "a call after it does not count"
        assert "[3] Tool bash: ok" in shown
        assert "[4] Tool bash: ok" in shown

    async def test_a_second_result_for_one_call_is_named_with_the_first(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            in_batch, _ = await record(client, calling("c1"), result("c1"), result("c1", "again"))
            across, _ = await record(client, result("c1", "once more"))
            fresh, _ = await record(client, calling("c2"))
            answered, _ = await record(client, result("c2"), result("c2", "twice"))
        said = (
            "Warning: messages[{index}] answers call id '{id}' of M.{call}, which {by} already "
            "answered; exports send it as plain text."
        )
        assert in_batch == [said.format(index=2, id="c1", call=1, by="messages[1]")]
        assert across == [said.format(index=0, id="c1", call=1, by="M.2")]
        assert fresh == []
        assert answered == [said.format(index=1, id="c2", call=5, by="messages[0]")]

    async def test_a_call_id_made_again_names_the_first_call_and_the_export_id(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, calling("c1"), result("c1"))
            across, _ = await record(client, user("again"), calling("c1"), result("c1"))
            in_batch, _ = await record(client, calling("run/7"), calling("run/7"))
        said = (
            "Warning: messages[{index}] reuses call id '{id}', made before by {before}; results "
            "with this id now answer this call, and an export that sends both calls renames "
            "this one '{sent}'."
        )
        assert across == [said.format(index=1, id="c1", before="M.1", sent="c1_2")]
        assert in_batch == [said.format(index=1, id="run/7", before="messages[0]", sent="run_7_2")]

    async def test_many_warnings_show_twenty_lines_and_count_the_rest(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            lines, warnings = await record(client, *(result(f"x{i}") for i in range(25)))
            shown = await view(client)
        assert warnings == [NEVER_MADE.format(index=i, id=f"x{i}") for i in range(25)]
        assert lines == [*warnings[:20], "… and 5 more warnings like these."]
        assert "[25] Tool bash: ok" in shown, "nothing was refused"
