"""Serve MCP over SSE and Streamable HTTP on one port, safe by default.

One process opens one database and one service; every HTTP session and SSE connection shares
them (the SDK enters the server lifespan once per SSE connection, so the lifespan only hands out
the shared deps). In front of the SDK's apps sit the guards of `server.guards` (health, Host
and Origin, token, SSE limit); the SDK enforces the body limit (413) on `/mcp` and on the SSE
message endpoint and the session limit on `/mcp` (503), and the guards reword those refusals
to name the limit. Which hosts may bind and be named is `server.hosts`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Literal

import uvicorn
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp

from server.app import build_server
from server.deps import Deps, open_deps
from server.evictions import EvictIdle
from server.guards import (
    HEALTH_PATH,
    MCP_PATH,
    MESSAGE_PATH,
    SSE_PATH,
    BearerGuard,
    Health,
    HostGuard,
    RewordLimits,
    SseLimit,
)
from server.hosts import WILDCARD_HOSTS, HostPolicy
from server.settings import APP_NAME, Settings
from server.shares import RequestShare, listen_share, request_share, share
from server.sockets import SocketLimits, guarded_protocol
from server.web.app import viewer_of
from storage.postgres import redact

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
UI_PATH = "/ui"  # the read-only web viewer (server.web), under the same guards

HttpTransport = Literal["sse", "streamable-http", "both-http"]


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How the HTTP transports listen and what they refuse."""

    transport: HttpTransport = "streamable-http"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tenants: tuple[tuple[str, str], ...] = ()  # (secret, tenant): --token, --tokens
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 4 * 1024 * 1024
    max_sse_connections: int = 32
    max_sessions: int = 100
    session_idle_timeout: float = 900.0
    shutdown_timeout: int = 10
    sockets: SocketLimits = field(default_factory=SocketLimits)

    @property
    def secured(self) -> bool:
        """Whether every request needs a bearer token."""
        return bool(self.tenants)

    @property
    def tenant_count(self) -> int:
        """How many tenants share the caps (`server.shares`): one without tokens."""
        return max(1, len({tenant for _, tenant in self.tenants}))

    @property
    def serves_sse(self) -> bool:
        return self.transport in ("sse", "both-http")

    @property
    def serves_streamable(self) -> bool:
        return self.transport in ("streamable-http", "both-http")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0 picks a free one); raises OSError."""
    family, _, _, _, address = socket.getaddrinfo(
        host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets it can see are TCP, and
    # without it a kept-alive response waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def listen_failure(host: str, port: int, error: OSError) -> str:
    """The one line for a port that cannot be bound: what the system said, and the fix."""
    said = f"cannot listen on {host}:{port}: {error}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"{said}. Another process holds the port: pass --port 0 to take a free one (the "
            f"log says which), or find the process with `ss -ltnp 'sport = :{port}'` (Linux) "
            f"or `lsof -nP -iTCP:{port} -sTCP:LISTEN` (macOS)."
        )
    if error.errno == errno.EACCES and 0 < port < 1024:
        return f"{said}. Ports below 1024 need privileges: pass a port above 1023, or --port 0."
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{said}. {host} is not an address of this machine: pass one that is, or 127.0.0.1."
    return said


# --- Host and Origin (DNS rebinding) -------------------------------------------------------------


# --- ASGI layers -----------------------------------------------------------------------------


# --- The app and the server --------------------------------------------------------------------


def urls(options: HttpOptions, port: int) -> dict[str, str]:
    """What clients connect to, by transport name."""
    host = options.host if options.host not in WILDCARD_HOSTS else "127.0.0.1"
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    base = f"http://{host}:{port}"
    found: dict[str, str] = {}
    if options.serves_streamable:
        found["Streamable HTTP"] = base + MCP_PATH
    if options.serves_sse:
        found["SSE"] = base + SSE_PATH
    found["web viewer"] = base + UI_PATH + "/"
    found["health"] = base + HEALTH_PATH  # last: a test waiting for it has every URL
    return found


def announce(options: HttpOptions, port: int, policy: HostPolicy) -> None:
    """Tell the operator (stderr) where clients connect."""
    for name, url in urls(options, port).items():
        print(f"{APP_NAME}: {name:<16} {url}", file=sys.stderr, flush=True)
    if options.host in WILDCARD_HOSTS:
        print(
            f"{APP_NAME}: listening on every address; clients must call it by one of these "
            f"names: {', '.join(policy.names())} (add more with --allowed-host)",
            file=sys.stderr,
            flush=True,
        )
    if options.secured:
        names = sorted({tenant for _, tenant in options.tenants})
        print(
            f"{APP_NAME}: every request except {HEALTH_PATH} needs 'Authorization: Bearer <token>'"
            f" (tenants: {', '.join(names)})",
            file=sys.stderr,
            flush=True,
        )


def build_app(
    mcp: MCPServer[Any], options: HttpOptions, port: int, viewer: ASGIApp | None = None
) -> ASGIApp:
    """The ASGI app serving the chosen transports with every guard in place, and the
    read-only web viewer at `/ui` when given (behind the same guards and token)."""
    policy = HostPolicy.for_server(options.host, port, options.allowed_hosts)
    routes, transports = _routes(mcp, options)
    if viewer is not None:
        routes.append(Mount(UI_PATH, app=viewer))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # The streamable app's own lifespan would run the session manager, but only its routes
        # are used here, so this app runs it.
        if options.serves_streamable:
            async with mcp.session_manager.run():
                announce(options, port, policy)
                yield
        else:
            announce(options, port, policy)
            yield

    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan)
    app = RewordLimits(
        app,
        {
            413: f"Request body too large: the limit is {options.max_body_bytes} bytes "
            "(--max-body-bytes). Send long content in several smaller calls.",
            503: f"Too many open Streamable HTTP sessions: the limit of {options.max_sessions} "
            "is reached and every session is busy (serving a request or holding its stream "
            "open), so none could be closed to make room. Retry in a moment, close a client you "
            "no longer use (closing ends its session), or restart frs-mcp with a larger "
            "--max-sessions.",
        },
        spared=UI_PATH if viewer is not None else "",
    )
    # Outside the rewording: its own refusal (a tenant over its share) names the share.
    # One tenant's share is the whole cap: the caps' own refusals stand.
    tenants = options.tenant_count
    shared = tenants > 1
    if options.serves_streamable:
        app = EvictIdle(
            app,
            mcp.session_manager,
            options.max_sessions,
            MCP_PATH,
            per_tenant=share(options.max_sessions, tenants) if shared else 0,
        )
    app = SseLimit(
        app,
        options.max_sse_connections,
        options.serves_streamable,
        per_tenant=share(options.max_sse_connections, tenants) if shared else 0,
    )
    app = RequestShare(
        app,
        request_share(options.sockets.max_connections, tenants),
        options.sockets.max_connections,
    )
    if options.secured:
        app = BearerGuard(app, dict(options.tenants))
    app = HostGuard(app, policy, port)
    return Health(app, tuple(transports))


def _routes(mcp: MCPServer[Any], options: HttpOptions) -> tuple[list[BaseRoute], list[str]]:
    """The SDK's routes for the chosen transports, and the transports' names."""
    # HostGuard checks Host and Origin on every path, bound to 0.0.0.0 too; the SDK's own check
    # (on only for loopback binds, with its own rules) is switched off so there is one policy.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    routes: list[BaseRoute] = []
    transports: list[str] = []
    if options.serves_streamable:
        streamable = mcp.streamable_http_app(
            streamable_http_path=MCP_PATH,
            max_request_body_size=options.max_body_bytes,
            session_idle_timeout=options.session_idle_timeout,
            max_sessions=options.max_sessions,
            transport_security=security,
            host=options.host,
        )
        routes += streamable.routes
        transports.append("streamable-http")
    if options.serves_sse:
        sse = mcp.sse_app(
            sse_path=SSE_PATH,
            message_path=MESSAGE_PATH,
            max_request_body_size=options.max_body_bytes,
            transport_security=security,
            host=options.host,
        )
        routes += sse.routes
        transports.append("sse")
    return routes, transports


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # Open subscriptions/listen streams are requests that never end by themselves: end
        # them gracefully now (on the loop, not in the signal handler), or each would hold
        # the shutdown for its whole timeout.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._on_exit)

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a caught SIGINT/SIGTERM once serving stops, which would kill the
        # process before the database is closed. Stop gracefully and return normally instead.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


async def serve_http(settings: Settings, options: HttpOptions, sock: socket.socket) -> None:
    """Serve until SIGINT/SIGTERM: in-flight requests get `shutdown_timeout` seconds to finish,
    then the database closes."""
    port = int(sock.getsockname()[1])
    deps: Deps
    cap = options.sockets.max_connections
    listens = listen_share(cap, options.tenant_count)
    source = f"half your tenant's share of --max-connections {cap}"
    async with open_deps(settings, listens, source, options.tenant_count) as deps:
        mcp = build_server(settings, shared=deps)
        config = uvicorn.Config(
            build_app(mcp, options, port, viewer_of(deps.service.store)),
            lifespan="on",
            log_config=None,  # our stderr logging, not uvicorn's (its access log goes to stdout)
            log_level=settings.log_level.lower(),
            access_log=settings.log_level.upper() == "DEBUG",
            timeout_graceful_shutdown=options.shutdown_timeout,
            http=guarded_protocol(options.sockets),
        )
        await _Server(config, deps.events.close).serve(sockets=[sock])
    log.info("stopped; database %s closed", redact(settings.database))
