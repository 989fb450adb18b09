"""server: the edges of frs, a room each: the MCP edge (`mcp`), the HTTP transports (`http`),
the viewer (`web`), the gateway (`gateway`) and the command (`cli`).

The names below load on first use, not with the package: `frs-mcp hook`, which a host runs at
every turn, imports no MCP (`server.entry`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# First: refuses a foreign frs, storage or server before anything loads them.
import server.origin  # noqa: F401

if TYPE_CHECKING:
    from server.mcp.app import build_server
    from server.mcp.deps import Deps, open_deps
    from server.settings import Settings

__all__ = ["Deps", "Settings", "build_server", "open_deps"]

_WHERE = {
    "build_server": "server.mcp.app",
    "Deps": "server.mcp.deps",
    "open_deps": "server.mcp.deps",
    "Settings": "server.settings",
}


def __getattr__(name: str) -> Any:
    """`from server import build_server` and the others, imported when first asked for."""
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'server' has no attribute {name!r}")


# server/origin.py checks this line to tell our package from another of the same name.
__distribution__ = "frs-mcp"
