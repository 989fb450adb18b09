"""Requests bounded by size before any of their items is validated (issue 13, section 5)."""

from __future__ import annotations

from typing import Any

from mcp import Client

from tests.calls import call_text, refused, revision, user
from tests.conftest import Connect

# An item pydantic would refuse ("Extra inputs are not permitted"): if it is reached, the
# answer names it; refused on size first, the answer names the size.
BAD_ITEM = {"role": "user", "content": "x", "colour": "red"}


async def schema_of(client: Client, tool: str) -> dict[str, Any]:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    return tools[tool].input_schema


class TestRefusedBySizeFirst:
    async def test_an_oversized_batch_is_refused_on_its_count_before_its_items_are_read(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call_text(client, "frs_record", messages=[user("kept")])
            before = await revision(client)
            text = await refused(client, "frs_record", messages=[BAD_ITEM] * 5_001)
            assert await revision(client) == before
        assert text == (
            "Error executing tool frs_record: 5,001 messages in one call; the limit is 5,000. "
            "Split the batch."
        )

    async def test_an_oversized_message_is_refused_on_its_length_before_the_others_are_read(
        self, connect: Connect
    ) -> None:
        async with connect(max_message_chars=1_000) as client:
            messages = [user("y" * 1_001), *[BAD_ITEM] * 3]
            text = await refused(client, "frs_record", messages=messages)
        assert text == (
            "Error executing tool frs_record: messages[0] has 1,001 characters; the limit is "
            "1,000. Record a shorter excerpt, or split the output into several messages."
        )

    async def test_a_message_making_too_many_calls_is_refused(self, connect: Connect) -> None:
        calls = [{"id": f"c{i}", "name": "ls"} for i in range(1_001)]
        async with connect() as client:
            text = await refused(
                client, "frs_record", messages=[{"role": "assistant", "tool_calls": calls}]
            )
        assert text == (
            "Error executing tool frs_record: messages[0] makes 1,001 tool calls; the limit is "
            "1,000. Record the calls over several assistant messages."
        )

    async def test_too_many_steps_or_ranges_are_refused_before_their_items_are_read(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call_text(client, "frs_record", messages=[user("a"), user("b")])
            steps = await refused(client, "frs_plan", steps=[{"text": "x", "bad": 1}] * 101)
            ranges = await refused(
                client, "frs_compress_range", ranges=[{"from": 1, "bad": 1}] * 101
            )
        assert steps == "Error executing tool frs_plan: 101 steps; a plan holds at most 100."
        assert ranges == (
            "Error executing tool frs_compress_range: 101 ranges in one call; the limit is 100."
        )


class TestPublishedLimits:
    async def test_the_input_schemas_carry_the_limits(self, connect: Connect) -> None:
        async with connect() as client:
            record = await schema_of(client, "frs_record")
            plan = await schema_of(client, "frs_plan")
        assert record["properties"]["messages"]["maxItems"] == 5_000
        message = record["$defs"]["MessageIn"]["properties"]
        assert message["tool_calls"]["maxItems"] == 1_000
        for short in ("name", "tool_call_id", "run_id", "interface_message_id", "created_at"):
            assert message[short]["maxLength"] == 512, short
        call = record["$defs"]["ToolCallIn"]["properties"]
        assert call["id"]["maxLength"] == call["name"]["maxLength"] == 512
        assert plan["properties"]["steps"]["maxItems"] == 100

    async def test_texts_publish_their_sizes_and_positions_start_at_one(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            record = await schema_of(client, "frs_record")
            squash = await schema_of(client, "frs_compress_range")
            last = await schema_of(client, "frs_compress_last")
            focus = await schema_of(client, "frs_focus")
            view = await schema_of(client, "frs_view_thread")
        assert record["$defs"]["MessageIn"]["properties"]["content"]["maxLength"] == 200_000
        ranged = squash["$defs"]["RangeIn"]["properties"]
        for schema in (squash["properties"], ranged, last["properties"], focus["properties"]):
            assert schema["summary"]["maxLength"] == 8_000
        for schema in (squash["properties"], ranged, view["properties"]):
            assert schema["from"]["minimum"] == schema["to"]["minimum"] == 1
        assert last["properties"]["count"]["minimum"] == 1

    async def test_get_alias_names_source_aliases(self, connect: Connect) -> None:
        async with connect() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
        described = tools["get_alias"].input_schema["properties"]["alias"]["description"]
        assert "source" in described
        assert "H.main" in described
        assert "source" in (tools["get_alias"].description or "")
