"""server: the MCP edge of frs (tools, resources, prompts, transports, CLI)."""

from server.app import build_server
from server.deps import Deps, open_deps
from server.settings import Settings

__all__ = ["Deps", "Settings", "build_server", "open_deps"]
