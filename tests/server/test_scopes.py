"""Each client keeps its own current session (issue 13): hosts on one database, as every README
snippet sets them up, never write into each other's thread, and a restarted host continues its
own. Real stdio subprocesses on one database (a SQLite file, then PostgreSQL), speaking MCP
through real clients."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.types import ErrorData, Implementation, ListRootsResult, Root, TextContent

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"

pytestmark = pytest.mark.slow


def host(
    db: Path | str, name: str, roots: list[str] | None = None, env: dict[str, str] | None = None
) -> Client:
    """A stdio client naming itself `name`, offering `roots` when given."""

    async def list_roots(context: ClientRequestContext) -> ListRootsResult | ErrorData:
        return ListRootsResult(roots=[Root(uri=uri) for uri in roots or ()])

    return Client(
        StdioServerParameters(command=FRS_MCP, args=["--db", str(db)], env=env),
        client_info=Implementation(name=name, version="1"),
        list_roots_callback=list_roots if roots is not None else None,
        mode="legacy",
    )


async def call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text


async def say(client: Client, text: str) -> None:
    await call(client, "frs_record", messages=[{"role": "user", "content": text}])


async def title_and_entries(client: Client) -> tuple[str, list[str]]:
    lines = (await call(client, "frs_view_thread")).splitlines()
    return lines[0], [line for line in lines if line.startswith("[")]


class TestTwoHosts:
    async def test_two_hosts_on_one_database_each_write_into_their_own_thread(
        self, database: Path | str
    ) -> None:
        db = database
        async with host(db, "desktop") as desktop, host(db, "code") as code:
            await call(desktop, "frs_session", action="start", title="desktop chat")
            await call(code, "frs_session", action="start", title="code project")
            for turn in range(3):
                await say(desktop, f"desktop {turn}")
                await say(code, f"code {turn}")
            seen_by_desktop = await title_and_entries(desktop)
            seen_by_code = await title_and_entries(code)
            info = await call(desktop, "frs_session", action="info")
        assert seen_by_desktop == (
            'Thread "desktop chat"',
            ["[1] User: desktop 0", "[2] User: desktop 1", "[3] User: desktop 2"],
        )
        assert seen_by_code == (
            'Thread "code project"',
            ["[1] User: code 0", "[2] User: code 1", "[3] User: code 2"],
        )
        assert info.endswith("· scope desktop")

    async def test_a_restarted_host_continues_its_own_thread_not_the_last_started(
        self, database: Path | str
    ) -> None:
        db = database
        async with host(db, "desktop") as desktop:
            await call(desktop, "frs_session", action="start", title="desktop chat")
            await say(desktop, "before the restart")
        async with host(db, "code") as code:  # the last start in the database is code's
            await call(code, "frs_session", action="start", title="code project")
        async with host(db, "desktop") as desktop:
            await say(desktop, "after the restart")
            seen = await title_and_entries(desktop)
        assert seen == (
            'Thread "desktop chat"',
            ["[1] User: before the restart", "[2] User: after the restart"],
        )

    async def test_one_host_in_two_workspaces_has_two_scopes(self, database: Path | str) -> None:
        db = database
        one = host(db, "claude-code", roots=["file:///work/one"])
        two = host(db, "claude-code", roots=["file:///work/two"])
        async with one as first, two as second:
            await call(first, "frs_session", action="start", title="project one")
            await call(second, "frs_session", action="start", title="project two")
            await say(first, "in one")
            info = await call(first, "frs_session", action="info")
        async with host(db, "claude-code", roots=["file:///work/one"]) as again:
            seen = await title_and_entries(again)
        assert info.endswith("· scope claude-code@file:///work/one")
        assert seen == ('Thread "project one"', ["[1] User: in one"])

    async def test_a_scope_set_in_the_hosts_config_overrides_the_clients_name(
        self, database: Path | str
    ) -> None:
        db = database
        shared = {"FRS_SCOPE": "team-notes"}
        async with host(db, "desktop", env=shared) as desktop:
            await call(desktop, "frs_session", action="start", title="notes")
        async with host(db, "code", env=shared) as code:
            await say(code, "into the shared scope")
            seen = await title_and_entries(code)
            info = await call(code, "frs_session", action="info")
        assert seen == ('Thread "notes"', ["[1] User: into the shared scope"])
        assert info.endswith("· scope team-notes")

    async def test_the_list_marks_the_callers_current_session(self, database: Path | str) -> None:
        db = database
        async with host(db, "desktop") as desktop, host(db, "code") as code:
            one = await call(desktop, "frs_session", action="start", title="one")
            await call(code, "frs_session", action="start", title="two")
            listed = await call(desktop, "frs_session", action="list")
        mine = one.split()[2]
        marked = [line for line in listed.splitlines() if line.startswith("*")]
        assert len(marked) == 1
        assert marked[0].startswith(f"* {mine} ")
        assert listed.endswith("(* = current in scope desktop)")
