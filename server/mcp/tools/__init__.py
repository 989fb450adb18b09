"""The MCP tools: one module-level function each, registered from one table.

Each tool validates its arguments (pydantic, at the edge), calls one `frs` use case with the
caller's `Env` (`server.mcp.deps.env_of`) inside `tool_errors()`, and returns the text the
model reads (from `frs.replies` or the view) with structured content for programs.
Docstrings are the descriptions the model reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

from server.mcp.tools.context import frs_plan, frs_source
from server.mcp.tools.sessions import frs_session
from server.mcp.tools.squashes import frs_compress_last, frs_compress_range, frs_focus, frs_restore
from server.mcp.tools.thread import frs_record, frs_view_thread, get_alias

# Hints clients show and act on. Squashes keep their originals and can be undone, so no tool
# but frs_source (whose remove drops an inline text) destroys anything; every tool works on
# this server's own database (and allowed files), never the open world.
WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
RESTORES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
SOURCES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

#: (tool, title, hints, structured output): the views and pages are text for the model only.
#: Hosts that defer tools (Claude Code's ToolSearch) find them by keywords in their names,
#: titles and descriptions: each title and first sentence names what an agent would search
#: for (squash, compress, summarize, expand, undo, restore).
TOOLS: tuple[tuple[Callable[..., Any], str, ToolAnnotations, bool], ...] = (
    (frs_session, "Sessions: start, list, use, info", WRITES, True),
    (frs_record, "Record messages", WRITES, True),
    (frs_view_thread, "View the thread", READS, False),
    (frs_compress_range, "Squash (compress, summarize) a range", WRITES, True),
    (frs_compress_last, "Squash (compress) the newest entries", WRITES, True),
    (get_alias, "Expand an alias: read the text behind it", READS, False),
    (frs_restore, "Undo (restore) a squash", RESTORES, True),
    (frs_plan, "Set the plan or a checkpoint", WRITES, True),
    (frs_source, "Context sources", SOURCES, False),
    (frs_focus, "Open or close a focus layer", WRITES, True),
)


def register(server: MCPServer[Any]) -> None:
    """Every tool of `TOOLS`, its docstring as the description without its indentation: the
    tools list reaches the model with every request, and leading spaces are tokens too."""
    for tool, title, hints, structured in TOOLS:
        server.tool(
            title=title,
            description=inspect.cleandoc(tool.__doc__ or ""),
            annotations=hints,
            structured_output=structured,
        )(tool)


__all__ = ["TOOLS", "register"]
