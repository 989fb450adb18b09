"""The MCP Inspector CLI (`@modelcontextprotocol/inspector --cli`) lists and calls frs-mcp's
tools over stdio, SSE and Streamable HTTP. It exits 0 on success and 5 on an isError result."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import NodeClients
from tests.clients.frs_process import FRS_MCP, TOKEN, FrsProcess, frs_http, server_env

pytestmark = [pytest.mark.clients, pytest.mark.slow]

LAUNCHER = ("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build")
TOOL_IS_ERROR = 5


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrsProcess]:
    db = tmp_path_factory.mktemp("inspector-remote") / "frs.db"
    with frs_http(db, "--transport", "both-http", env=server_env(FRS_TOKEN=TOKEN)) as server:
        yield server


def target(transport: str, remote: FrsProcess, tmp_path: Path) -> list[str]:
    if transport == "stdio":
        return [FRS_MCP, "--db", str(tmp_path / "frs.db")]
    url = remote.sse_url if transport == "sse" else remote.mcp_url
    return [url, "--header", f"Authorization: Bearer {TOKEN}"]


def inspect(
    node_clients: NodeClients, home: Path, target: list[str], *method: str
) -> tuple[int, dict[str, Any], str]:
    launcher = str(node_clients.root.joinpath(*LAUNCHER, "index.js"))
    done = subprocess.run(
        [node_clients.node, launcher, "--cli", *target, "--method", *method],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        env=node_clients.env(home),
    )
    try:
        output: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"inspector exited {done.returncode}, no JSON:\n{done.stdout}\n{done.stderr}")
    return done.returncode, output, done.stderr


TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "sse", "http"])


class TestInspectorCli:
    @TRANSPORTS
    def test_tools_list_shows_the_product_tools_with_their_schemas(
        self, node_clients: NodeClients, remote: FrsProcess, tmp_path: Path, transport: str
    ) -> None:
        code, output, stderr = inspect(
            node_clients, tmp_path, target(transport, remote, tmp_path), "tools/list"
        )
        assert code == 0, stderr
        tools = {tool["name"]: tool for tool in output["tools"]}
        assert {"frs_session", "frs_record", "frs_view_thread", "frs_compress_range"} <= set(tools)
        assert "from" in tools["frs_compress_range"]["inputSchema"]["properties"]
        assert tools["frs_view_thread"]["annotations"]["readOnlyHint"] is True

    @TRANSPORTS
    def test_tools_call_starts_a_session(
        self, node_clients: NodeClients, remote: FrsProcess, tmp_path: Path, transport: str
    ) -> None:
        code, output, stderr = inspect(
            node_clients,
            tmp_path,
            target(transport, remote, tmp_path),
            "tools/call",
            "--tool-name",
            "frs_session",
            "--tool-arg",
            "action=start",
            f"title=inspector over {transport}",
        )
        assert code == 0, stderr
        assert output["isError"] is False
        assert f'"inspector over {transport}" (current in scope ' in output["content"][0]["text"]

    def test_a_bad_range_is_a_tool_error_and_exit_code_5(
        self, node_clients: NodeClients, remote: FrsProcess, tmp_path: Path
    ) -> None:
        code, output, _ = inspect(
            node_clients,
            tmp_path,
            target("http", remote, tmp_path),
            "tools/call",
            "--tool-name",
            "frs_compress_range",
            "--tool-arg",
            "from=40",
            "to=50",
            "summary=nothing there",
        )
        assert code == TOOL_IS_ERROR
        assert output["isError"] is True
        assert "Range 40..50 is outside the thread" in output["content"][0]["text"]
