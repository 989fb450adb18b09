"""The official TypeScript SDK client (`@modelcontextprotocol/sdk`) drives frs-mcp over stdio,
SSE and Streamable HTTP: tools, recording, the view, a squash, a resource, a tool error, and
the updates of the thread it subscribed to (protocol 2025-11-25)."""

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

PRODUCT_TOOLS = {
    "frs_session",
    "frs_record",
    "frs_view_thread",
    "frs_compress_range",
    "frs_compress_last",
    "get_alias",
    "frs_restore",
    "frs_plan",
}


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrsProcess]:
    """Both HTTP transports on one port, with a token the client must send."""
    db = tmp_path_factory.mktemp("ts-remote") / "frs.db"
    with frs_http(db, "--transport", "both-http", env=server_env(FRS_TOKEN=TOKEN)) as server:
        yield server


def drive(node_clients: NodeClients, home: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [node_clients.node, "ts_client.mjs", *args],
        cwd=node_clients.root,
        capture_output=True,
        text=True,
        timeout=120,
        env=node_clients.env(home),
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


class TestTypeScriptSdkClient:
    @pytest.mark.parametrize("transport", ["stdio", "sse", "http"])
    def test_lists_records_views_squashes_reads_and_sees_a_tool_error(
        self, node_clients: NodeClients, remote: FrsProcess, tmp_path: Path, transport: str
    ) -> None:
        if transport == "stdio":
            args = ["stdio", FRS_MCP, "--db", str(tmp_path / "frs.db")]
        else:
            url = remote.sse_url if transport == "sse" else remote.mcp_url
            args = [transport, url, TOKEN]
        report = drive(node_clients, tmp_path, *args)

        assert report["server"]["name"] == "frs-mcp"
        assert set(report["tools"]) >= PRODUCT_TOOLS
        assert report["started"].startswith("Started session")
        assert report["recorded"]["isError"] is False
        assert report["recorded"]["structured"]["positions"] == [1, 2, 3, 4]
        assert "[1] User: Why does test_sync fail" in report["view"]
        assert "[3] Tool bash: 4 failed, 16 passed" in report["view"]

        squashed = report["squashed"]
        assert squashed["isError"] is False, squashed["text"]
        assert squashed["structured"]["alias"].startswith("SQ.1@")
        assert squashed["structured"]["position"] == 2
        assert squashed["structured"]["tokens_after"] < squashed["structured"]["tokens_before"]

        assert "[2] Summary of 2 messages" in report["resource"]
        assert "Ran it 20x: 4 failures, 3 != 4." in report["resource"]
        assert "[3] Assistant: The flush races the writer" in report["resource"]

        # Subscribed to its thread: told once by the record and once by the squash.
        assert report["resourcesCapability"]["subscribe"] is True
        assert report["resourcesCapability"]["listChanged"] is True
        thread = f"frs://sessions/{report['sessionId']}/thread"
        assert report["updated"] == [thread, thread]

        assert report["badRange"]["isError"] is True
        assert "Range 40..50 is outside the thread" in report["badRange"]["text"]
