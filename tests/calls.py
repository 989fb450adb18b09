"""Calling frs tools through an MCP client in tests: the result's text, a call that must succeed,
one that must be refused, the view, a recording, the session's revision, and the small readers
of what comes back (a view's body and footer, a sha8, a user message).

Each helper asserts what it says (success or a tool error, one text block) so a test reads as
the calls an agent makes. `call` gives the whole CallToolResult; `call_text` only its text.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from mcp import Client
from mcp.types import CallToolResult, TextContent


def text_of(result: CallToolResult) -> str:
    """The one text block of a tool result."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    """A tool call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return result


async def call_text(client: Client, tool: str, **arguments: Any) -> str:
    """A tool call that must succeed; its text."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """A tool call that must come back as a tool error; its text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, text_of(result)
    return text_of(result)


async def view(client: Client, **arguments: Any) -> str:
    """frs_view_thread(...); its text."""
    return text_of(await call(client, "frs_view_thread", **arguments))


async def record(client: Client, *messages: dict[str, Any], **arguments: Any) -> None:
    """frs_record(messages=[...], ...), which must succeed."""
    await call(client, "frs_record", messages=list(messages), **arguments)


async def revision(client: Client) -> int:
    """The current session's revision, as frs_session(action=info) reports it."""
    info = await call_text(client, "frs_session", action="info")
    found = re.search(r"revision (\d+)", info)
    assert found, info
    return int(found[1])


def user(content: str) -> dict[str, Any]:
    """A user message, as frs_record takes it."""
    return {"role": "user", "content": content}


def body(text: str) -> list[str]:
    """A view's lines without the title line and the volatile last line."""
    return text.split("\n")[1:-1]


def footer(text: str) -> str:
    """A view's last line."""
    return text.rsplit("\n", 1)[1]


def sha8(text: str) -> str:
    """The first 8 hex digits of the sha256 of `text`, as aliases carry them."""
    return hashlib.sha256(text.encode()).hexdigest()[:8]
