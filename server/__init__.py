"""server: the edges of frs, a room each: the MCP edge (`mcp`), the HTTP transports (`http`),
the viewer (`web`), the gateway (`gateway`) and the command (`cli`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# First: refuses a foreign frs, storage or server before the imports below load them.
import server.origin  # noqa: F401
from server.settings import Settings

if TYPE_CHECKING:
    from server.mcp.app import build_server
    from server.mcp.deps import Deps, open_deps

__all__ = ["Deps", "Settings", "build_server", "open_deps"]

#: The names handed on from the MCP edge, imported when first asked for: importing any module
#: of `server` runs this file, and the MCP SDK takes most of a second to import, which the
#: commands that serve no MCP (`web`, `gateway`, `import`, `export`, `--help`) never need.
_FROM_MCP = {
    "build_server": "server.mcp.app",
    "Deps": "server.mcp.deps",
    "open_deps": "server.mcp.deps",
}


def __getattr__(name: str) -> Any:
    if name in _FROM_MCP:
        import importlib

        return getattr(importlib.import_module(_FROM_MCP[name]), name)
    raise AttributeError(f"module 'server' has no attribute {name!r}")


# server/origin.py checks this line to tell our package from another of the same name.
__distribution__ = "frs-mcp"
