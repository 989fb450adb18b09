"""What a request's body may cost: at most `limit` bytes, for every app a server serves.

The announced length decides first: a Content-Length over the limit is answered 413 before a
byte of the body is read, so a client that announces a gigabyte and sends nothing gets its
answer at once. A body without one (chunked) is counted as the app reads it and cut off at
the limit: the client gets its 413 and the app is told the client is gone
(`http.disconnect`), so a cut body is never taken for a whole one. Either way the server holds
at most the limit of any one body, whatever a client sends. What the client goes on sending
after its answer is read and dropped as it comes (uvicorn drops a body that comes after the
answer), until it ends or the body timeout closes the socket (`server.http.sockets`): closing
at once would reset the connection under the client's unread answer, and a client that
sends its whole body before reading (most do) would see a broken pipe instead of its 413.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Answers a refusal in the app's own shape (plain text, a provider's JSON error): the status
#: and the text that names the limit and what to do.
Refusal = Callable[[Send, int, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class BodyLimit:
    """413 for a body over `limit` bytes, in the words `text` gives and the shape `refuse`
    writes."""

    app: ASGIApp
    limit: int
    refuse: Refusal
    text: str  # the refusal: it names the limit and the flag that sets it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self.refuse(send, 413, self.text)
            return
        await self.app(scope, *_Counted(self, receive, send).pair())


class _Counted:
    """One request's body counted as the app reads it, and its answer, until the limit."""

    def __init__(self, guard: BodyLimit, receive: Receive, send: Send) -> None:
        self.guard = guard
        self.source = receive
        self.sink = send
        self.read = 0
        self.started = False  # the app began its answer
        self.refused = False  # the body went over: the app's answer goes nowhere

    def pair(self) -> tuple[Receive, Send]:
        return self.receive, self.send

    async def receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self.source()
        if message["type"] == "http.request":
            self.read += len(message.get("body", b""))
            if self.read > self.guard.limit:
                self.refused = True
                if not self.started:
                    await self.guard.refuse(self.sink, 413, self.guard.text)
                return {"type": "http.disconnect"}
        return message

    async def send(self, message: Message) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self.sink(message)


def _content_length(scope: Scope) -> int | None:
    """The announced length of the body, if any (h11 has checked that it is a number)."""
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
