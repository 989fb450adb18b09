"""Serving MCP until the process is stopped: over stdio, or over HTTP with the read-only viewer
at `/ui` (`server.http.transports`).

One process opens one database and one service; every HTTP session and SSE connection shares
them (the SDK enters the server lifespan once per SSE connection, so the lifespan only hands out
the shared deps).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import uvicorn

from server.http.options import HttpOptions
from server.http.shares import listen_share
from server.http.sockets import guarded_protocol
from server.http.transports import build_app
from server.internals import Uvicorn
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


class _Server(Uvicorn):
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
