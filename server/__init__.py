"""server: the edges of frs, a room each: the MCP edge (`mcp`), the HTTP transports (`http`),
the viewer (`web`), the gateway (`gateway`) and the command (`cli`)."""

# First: refuses a foreign frs, storage or server before the imports below load them.
import server.origin  # noqa: F401
from server.mcp.app import build_server
from server.mcp.deps import Deps, open_deps
from server.settings import Settings

__all__ = ["Deps", "Settings", "build_server", "open_deps"]


# server/origin.py checks this line to tell our package from another of the same name.
__distribution__ = "frs-mcp"
