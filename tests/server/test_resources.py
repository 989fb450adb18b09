"""The resources (session list, thread, squash audit trail) and the frs_distill prompt, read
through an in-process MCP client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS, TextContent, TextResourceContents

from frs.text import estimate_tokens
from tests.calls import sha8
from tests.conftest import Connect


async def tool(client: Client, name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A tool call that must succeed: its text and structured content."""
    result = await client.call_tool(name, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text, dict(result.structured_content or {})


async def start(client: Client, title: str, **arguments: Any) -> str:
    text, _ = await tool(client, "frs_session", action="start", title=title, **arguments)
    return text.split()[2]  # "Started session <id> ..."


async def read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    (content,) = result.contents
    assert isinstance(content, TextResourceContents)
    return content.text


async def read_json(client: Client, uri: str) -> Any:
    return json.loads(await read(client, uri))


def users(*texts: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text} for text in texts]


class TestListing:
    async def test_the_session_list_is_a_resource(self, connect: Connect) -> None:
        async with connect() as client:
            listed = (await client.list_resources()).resources
        (sessions,) = [r for r in listed if str(r.uri) == "frs://sessions"]
        assert sessions.mime_type == "application/json"

    async def test_thread_and_squashes_are_templates(self, connect: Connect) -> None:
        async with connect() as client:
            templates = (await client.list_resource_templates()).resource_templates
        by_uri = {t.uri_template: t for t in templates}
        assert by_uri["frs://sessions/{session_id}/thread"].mime_type == "text/plain"
        assert by_uri["frs://sessions/{session_id}/squashes"].mime_type == "application/json"


class TestSessionsResource:
    async def test_lists_every_session_and_the_current_one(self, connect: Connect) -> None:
        async with connect() as client:
            chat = await start(client, "Chat", interface="telegram", conversation="42")
            await tool(client, "frs_record", messages=users("a", "b"))
            other = await start(client, "Other", goal="compare", numbering="absolute")
            found = await read_json(client, "frs://sessions")
        assert found["current"] == other
        by_id = {s["id"]: s for s in found["sessions"]}
        assert set(by_id) == {chat, other}
        assert by_id[chat] | {"created_at": "", "updated_at": ""} == {
            "id": chat,
            "title": "Chat",
            "goal": "",
            "numbering": "position",
            "entries": 2,
            "messages": 2,
            "revision": 1,
            "created_at": "",
            "updated_at": "",
            "interface": "telegram",
            "conversation": "42",
        }
        assert by_id[other]["goal"] == "compare"
        assert by_id[other]["numbering"] == "absolute"
        assert by_id[other]["revision"] == 0

    async def test_a_second_read_sees_the_changes_since_the_first(self, connect: Connect) -> None:
        async with connect() as client:
            await tool(client, "frs_record", messages=users("a"))
            first = await read_json(client, "frs://sessions")
            await tool(client, "frs_record", messages=users("b"))
            second = await read_json(client, "frs://sessions")
        assert first["sessions"][0]["revision"] == 1
        assert second["sessions"][0]["revision"] == 2
        assert second["sessions"][0]["entries"] == 2

    async def test_an_empty_database_lists_no_session(self, connect: Connect) -> None:
        async with connect() as client:
            found = await read_json(client, "frs://sessions")
        assert found == {"current": None, "total": 0, "offset": 0, "next": None, "sessions": []}


class TestThreadResource:
    async def test_it_is_the_view_of_that_session(self, connect: Connect) -> None:
        async with connect() as client:
            sid = await start(client, "Shown")
            await tool(client, "frs_record", messages=users("one " * 5, "two " * 5, "three"))
            await tool(client, "frs_compress_range", **{"from": 1, "to": 2}, summary="one, two")
            await start(client, "Now current")
            await tool(client, "frs_record", messages=users("elsewhere"))
            text = await read(client, f"frs://sessions/{sid}/thread")
            view, _ = await tool(client, "frs_view_thread", session_id=sid)
        assert text == view
        assert text.startswith('Thread "Shown"\n[1] Summary of 2 messages (SQ.1@')
        assert "elsewhere" not in text

    async def test_it_follows_the_thread_as_it_changes(self, connect: Connect) -> None:
        async with connect() as client:
            sid = await start(client, "Moving")
            await tool(client, "frs_record", messages=users("first"))
            before = await read(client, f"frs://sessions/{sid}/thread")
            await tool(client, "frs_record", messages=users("second"))
            after = await read(client, f"frs://sessions/{sid}/thread")
        assert "[2] User: second" not in before
        assert "[2] User: second" in after


class TestSquashesResource:
    async def test_every_squash_is_in_the_audit_trail(self, connect: Connect) -> None:
        async with connect() as client:
            sid = await start(client, "Audited")
            await tool(client, "frs_record", messages=users(*(f"{c} " * 8 for c in "ABCDE")))
            _, inner = await tool(
                client, "frs_compress_range", **{"from": 2, "to": 3}, summary="B and C"
            )
            _, outer = await tool(client, "frs_compress_last", count=3, summary="BC, D, E")
            await tool(client, "frs_restore", alias="SQ.2")
            trail = await read_json(client, f"frs://sessions/{sid}/squashes")
        assert trail["session_id"] == sid
        first, second = trail["squashes"]
        assert first | {"created_at": ""} == {
            "alias": inner["alias"],
            "numbers": [2, 3],
            "entries": 2,
            "messages": 2,
            "tokens_before": inner["tokens_before"],
            "tokens_after": inner["tokens_after"],
            "summary": "B and C",
            "summary_number": 6,
            "created_at": "",
            "restored": False,
        }
        assert second | {"created_at": ""} == {
            "alias": outer["alias"],
            "numbers": [2, 5],
            "entries": 3,
            "messages": 4,
            "tokens_before": outer["tokens_before"],
            "tokens_after": outer["tokens_after"],
            "summary": "BC, D, E",
            "summary_number": 7,
            "created_at": "",
            "restored": True,
        }
        # The estimator's figures for "B B B B B B B B ", "C ..." and "B and C".
        assert inner["tokens_before"] == 2 * estimate_tokens("B " * 8) == 10
        assert inner["tokens_after"] == estimate_tokens("B and C") == 3

    async def test_a_session_without_squashes_has_an_empty_trail(self, connect: Connect) -> None:
        async with connect() as client:
            sid = await start(client, "Plain")
            trail = await read_json(client, f"frs://sessions/{sid}/squashes")
        assert trail == {"session_id": sid, "squashes": []}


