"""Every reach of ours into a library's internals, in one place: what it takes, why no public
way does it, and the releases it was written against (`WRITTEN_AGAINST`).

An upgrade of mcp or uvicorn breaks here first, so `tests/server/test_internals.py` checks each
reach against the installed libraries and, where one changed, names this module, the reach and
what is no longer there. Everything else of ours uses the libraries' public API only; a new
reach belongs here, with its check.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from uvicorn import Server as UvicornServer
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:  # the viewer and the gateway reach this module and never load the MCP SDK
    from mcp.server import MCPServer
    from mcp.server.lowlevel import Server
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

#: The releases each reach below was read in; the check says which is installed.
WRITTEN_AGAINST = {"mcp": "2.3.0", "uvicorn": "0.54.0"}


# --- mcp: MCPServer's protocol-level server ------------------------------------------------------


def lowlevel_of(server: MCPServer[Any]) -> Server[Any]:
    """The `Server` an `MCPServer` runs (its `_lowlevel_server`). MCPServer has no public way to
    it, and we need it to run stdio on our own streams (`server.mcp.stdio`) and for the handlers
    MCPServer has no hook for (`server.mcp.live`: subscriptions/listen, resources/subscribe)."""
    found: Server[Any] = server._lowlevel_server
    return found


def announce_resource_list_changes(lowlevel: Server[Any]) -> None:
    """Make the 2025 handshake advertise `resources.listChanged`: the SDK takes the flag from
    the `NotificationOptions` passed to `create_initialization_options`, which its transports
    never pass (mcp 2.3, its TODO at L53), so the method is bound with them on this instance."""
    from mcp.server.lowlevel import NotificationOptions  # loaded: `lowlevel` is the SDK's

    options = NotificationOptions(resources_changed=True)
    lowlevel.create_initialization_options = partial(  # type: ignore[method-assign]
        type(lowlevel).create_initialization_options, lowlevel, options
    )


def connection_of(session: ServerSession) -> object:
    """The connection a per-request session proxy writes to: what a subscription belongs to.
    The SDK builds a proxy per request (which holds its connection, so it must not be kept)
    and keeps the connection in `_connection`; without it, the proxy itself."""
    found: object = getattr(session, "_connection", session)
    return found


# --- mcp: the Streamable HTTP session manager's sessions -----------------------------------------


def live_sessions(
    manager: StreamableHTTPSessionManager,
) -> dict[str, StreamableHTTPServerTransport]:
    """The open Streamable HTTP sessions by id (the manager's `_server_instances`): the SDK
    exposes neither its sessions nor a way to close one (`server.http.evictions`)."""
    found: dict[str, StreamableHTTPServerTransport] = manager._server_instances
    return found


async def discard_session(
    manager: StreamableHTTPSessionManager, session_id: str, transport: StreamableHTTPServerTransport
) -> None:
    """Close a session as the SDK itself does when one ends (`_discard_session`): forgotten at
    once (its id answers 404), its transport terminated."""
    await manager._discard_session(session_id, transport)


# --- uvicorn: the h11 protocol a socket runs -----------------------------------------------------

#: The base of `server.http.sockets.guarded_protocol`: uvicorn has no hook for a socket's
#: timeouts or its cap, so the limits are a subclass of its h11 protocol.
H11 = H11Protocol

#: What that subclass overrides: asyncio's protocol callbacks and uvicorn's own hook.
H11_OVERRIDES = (
    "connection_made",
    "data_received",
    "on_response_complete",
    "pause_writing",
    "resume_writing",
    "connection_lost",
)
#: What it reads and sets on an instance, as uvicorn's `__init__` and `connection_made` name
#: them: the server's open sockets, the transport, h11's connection state, the event loop and
#: the keep-alive timer.
H11_ATTRIBUTES = (
    "connections",
    "transport",
    "conn",
    "loop",
    "timeout_keep_alive",
    "timeout_keep_alive_task",
)


# --- uvicorn: the server that runs the three HTTP servers ----------------------------------------

#: The base of `server.http.serving`'s server: uvicorn re-raises a caught SIGINT/SIGTERM once
#: serving stops and has no hook for shutting down streams that never end by themselves, so
#: its signal handling is overridden.
Uvicorn = UvicornServer

#: What that subclass overrides: the serving coroutine, the signal handler and the context
#: that installs it.
UVICORN_OVERRIDES = ("serve", "handle_exit", "capture_signals")
