"""What frs costs a host's model, measured on the requests it received (issue 19, item 7): the
o200k tokens of the frs tool definitions as the host sent them, and the size of each result.

`server_tools` gives the frs tools as the server lists them (an in-process client), so a test can
compare them with what the host made of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from server import Settings, build_server
from tests.bpe import counter
from tests.hosts.model import Seen, ToolResult


def tokens(text: str) -> int:
    """o200k_base tokens of `text`."""
    return counter("o200k_base")(text)


def compact(value: Any) -> str:
    """`value` as JSON without spaces, the way hosts serialise a request body."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def server_tools(database: Path) -> dict[str, dict[str, Any]]:
    """The frs tools as frs-mcp lists them (name -> the tool as JSON), on a fresh `database`."""

    async def listed() -> dict[str, dict[str, Any]]:
        server = build_server(Settings.model_validate({"database": str(database)}))
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
        return {
            tool.name: tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            for tool in tools
        }

    return anyio.run(listed)


@dataclass(frozen=True)
class Figures:
    """The token figures of one host's run."""

    host: str
    definitions: int  # o200k tokens of the frs tools' entries in one request, as sent
    request: int  # o200k tokens of that whole request body
    results: dict[str, tuple[int, int]]  # label -> (characters, o200k tokens) as forwarded

    def describe(self) -> str:
        sizes = ", ".join(
            f"{label} {chars}c/{toks}t" for label, (chars, toks) in self.results.items()
        )
        return (
            f"{self.host}: frs tool definitions {self.definitions} tokens of a "
            f"{self.request}-token request; results as forwarded: {sizes}"
        )


def figures(host: str, seen: Seen, frs_names: set[str], results: dict[str, ToolResult]) -> Figures:
    """The figures for the frs tools (named as the host names them) offered in `seen`, and
    the `results` by label, each measured as the host forwarded it (its raw item)."""
    entries = [tool.raw for tool in seen.tools if tool.name in frs_names]
    assert len(entries) == len(frs_names), (frs_names, seen.tool_names())
    sizes = {}
    for label, result in results.items():
        forwarded = compact(result.raw)
        sizes[label] = (len(forwarded), tokens(forwarded))
    return Figures(
        host,
        sum(tokens(compact(entry)) for entry in entries),
        tokens(compact(seen.body)),
        sizes,
    )
