"""The frs tools as frs-mcp lists them, to compare with what a host made of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from server import Settings, build_server


def server_tools(database: Path) -> dict[str, dict[str, Any]]:
    """Each frs tool by name, as JSON (`inputSchema`, `description`, …), listed by an in-process
    client of a server on a fresh `database`."""

    async def listed() -> dict[str, dict[str, Any]]:
        server = build_server(Settings.model_validate({"database": str(database)}))
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
        return {
            tool.name: tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in tools
        }

    return anyio.run(listed)
