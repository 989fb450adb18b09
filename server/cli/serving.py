"""Serving MCP until the process is stopped: over stdio, or over HTTP with the read-only viewer
at `/ui` (`server.http.transports`).

One process opens one database and one `frs.Env`; every HTTP session and SSE connection shares
them (the SDK enters the server lifespan once per SSE connection, so the lifespan only hands out
the shared deps).
"""

from __future__ import annotations

import logging
import socket

from server.http.options import HttpOptions
from server.http.serving import Serving, serve
from server.http.shares import listen_share
from server.http.transports import body_refusal, build_app
from server.mcp.app import build_server
from server.mcp.deps import Deps, open_deps
from server.settings import Settings
from server.web.app import viewer_of
from storage.postgres import redact

log = logging.getLogger(__name__)


async def serve_stdio(settings: Settings) -> None:
    """Serve one client over stdin and stdout until it closes them."""
    async with open_deps(settings) as deps:
        mcp = build_server(settings, shared=deps)
        log.info("serving MCP over stdio on %s", redact(settings.database))
        await mcp.run_stdio_async()


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
        app = build_app(mcp, options, port, viewer_of(deps.env.store))
        serving = Serving(
            sockets=options.sockets,
            max_body=options.max_body_bytes,
            body_text=body_refusal(options.max_body_bytes),
            shutdown_timeout=options.shutdown_timeout,
            log_level=settings.log_level,
            lifespan=True,
        )
        await serve(app, sock, serving, on_exit=deps.events.close)
    log.info("stopped; database %s closed", redact(settings.database))