class TestAliasResource:
    async def test_it_is_the_whole_text_behind_any_alias(self, connect: Connect) -> None:
        long = "\n".join(f"line {i}: " + "x" * 90 for i in range(400))  # 40,000 chars, 2 pages
        async with connect() as client:
            sid = await start(client, "Aliases")
            await tool(client, "frs_record", messages=users("first", long, "third"))
            _, squashed = await tool(
                client, "frs_compress_range", **{"from": 1, "to": 2}, summary="first and long"
            )
            await tool(client, "frs_source", action="add", alias="D.notes", text="kept notes")
            message = await read(client, f"frs://sessions/{sid}/aliases/M.2")
            pinned = await read(client, f"frs://sessions/{sid}/aliases/M.3@{sha8('third')}")
            originals = await read(client, f"frs://sessions/{sid}/aliases/{squashed['alias']}")
            paged, _ = await tool(client, "get_alias", alias=squashed["alias"], session_id=sid)
            source = await read(client, f"frs://sessions/{sid}/aliases/D.notes")
        assert message == long
        assert pinned == "third"
        assert originals.startswith("[1] User:\n    first\n[2] User:\n    line 0: ")
        assert originals.endswith("\n    line 399: " + "x" * 90)
        assert len(originals) > 40_000  # whole, where the tool pages it:
        assert 'get_alias(alias="SQ.1' in paged
        assert source == "kept notes"

    async def test_it_is_listed_as_a_template(self, connect: Connect) -> None:
        async with connect() as client:
            templates = (await client.list_resource_templates()).resource_templates
        by_uri = {t.uri_template: t for t in templates}
        assert by_uri["frs://sessions/{session_id}/aliases/{alias}"].mime_type == "text/plain"

    @pytest.mark.parametrize(
        ("alias", "says"),
        [
            ("M.9", "No alias 'M.9': message numbers in session "),
            ("SQ.1@00000000", "@sha8 does not match"),
            ("bogus", "bogus"),
            ("M.1@zz", "M.1@zz"),
        ],
    )
    async def test_an_unknown_alias_is_an_invalid_params_error(
        self, connect: Connect, alias: str, says: str
    ) -> None:
        async with connect() as client:
            sid = await start(client, "Aliases")
            await tool(client, "frs_record", messages=users("a " * 9, "b " * 9))
            await tool(client, "frs_compress_last", count=2, summary="ab")
            with pytest.raises(MCPError) as caught:
                await client.read_resource(f"frs://sessions/{sid}/aliases/{alias}")
        assert caught.value.code == INVALID_PARAMS
        assert says in caught.value.message


class TestUnknownSession:
    @pytest.mark.parametrize("what", ["thread", "squashes", "aliases/M.1"])
    async def test_an_unknown_session_is_an_invalid_params_error(
        self, connect: Connect, what: str
    ) -> None:
        uri = f"frs://sessions/nope/{what}"
        async with connect() as client:
            await start(client, "Exists")
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            sessions = await read_json(client, "frs://sessions")
        assert caught.value.code == INVALID_PARAMS
        assert "No session 'nope'" in caught.value.message
        assert caught.value.message == (
            "No session 'nope'. Read frs://sessions for the sessions there are."
        )
        assert caught.value.error.data == {"uri": uri}
        assert len(sessions["sessions"]) == 1  # reading created nothing


class TestDistillPrompt:
    async def test_it_is_listed_with_optional_arguments(self, connect: Connect) -> None:
        async with connect() as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        distill = prompts["frs_distill"]
        assert distill.title == "Distill the reasoning thread"
        assert distill.description
        assert {a.name: a.required for a in distill.arguments or []} == {
            "session_id": False,
            "focus": False,
        }

    async def test_it_renders_the_how_to(self, connect: Connect) -> None:
        async with connect() as client:
            result = await client.get_prompt("frs_distill")
        (message,) = result.messages
        assert message.role == "user"
        assert isinstance(message.content, TextContent)
        text = message.content.text
        assert text.startswith("Distill your FRS thread.\n")
        for needed in (
            "frs_view_thread",
            "frs_compress_range",
            "frs_compress_last",
            "expected_revision",
            "get_alias",
            "frs_restore",
            "decisions",
            "file names",
            "open questions",
        ):
            assert needed in text
        assert "Focus on" not in text

    async def test_it_names_the_session_and_the_focus(self, connect: Connect) -> None:
        async with connect() as client:
            result = await client.get_prompt(
                "frs_distill", {"session_id": "abc123", "focus": "the flaky test"}
            )
        content = result.messages[0].content
        assert isinstance(content, TextContent)
        assert content.text.startswith("Distill your FRS thread (session abc123).\n")
        assert "Focus on what matters for: the flaky test" in content.text

    async def test_an_unknown_prompt_is_invalid_params_naming_the_one_there_is(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("frs_summarize")
        assert caught.value.code == INVALID_PARAMS
        assert caught.value.message == (
            "Unknown prompt 'frs_summarize'; this server has frs_distill."
        )
