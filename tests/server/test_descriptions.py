"""Tool descriptions are prompts the model reads with every request: what, when, an example."""

from __future__ import annotations

from tests.conftest import Connect


class TestDescriptions:
    async def test_every_tool_says_what_it_does_gives_an_example_and_wastes_no_space(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            tools = (await client.list_tools()).tools
        assert len(tools) == 10
        for tool in tools:
            text = tool.description or ""
            lines = text.split("\n")
            assert lines[0].endswith("."), f"{tool.name}: the first line is one sentence"
            assert "Example:" in text, f"{tool.name}: gives an example"
            assert not any(line.startswith("    ") for line in lines if "Example" in line), (
                f"{tool.name}: docstring indentation is not sent to the model"
            )
            assert text == text.strip(), tool.name

    async def test_the_view_tool_mentions_budgets_and_merged_runs(self, connect: Connect) -> None:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        text = tools["frs_view_thread"].description or ""
        assert "budget_tokens=N" in text
        assert "merge_runs=true" in text
