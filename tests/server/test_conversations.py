"""Each host conversation is its own thread, with nothing typed: Claude Code starts frs-mcp with
`CLAUDE_CODE_SESSION_ID` (kept by `claude --resume`), Codex CLI names its session in each tool
call's `_meta`. Real stdio subprocesses on one database, as the hosts start them."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation, RequestParamsMeta

from frs.model import Conversation
from tests.calls import call, call_text, text_of, user
from tests.conftest import Connect

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"
WORKSPACE = "file:///work/project"


def claude_code(db: Path, conversation: str | None, **env: str) -> Client:
    """frs-mcp as Claude Code starts it for one conversation, in one workspace."""
    if conversation is not None:
        env["CLAUDE_CODE_SESSION_ID"] = conversation
    return Client(
        StdioServerParameters(command=FRS_MCP, args=["--db", str(db)], env=env),
        client_info=Implementation(name="claude-code", version="2.1.328"),
    )


def codex_meta(turn: dict[str, str]) -> RequestParamsMeta:
    """A tool call's `_meta` as Codex CLI sends it (an open map the SDK types as a TypedDict)."""
    return cast(RequestParamsMeta, {"x-codex-turn-metadata": turn})


async def say(client: Client, text: str) -> None:
    await call(client, "frs_record", messages=[user(text)])


async def thread(client: Client) -> tuple[str, list[str]]:
    """The view's title line and its entries."""
    lines = (await call_text(client, "frs_view_thread")).splitlines()
    return lines[0], [line for line in lines if line.startswith("[")]


async def current(client: Client) -> dict[str, Any]:
    """frs_session(action=info)'s structured session."""
    result = await call(client, "frs_session", action="info")
    assert result.structured_content is not None
    session = result.structured_content["session"]
    assert isinstance(session, dict)
    return session


@pytest.mark.slow
class TestClaudeCode:
    async def test_two_conversations_keep_two_threads_and_a_resumed_one_continues_its_own(
        self, db_path: Path
    ) -> None:
        async with claude_code(db_path, "conv-A") as a:
            await say(a, "A asks")
            first = await current(a)
        async with claude_code(db_path, "conv-B") as b:
            await say(b, "B asks")
            seen_by_b = await thread(b)
            second = await current(b)
        async with claude_code(db_path, "conv-A") as resumed:  # claude --resume
            await say(resumed, "A again")
            seen_by_a = await thread(resumed)
            again = await current(resumed)
            listed = await call(resumed, "frs_session", action="list")
        assert seen_by_a == (
            'Thread "claude-code conversation conv-A"',
            ["[1] User: A asks", "[2] User: A again"],
        )
        assert seen_by_b == ('Thread "claude-code conversation conv-B"', ["[1] User: B asks"])
        assert again["id"] == first["id"] != second["id"]
        assert (first["interface"], first["conversation"]) == ("claude-code", "conv-A")
        assert (second["interface"], second["conversation"]) == ("claude-code", "conv-B")
        assert listed.structured_content is not None
        assert listed.structured_content["total"] == 2, "one session per conversation"
        assert listed.structured_content["session_id"] == first["id"]

    async def test_a_session_started_in_a_conversation_is_its_thread_after_a_resume(
        self, db_path: Path
    ) -> None:
        async with claude_code(db_path, "conv-A") as a:
            await call(a, "frs_session", action="start", title="Fix flaky test")
            await say(a, "in the started session")
        async with claude_code(db_path, "conv-B") as b:
            seen_by_b = await thread(b)
        async with claude_code(db_path, "conv-A") as resumed:
            await say(resumed, "after the resume")
            seen_by_a = await thread(resumed)
            info = await call_text(resumed, "frs_session", action="info")
        assert seen_by_a == (
            'Thread "Fix flaky test"',
            ["[1] User: in the started session", "[2] User: after the resume"],
        )
        assert seen_by_b == ('Thread "claude-code conversation conv-B"', [])
        assert info.endswith("· scope claude-code#claude-code:conv-A")

    async def test_a_scope_named_in_the_config_keeps_conversations_together(
        self, db_path: Path
    ) -> None:
        async with claude_code(db_path, "conv-A", FRS_SCOPE="team") as a:
            await say(a, "from A")
        async with claude_code(db_path, "conv-B", FRS_SCOPE="team") as b:
            await say(b, "from B")
            seen = await thread(b)
            info = await call_text(b, "frs_session", action="info")
        assert seen[1] == ["[1] User: from A", "[2] User: from B"]
        assert info.endswith("· scope team")

    async def test_an_id_that_cannot_be_a_key_is_ignored(self, db_path: Path) -> None:
        async with claude_code(db_path, "bad\tid") as a:
            await say(a, "no conversation")
            session = await current(a)
        async with claude_code(db_path, None) as plain:
            seen = await thread(plain)
        assert session["interface"] is None
        assert seen[1] == ["[1] User: no conversation"], "the workspace's current session"


class TestCodex:
    async def test_each_session_named_in_meta_gets_its_own_thread(self, connect: Connect) -> None:
        def turn(session: str) -> RequestParamsMeta:
            return codex_meta({"session_id": session, "turn_id": "t1"})

        async with connect() as client:
            for session, text in (("s-1", "one"), ("s-2", "two"), ("s-1", "one more")):
                result = await client.call_tool(
                    "frs_record", {"messages": [user(text)]}, meta=turn(session)
                )
                assert not result.is_error, text_of(result)
            one = await client.call_tool("frs_view_thread", {}, meta=turn("s-1"))
            two = await client.call_tool("frs_view_thread", {}, meta=turn("s-2"))
            unnamed = await client.call_tool("frs_session", {"action": "info"})
        assert [line for line in text_of(one).splitlines() if line.startswith("[")] == [
            "[1] User: one",
            "[2] User: one more",
        ]
        assert [line for line in text_of(two).splitlines() if line.startswith("[")] == [
            "[1] User: two"
        ]
        assert text_of(unnamed).startswith("No session yet"), "a call naming none is not in one"

    async def test_meta_wins_over_the_process_conversation(self, connect: Connect) -> None:
        process = Conversation("claude-code", "conv-A")
        codex = codex_meta({"session_id": "s-9"})
        async with connect(conversation=process) as client:
            await client.call_tool("frs_record", {"messages": [user("codex")]}, meta=codex)
            await call(client, "frs_record", messages=[user("claude")])
            mine = await current(client)
        assert (mine["interface"], mine["conversation"]) == ("claude-code", "conv-A")
        assert mine["entries"] == 1
