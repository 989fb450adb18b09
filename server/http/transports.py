"""Serve MCP over SSE and Streamable HTTP on one port, safe by default.

In front of the SDK's apps sit the guards of `server.http.guards` (health, Host and Origin,
token, SSE limit); the SDK enforces the body limit (413) on `/mcp` and on the SSE message
endpoint and the session limit on `/mcp` (503), and the guards reword those refusals to name
the limit. Which hosts may bind and be named is `server.http.hosts`; the process that serves
this app is `server.cli.serving`.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp

from server.http.evictions import EvictIdle
from server.http.guards import (
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
from server.http.hosts import WILDCARD_HOSTS, HostPolicy
from server.http.options import HttpOptions
from server.http.shares import RequestShare, request_share, share
from server.settings import APP_NAME

UI_PATH = "/ui"  # the read-only web viewer (server.web), under the same guards


def principal(tenant: str) -> AuthenticatedUser:
    """What a request of `tenant` runs as for the SDK (`BearerGuard`): the SDK binds each
    Streamable HTTP session and SSE stream to the principal that opened it and answers anyone
    else's request for it (POST, GET, DELETE, an SSE message) exactly as for an unknown
    session: 404."""
    return AuthenticatedUser(AccessToken(token="", client_id=tenant, scopes=[]))


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


def body_refusal(limit: int) -> str:
    """The refusal of a body over the limit, on every path (`server.http.bodies` answers a
    body it sees is too large, the SDK one it finds too large, in the same words)."""
    return (
        f"Request body too large: the limit is {limit} bytes (--max-body-bytes). Send long "
        "content in several smaller calls."
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
    app: ASGIApp = Starlette(routes=routes, lifespan=_lifespan(mcp, options, port, policy))
    app = _capped(app, mcp, options, spared=UI_PATH if viewer is not None else "")
    if options.secured:
        app = BearerGuard(app, dict(options.tenants), principal)
    app = HostGuard(app, policy, port)
    return Health(app, tuple(transports))


def _lifespan(
    mcp: MCPServer[Any], options: HttpOptions, port: int, policy: HostPolicy
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: it runs the Streamable HTTP session manager when that transport is
    served, and says where the server listens."""

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

    return lifespan


def _capped(app: ASGIApp, mcp: MCPServer[Any], options: HttpOptions, spared: str) -> ASGIApp:
    """`app` behind the caps on bodies, sessions, SSE streams and each tenant's requests, each
    refusal worded for the client (but under `spared`, the viewer's path)."""
    app = RewordLimits(
        app,
        {
            413: body_refusal(options.max_body_bytes),
            503: f"Too many open Streamable HTTP sessions: the limit of {options.max_sessions} "
            "is reached and every session is busy (serving a request or holding its stream "
            "open), so none could be closed to make room. Retry in a moment, close a client you "
            "no longer use (closing ends its session), or restart frs-mcp with a larger "
            "--max-sessions.",
        },
        spared=spared,
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
    return RequestShare(
        app,
        request_share(options.sockets.max_connections, tenants),
        options.sockets.max_connections,
    )


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
