"""The one way the three HTTP servers serve: the MCP transports (`server.cli.serving`), the
viewer (`frs-mcp web`) and the gateway (`frs-mcp gateway`) each hand `serve` their app and
the socket `server.http.listening.listen` bound.

Every one of them gets the same: the socket limits of `server.http.sockets` (a cap on open
sockets; header, body, keep-alive and write timeouts), the body cap of `server.http.bodies`,
and a SIGINT or SIGTERM that stops serving gracefully (in-flight requests get
`shutdown_timeout` seconds) and then returns, so the caller closes its database (SQLite
checkpoints its WAL into the file) and the process exits 0. uvicorn itself re-raises the signal
once it has stopped, which ends the process with status 143 before anything is closed:
systemd, Docker and `kill` send SIGTERM.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

import uvicorn
from starlette.types import ASGIApp

from server.http.bodies import BodyLimit, Refusal
from server.http.guards import refuse
from server.http.sockets import SocketLimits, guarded_protocol
from server.internals import Uvicorn


@dataclass(frozen=True, slots=True)
class Serving:
    """How a server serves, whatever its app: what a socket and a body may cost, how long a
    signal waits for in-flight requests, and how much uvicorn logs."""

    sockets: SocketLimits = field(default_factory=SocketLimits)
    max_body: int = 4 * 1024 * 1024
    #: The refusal of a body over `max_body`: it names the limit and the flag that sets it.
    body_text: str = ""
    shutdown_timeout: int = 10
    log_level: str = "INFO"
    lifespan: bool = False  # whether the app has a lifespan (startup and shutdown) to run

    @property
    def refusal(self) -> str:
        return self.body_text or (
            f"Request body too large: the limit is {self.max_body} bytes. Send a smaller body."
        )


async def serve(
    app: ASGIApp,
    sock: socket.socket,
    serving: Serving,
    refusal: Refusal = refuse,
    on_exit: Callable[[], None] | None = None,
) -> None:
    """Serve `app` on `sock` until SIGINT or SIGTERM, then return once in-flight requests are
    done (or `serving.shutdown_timeout` has passed). `refusal` writes the 413 of a body over
    the cap in the app's own shape; `on_exit` runs on the loop when a signal arrives (to end
    streams that never end by themselves)."""
    config = uvicorn.Config(
        BodyLimit(app, serving.max_body, refusal, serving.refusal),
        lifespan="on" if serving.lifespan else "off",
        log_config=None,  # our stderr logging, not uvicorn's (its access log goes to stdout)
        log_level=serving.log_level.lower(),
        # The access log shows each request's target, which can hold a key in its query:
        # only at DEBUG, through the log's masks (`server.cli.logs`).
        access_log=serving.log_level.upper() == "DEBUG",
        timeout_graceful_shutdown=serving.shutdown_timeout,
        http=guarded_protocol(serving.sockets),
    )
    await _Server(config, on_exit).serve(sockets=[sock])


class _Server(Uvicorn):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None] | None) -> None:
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
        if self._loop is not None and self._on_exit is not None:
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
