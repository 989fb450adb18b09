"""What a socket may cost the server: how many are open at once, how long one may take to send
its request's headers and its body, how long it may sit idle between requests.

uvicorn (0.54, h11) closes a kept-alive socket idle after a response (`timeout_keep_alive`),
but never times out a socket that has not finished its headers or its body, and its own
`limit_concurrency` accepts every socket and refuses only once a request arrives. So a few
dozen clients that connect and send nothing, or a header a byte a minute, or a body shorter
than its Content-Length, would hold their sockets for ever. `guarded_protocol` is uvicorn's
h11 protocol with these limits added; every refusal names its limit and the flag that sets
it. At the connection cap, the oldest socket that has not sent a whole request yet is closed
to admit the new one, so sockets that connect and wait lock no one out, even for the header
timeout; only when every socket is in use is the newcomer refused. (A socket kept alive
between requests is not closed for a newcomer: its client may be sending on it that moment.)
A client that stops reading a large answer fills the socket's send buffer, uvicorn pauses the
app (its flow control) and the answer sits in memory for ever: 10 exports never read took the
server from 74 to 387 MiB. A socket whose peer has read nothing for `write_timeout` seconds
while writing is paused is aborted, which frees the answer; glibc keeps freed blocks that
large in its heap, so the memory is then handed back to the system (`give_back_memory`).
Each tenant's share of open requests (`server.http.shares`) leaves an eighth of the sockets out of
every share, so one tenant's requests never fill the cap and `/health` gets in.

A server reachable from other machines belongs behind a reverse proxy all the same (TLS, rate
limits); these limits keep a loopback or LAN server usable, they are not a firewall.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

import h11

from server.internals import H11

log = logging.getLogger(__name__)


#: Seconds from aborting a socket to handing freed memory back: time for its request's task
#: to see the disconnect and drop the answer.
TRIM_AFTER = 1.0


def give_back_memory() -> None:
    """Hand the heap's free memory back to the system (glibc's `malloc_trim`; elsewhere
    nothing). glibc keeps freed blocks of tens of megabytes in its heap: ten aborted exports'
    answers, freed, kept the server at 600 MiB (118 idle); handed back, 108 MiB."""
    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # no C library to ask (Windows)
        return
    if trim is not None:
        trim(0)


@dataclass(frozen=True, slots=True)
class SocketLimits:
    """The limits of `guarded_protocol`; the CLI's flags set them."""

    max_connections: int = 256
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    write_timeout: float = 30.0


