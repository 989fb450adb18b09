"""Arguments that fail schema validation get an error written for a model, not pydantic's."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import TextContent

from server.mcp.errors import friendly_validation
from tests.conftest import Connect

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("frs_view_thread", {"last": 0}, ["last: Input should be greater than or equal to 1 (got 0)"]),
    (
        "frs_record",
        {"messages": [{"role": "user", "tool_calls": [{"name": 3}]}]},
        ["messages.0.tool_calls.0.id: Field required", "messages.0.tool_calls.0.name:"],
    ),
    ("frs_record", {}, ["messages: Field required"]),
    ("frs_compress_range", {"from": "x", "to": 2, "summary": "s"}, ["from: Input should be"]),
    ("get_alias", {"alias": "M.1", "max_chars": 10**9}, ["max_chars: Input should be less"]),
]


class TestValidationErrors:
    @pytest.mark.parametrize(("tool", "arguments", "expected"), CASES)
    async def test_bad_arguments_name_the_field_the_problem_and_the_next_step(
        self, connect: Connect, tool: str, arguments: dict[str, Any], expected: list[str]
    ) -> None:
        async with connect() as client:
            before = await client.call_tool("frs_session", {"action": "list"})
            result = await client.call_tool(tool, arguments)
            after = await client.call_tool("frs_session", {"action": "list"})
        assert result.is_error
        block = result.content[0]
        assert isinstance(block, TextContent)
        text = block.text
        assert text.startswith(f"Error executing tool {tool}: invalid arguments: ")
        for fragment in expected:
            assert fragment in text
        assert text.endswith(
            "Fix these and call again; the tool's input schema gives every field's type and range."
        )
        assert "errors.pydantic.dev" not in text
        assert "[type=" not in text
        assert before.content == after.content, "a refused call changes nothing"

    def test_text_that_is_not_a_validation_report_is_left_alone(self) -> None:
        assert friendly_validation("Error executing tool x: Range 0..2 is outside") is None
        assert friendly_validation("") is None
