"""What MCP clients read besides the text: titles, hints, the server's title, structured session
results, paging past the first pages, and progress of long calls."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.calls import call, refused, text_of, user
from tests.conftest import Connect

WRITERS = {
    "frs_session",
    "frs_record",
    "frs_compress_range",
    "frs_compress_last",
    "frs_restore",
    "frs_plan",
    "frs_focus",
    "frs_source",
}
READERS = {"frs_view_thread", "get_alias"}
FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"


async def session_out(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await call(client, "frs_session", **arguments)
    assert result.structured_content is not None
    return dict(result.structured_content)


async def many_sessions(client: Client, count: int) -> list[str]:
    """`count` new sessions, oldest first; their ids."""
    return [
        (await session_out(client, action="start", title=f"S{n}"))["session_id"]
        for n in range(1, count + 1)
    ]


class TestToolMetadata:
    async def test_every_tool_has_a_title_and_says_it_stays_in_this_server(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == WRITERS | READERS
        titles = [tool.title for tool in tools.values()]
        assert all(titles), titles
        assert len(set(titles)) == len(titles), "each title names one tool"
        for name, tool in tools.items():
            hints = tool.annotations
            assert hints is not None, name
            assert hints.open_world_hint is False, name
            assert hints.read_only_hint is (name in READERS), name

    async def test_only_the_tool_that_can_drop_an_inline_text_is_destructive(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        destructive = {
            name
            for name, tool in tools.items()
            if tool.annotations is not None and tool.annotations.destructive_hint
        }
        assert destructive == {"frs_source"}
        restore = tools["frs_restore"].annotations
        assert restore is not None
        assert restore.idempotent_hint is True

    async def test_the_server_names_itself_with_a_title(self, connect: Connect) -> None:
        async with connect() as client:
            info = client.server_info
        assert info is not None
        assert info.name == "frs-mcp"
        assert info.title == "FRS: Focused Reasoning System"


class TestSessionResults:
    async def test_frs_session_publishes_an_output_schema(self, connect: Connect) -> None:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = tools["frs_session"].output_schema
        assert schema is not None
        assert {"action", "session_id", "sessions", "total", "next_offset"} <= set(
            schema["properties"]
        )

    async def test_every_action_returns_the_session_id_as_data(self, connect: Connect) -> None:
        async with connect() as client:
            started = await session_out(client, action="start", title="One", goal="g")
            other = await session_out(client, action="start", title="Two")
            used = await session_out(client, action="use", session_id=started["session_id"])
            info = await session_out(client, action="info")
            info_other = await session_out(client, action="info", session_id=other["session_id"])
            listed = await session_out(client, action="list")
        sid = started["session_id"]
        assert started["action"] == "start"
        assert started["created"] is True
        assert started["session"]["title"] == "One"
        assert started["session"]["goal"] == "g"
        assert used["session_id"] == sid
        assert used["session"]["current"] is True
        assert info["session_id"] == sid
        assert info["session"]["current"] is True
        assert info_other["session_id"] == other["session_id"]
        assert info_other["session"]["current"] is False
        assert listed["session_id"] == sid, "list names the current session"
        assert [s["id"] for s in listed["sessions"]] == [other["session_id"], sid]
        assert [s["current"] for s in listed["sessions"]] == [False, True]

    async def test_a_resumed_conversation_says_it_was_not_created(self, connect: Connect) -> None:
        keys = {"interface": "web", "conversation": "c-1"}
        async with connect() as client:
            first = await session_out(client, action="start", title="Chat", **keys)
            again = await session_out(client, action="start", **keys)
        assert again["session_id"] == first["session_id"]
        assert (first["created"], again["created"]) == (True, False)


class TestPaging:
    async def test_the_list_tool_says_n_of_m_and_reaches_the_1005th_session(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            ids = await many_sessions(client, 1005)
            first = await call(client, "frs_session", action="list")
            last = await call(client, "frs_session", action="list", offset=1000, limit=200)
        first_text, last_text = text_of(first), text_of(last)
        assert first_text.endswith(
            "Sessions 1–50 of 1,005, newest first (* = current in scope mcp); next page: "
            "frs_session(action='list', offset=50)"
        )
        assert last_text.endswith(
            "Sessions 1,001–1,005 of 1,005, newest first (* = current in scope mcp)"
        )
        data = last.structured_content
        assert data is not None
        assert data["total"] == 1005
        assert data["offset"] == 1000
        assert data["next_offset"] is None
        # Newest first: the page after the first 1,000 holds the five oldest, the very first last.
        assert [s["id"] for s in data["sessions"]] == ids[4::-1]

    async def test_the_sessions_resource_pages_by_its_next_uri(self, connect: Connect) -> None:
        async with connect() as client:
            ids = await many_sessions(client, 1005)
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            pages = []
            uri: str | None = "frs://sessions"
            while uri is not None:
                block = (await client.read_resource(uri)).contents[0]
                page = json.loads(getattr(block, "text", ""))
                pages.append(page)
                uri = page["next"]
        assert "frs://sessions" in listed
        assert [(p["offset"], len(p["sessions"]), p["total"]) for p in pages] == [
            (0, 1000, 1005),
            (1000, 5, 1005),
        ]
        seen = [s["id"] for p in pages for s in p["sessions"]]
        assert seen == ids[::-1], "every session once, newest first"

    async def test_an_offset_past_the_end_is_refused_with_the_total(self, connect: Connect) -> None:
        async with connect() as client:
            await many_sessions(client, 3)
            text = await refused(client, "frs_session", action="list", offset=4)
        assert "offset=4 is past the end: there are 3 sessions" in text


class TestProgress:
    @staticmethod
    def batch(count: int) -> list[dict[str, Any]]:
        return [user(f"message {n}") for n in range(count)]

    async def test_a_large_record_reports_progress_in_process(self, connect: Connect) -> None:
        reports: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append((progress, total, message))

        async with connect() as client:
            result = await client.call_tool(
                "frs_record", {"messages": self.batch(2000)}, progress_callback=on_progress
            )
        assert not result.is_error
        assert [(d, t) for d, t, _ in reports] == [
            (500, 2000),
            (1000, 2000),
            (1500, 2000),
            (2000, 2000),
        ]
        assert reports[-1][2] == "2,000 of 2,000 messages recorded"

    @pytest.mark.slow
    async def test_a_large_record_reports_progress_over_stdio(self, tmp_path: Path) -> None:
        reports: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append(progress)

        server = StdioServerParameters(command=FRS_MCP, args=["--db", str(tmp_path / "f.db")])
        async with Client(server) as client:
            result = await client.call_tool(
                "frs_record", {"messages": self.batch(1200)}, progress_callback=on_progress
            )
        assert not result.is_error
        assert reports == [500, 1000, 1200]

    async def test_a_refused_record_reports_no_progress(self, connect: Connect) -> None:
        reports: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append(progress)

        async with connect() as client:
            result = await client.call_tool(
                "frs_record",
                {"messages": self.batch(600), "expected_revision": 7},
                progress_callback=on_progress,
            )
        assert result.is_error
        assert "Stale revision" in text_of(result) or "expected revision 7" in text_of(result)
        assert reports == []
