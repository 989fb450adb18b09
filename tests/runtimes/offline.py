"""What the framework adapters' tests share: no network, and frs-mcp over stdio on the same file.

`offline` is a fixture (import it into a test module): LangSmith tracing and OpenTelemetry are
switched off through their own variables, and any connection or name lookup beyond this
machine fails the test, so a framework that tried to reach Google, OpenAI or LangSmith is
caught instead of silently passing.
"""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"
_LOCAL = {"localhost", "127.0.0.1", "::1", None, ""}


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")

    real_connect = socket.socket.connect
    real_lookup = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOCAL:
            raise AssertionError(f"the test tried to reach {address!r} over the network")
        real_connect(self, address)

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in _LOCAL:
            raise AssertionError(f"the test tried to look up {host!r}")
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)


async def squash_over_stdio(
    db: Path | str, interface: str, conversation: str, start: int, end: int, summary: str
) -> str:
    """Squash positions start..end of the conversation's session through a real frs-mcp
    subprocess on the same database (a SQLite file or a postgresql:// URL), finding the
    session by get-or-create; the view after the squash."""
    params = StdioServerParameters(command=FRS_MCP, args=["--db", str(db)])
    async with Client(params) as client:
        await _call(
            client, "frs_session", action="start", interface=interface, conversation=conversation
        )
        await _call(client, "frs_compress_range", **{"from": start, "to": end}, summary=summary)
        return await _call(client, "frs_view_thread")


async def _call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text