def _raw_response(status: int, reason: str, text: str) -> bytes:
    """A whole response written straight to the socket: the request may not even have begun,
    so h11 (which answers only requests it has read) cannot frame it."""
    body = (text + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class Sockets:
    """What the sockets of one server share: their limits, the sockets that have not yet sent
    a whole first request, and the hand-back of memory that is due."""

    def __init__(self, limits: SocketLimits) -> None:
        self.limits = limits
        # Oldest first: at the cap, the oldest of them makes room for a newcomer, so sockets
        # that connect and wait cannot lock real clients out even for the header timeout. A
        # client sends its first request at once.
        self.fresh: OrderedDict[Guarded, None] = OrderedDict()
        # `TRIM_AFTER` the latest abort: aborts close together share one.
        self._trim: asyncio.TimerHandle | None = None

    def trim_later(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand freed memory back `TRIM_AFTER` from now (and not at an earlier time still due)."""
        if self._trim is not None:
            self._trim.cancel()
        self._trim = loop.call_later(TRIM_AFTER, give_back_memory)


def guarded_protocol(limits: SocketLimits) -> type[H11]:
    """uvicorn's h11 protocol with `limits` enforced; pass it as `uvicorn.Config(http=...)`.
    Each call makes a class of its own: its sockets share their limits and count with each
    other, not with another server's."""

    class Limited(Guarded):
        sockets = Sockets(limits)

    return Limited


class Guarded(H11):
    """uvicorn's h11 protocol with the limits of its `sockets` enforced (see the module)."""

    sockets: ClassVar[Sockets]  # `guarded_protocol` gives each server's class its own
    _deadline: asyncio.TimerHandle | None = None
    _waiting_for: str = ""
    _unread: asyncio.TimerHandle | None = None
    _unread_bytes: int = 0

    @property
    def limits(self) -> SocketLimits:
        return self.sockets.limits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.limits.keep_alive_timeout  # type: ignore[assignment]

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            log.warning("refused a connection: %d open", self.limits.max_connections)
            self._refuse(
                503,
                "Service Unavailable",
                f"Too many connections: the limit of {self.limits.max_connections} is reached "
                "(--max-connections). Close connections you no longer use and retry.",
            )
            return
        self.sockets.fresh[self] = None
        self._arm("headers")

    def _make_room(self) -> bool:
        """Close the oldest socket that has sent no whole request yet; False if none."""
        while self.sockets.fresh:
            oldest, _ = self.sockets.fresh.popitem(last=False)
            if oldest.transport.is_closing():
                continue
            oldest._disarm()
            oldest._refuse(
                503,
                "Service Unavailable",
                f"Closed: the server is at its limit of {self.limits.max_connections} connections "
                "(--max-connections) and this one had sent no request. Send the request "
                "right after connecting.",
            )
            return True
        return False

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # arms uvicorn's keep-alive timer, or goes on with
        self._follow()  # a pipelined request

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._unread is None:
            self._watch_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_watching()

    def _watch_reading(self) -> None:
        self._unread_bytes = self.transport.get_write_buffer_size()
        self._unread = self.loop.call_later(self.limits.write_timeout, self._check_reading)

    def _stop_watching(self) -> None:
        if self._unread is not None:
            self._unread.cancel()
        self._unread = None

    def _check_reading(self) -> None:
        """Writing is still paused: a peer that read some of the buffer since is slow but
        reading, and gets another `write_timeout`; one that read nothing is aborted (a
        close would wait for the unread buffer to flush, for ever)."""
        self._unread = None
        if self.transport.is_closing():
            return
        if self.transport.get_write_buffer_size() < self._unread_bytes:
            self._watch_reading()
            return
        log.warning(
            "closed a connection: its client read nothing of the answer for %g s (--write-timeout)",
            self.limits.write_timeout,
        )
        self.transport.abort()
        self.sockets.trim_later(self.loop)

    def connection_lost(self, exc: Exception | None) -> None:
        self.sockets.fresh.pop(self, None)
        self._disarm()
        self._stop_watching()
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Arm the timer the request's state calls for: its headers or its body are on
        their way; otherwise none (the app is answering, or the socket is between
        requests and uvicorn's keep-alive timer holds it)."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is not h11.IDLE:
            self.sockets.fresh.pop(self, None)  # a whole request head arrived
        if state is h11.SEND_BODY:
            self._arm("body")
        elif state is h11.IDLE and self.timeout_keep_alive_task is None:
            self._arm("headers")  # some of the next request's head has arrived
        else:
            self._disarm()

    def _arm(self, what: str) -> None:
        if self._deadline is not None and self._waiting_for == what:
            return
        self._disarm()
        delay = self.limits.header_timeout if what == "headers" else self.limits.body_timeout
        self._waiting_for = what
        self._deadline = self.loop.call_later(delay, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.conn.our_state in (h11.SEND_BODY, h11.DONE, h11.MUST_CLOSE):
            # Answered already (a body over the cap gets its 413 before it is read): the
            # rest of the body is not coming in time; a second answer would be garbage.
            log.warning(
                "closed a connection: the rest of an answered request's body did "
                "not arrive within %g s (--body-timeout)",
                self.limits.body_timeout,
            )
            self.transport.close()
            return
        if self._waiting_for == "headers":
            text = (
                f"Request timeout: the request's headers did not arrive within "
                f"{self.limits.header_timeout:g} s (--header-timeout)."
            )
        else:
            text = (
                f"Request timeout: the request's body did not arrive within "
                f"{self.limits.body_timeout:g} s of its headers (--body-timeout); check that "
                "Content-Length matches the body sent."
            )
        log.warning("closed a connection: %s", text)
        self._refuse(408, "Request Timeout", text)

    def _refuse(self, status: int, reason: str, text: str) -> None:
        self.transport.write(_raw_response(status, reason, text))
        self.transport.close()
