"""Whatever the host, the model gets the same guidance.

Gemini CLI and OpenCode hand the model a tool's text content; Claude Code and Codex CLI hand it
the structured content as JSON whenever there is some. So each result's structured content opens
with `message`, the reply text itself: what changed, the revision, how to read and undo a
squash, the warnings. And hosts that defer tools (Claude Code's ToolSearch) find them by
keywords in names, titles and descriptions: each word an agent would search for finds its tool
first.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, Tool

from tests.calls import call, text_of, user
from tests.conftest import Connect

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"
STRUCTURED = {
    "frs_session",
    "frs_record",
    "frs_compress_range",
    "frs_compress_last",
    "frs_restore",
    "frs_plan",
    "frs_focus",
}
READ = re.compile(r'get_alias\(alias="SQ\.(\d+)@[0-9a-f]{8}"\)')
UNDO = re.compile(r'frs_restore\(alias="SQ\.(\d+)"\)')


def forwarded(result: CallToolResult) -> str:
    """What a host that forwards structured content gives the model: the JSON text."""
    assert result.structured_content is not None
    return json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))


def both(result: CallToolResult) -> tuple[str, str]:
    """The reply as each kind of host hands it to the model: the text, and the `message` read
    back from the JSON text (so it survives the JSON's escaping)."""
    data = json.loads(forwarded(result))
    assert next(iter(data)) == "message", "the guidance comes before the data"
    return text_of(result), data["message"]


def assert_tells_how_to_read_and_undo(reply: str, n: int, revision: int) -> None:
    read, undo = READ.search(reply), UNDO.search(reply)
    assert read is not None, reply
    assert undo is not None, reply
    assert (read[1], undo[1]) == (str(n), str(n)), reply
    assert reply.endswith(f"revision {revision}"), reply


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


class TestEveryResult:
    async def test_each_structured_result_opens_with_its_reply_text(self, connect: Connect) -> None:
        async with connect() as client:
            started = await call(client, "frs_session", action="start", title="Guidance")
            sid = (started.structured_content or {})["session_id"]
            results = [
                started,
                await call(client, "frs_session", action="list"),
                await call(client, "frs_session", action="use", session_id=sid),
                await call(client, "frs_session", action="info"),
                await call(client, "frs_record", messages=[user("A" * 40), said("B" * 40)]),
                await call(client, "frs_record", messages=[user("C" * 40), said("D" * 40)]),
                await call(client, "frs_compress_range", **{"from": 1, "to": 2}, summary="AB"),
                await call(client, "frs_compress_last", count=2, summary="CD"),
                await call(client, "frs_restore", alias="SQ.2"),
                await call(client, "frs_plan", steps=[{"text": "fix", "status": "doing"}]),
                await call(client, "frs_focus", action="open", goal="find the race"),
                await call(client, "frs_record", messages=[user("E" * 40), said("F" * 40)]),
                await call(client, "frs_focus", action="close", summary="race found"),
            ]
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for result in results:
            text, message = both(result)
            assert message == text
        for name in STRUCTURED:
            schema = tools[name].output_schema
            assert schema is not None, name
            assert "message" in schema["required"], name
            assert next(iter(schema["properties"])) == "message", name

    async def test_a_squash_says_how_to_read_and_undo_it_and_the_revision_in_both(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call(client, "frs_record", messages=[user(f"message {n} " * 8) for n in range(4)])
            squashed = await call(client, "frs_compress_range", **{"from": 2, "to": 3}, summary="x")
            last = await call(client, "frs_compress_last", count=2, summary="y")
            restored = await call(client, "frs_restore", alias="SQ.2")
        for reply in both(squashed):
            assert_tells_how_to_read_and_undo(reply, 1, 2)
            assert re.search(r"saved ~\d+", reply), reply
        for reply in both(last):
            assert_tells_how_to_read_and_undo(reply, 2, 3)
        for reply in both(restored):
            assert reply == "Restored SQ.2: positions 2–3 hold its 2 entries again · revision 4"

    async def test_recording_warnings_reach_the_model_in_both(self, connect: Connect) -> None:
        orphan = {"role": "tool", "name": "bash", "tool_call_id": "nobody", "content": "ok"}
        async with connect() as client:
            result = await call(client, "frs_record", messages=[user("hi"), orphan])
        for reply in both(result):
            assert reply.startswith("Recorded 2 messages at positions 1–2"), reply
            warning = reply.split("\n")[1]
            assert warning.startswith("Warning"), reply
            assert "messages[1]" in warning, reply
            assert "nobody" in warning, reply
        assert result.structured_content is not None
        assert result.structured_content["warnings"], "the data keeps them too"

    async def test_closing_a_focus_layer_says_how_to_undo_its_squash(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call(client, "frs_focus", action="open", goal="find the race")
            await call(client, "frs_record", messages=[user("G" * 80), said("H" * 80)])
            closed = await call(client, "frs_focus", action="close", summary="race found")
        for reply in both(closed):
            assert reply.startswith("Closed focus layer 1 ('find the race'). Squashed"), reply
            assert_tells_how_to_read_and_undo(reply, 1, 3)

    @pytest.mark.slow
    async def test_over_stdio_the_json_on_the_wire_opens_with_the_message(
        self, db_path: Path
    ) -> None:
        params = StdioServerParameters(command=FRS_MCP, args=["--db", str(db_path)])
        async with Client(params) as client:
            await call(client, "frs_record", messages=[user("first " * 10), said("second " * 10)])
            result = await call(client, "frs_compress_last", count=2, summary="both")
        text, message = both(result)
        assert message == text
        assert_tells_how_to_read_and_undo(message, 1, 2)


# How a host that defers tools finds them: each query word against the tool's name (as the host
# names it, mcp__frs__<name>, split into words), title and description, scored the way such
# searches weigh them (a name word most, then the title, then the first sentence, then the rest;
# whole words only), ties in the order the server lists its tools.
NAME_WORD, NAME_PART, TITLE, FIRST, REST = 10, 5, 4, 2, 1


def first_sentence(description: str) -> str:
    return re.split(r"(?<=[.:;])\s|\n", description, maxsplit=1)[0]


def score(tool: Tool, term: str) -> int:
    words = re.split(r"_+", f"mcp__frs__{tool.name}".lower())
    description = (tool.description or "").lower()
    head = first_sentence(description)
    whole = re.compile(rf"\b{re.escape(term)}\b")
    points = 0
    if term in words:
        points += NAME_WORD
    elif any(term in word for word in words):
        points += NAME_PART
    if whole.search((tool.title or "").lower()):
        points += TITLE
    if whole.search(head):
        points += FIRST
    if whole.search(description[len(head) :]):
        points += REST
    return points


def search(tools: list[Tool], term: str) -> list[str]:
    scored = [(score(tool, term), tool.name) for tool in tools]
    ranked = sorted((item for item in scored if item[0]), key=lambda item: -item[0])
    return [name for _, name in ranked]


class TestKeywordSearch:
    @pytest.mark.parametrize(
        ("term", "first"),
        [
            ("squash", "frs_compress_range"),
            ("compress", "frs_compress_range"),
            ("summarize", "frs_compress_range"),
            ("expand", "get_alias"),
            ("undo", "frs_restore"),
            ("restore", "frs_restore"),
        ],
    )
    async def test_each_word_finds_its_tool_first(
        self, connect: Connect, term: str, first: str
    ) -> None:
        async with connect() as client:
            tools = (await client.list_tools()).tools
        found = search(tools, term)
        assert found[:1] == [first], (term, found)

    async def test_squash_and_compress_find_both_squash_tools_before_any_other(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            tools = (await client.list_tools()).tools
        for term in ("squash", "compress"):
            assert search(tools, term)[:2] == ["frs_compress_range", "frs_compress_last"], term

    async def test_each_first_sentence_names_what_the_tool_is_searched_for(
        self, connect: Connect
    ) -> None:
        wanted = {
            "frs_compress_range": ("squash", "compress", "summarize"),
            "frs_compress_last": ("squash", "compress"),
            "get_alias": ("expand",),
            "frs_restore": ("undo", "restore"),
        }
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name, words in wanted.items():
            head = first_sentence(tools[name].description or "").lower()
            for word in words:
                assert re.search(rf"\b{word}\b", head), (name, word, head)
