"""The gateway between a test and a tiny scripted upstream, both served on 127.0.0.1:0.

The upstream records every request byte for byte and answers from a script: a function of
the request that returns the status, headers and the body chunks to stream. Every request
body it receives on /v1/messages is checked with the wire's validator (`problems`), and its
thinking blocks as the API documents preserved thinking (`tests.hosts.model.binding`: a
changed prefix is refused with the API's 400, or its blocks dropped when the request asks),
so any test that sends through the gateway also proves the gateway never sent an invalid
request.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from starlette.types import Receive, Scope, Send

from frs.autopilot import Autopilot
from server.gateway import chat, responses
from server.gateway.anthropic_rules import problems
from server.gateway.command import AUTOPILOT, open_gateway
from server.gateway.proxy import READ_BUDGET, Gateway, Upstreams
from server.http.listening import bind_socket
from server.settings import Settings
from tests.hosts.model import binding, caching


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the upstream received it."""

    method: str
    path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    chunks: tuple[bytes, ...] = (b'{"type":"message","content":[]}',)


Script = Callable[[Seen], Reply]


def text_reply(text: str = "done") -> Reply:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
    }
    return Reply(chunks=(json.dumps(body).encode(),))


#: The rules each wire's requests must keep, checked on every request the upstream receives.
VALIDATORS: dict[str, Callable[[object], list[str]]] = {
    "/v1/messages": problems,
    "/v1/responses": responses.WIRE.problems,
    "/v1/chat/completions": chat.WIRE.problems,
}


async def whole_body(receive: Receive) -> bytes:
    """An ASGI request's whole body, as the scripted upstreams read it (tests and bench)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


@dataclass
class Upstream:
    # An answer with no content: the gateway records nothing from it, so tests whose host
    # transcripts follow their own course are not mixed with answers the host never kept.
    script: Script = lambda seen: Reply()
    seen: list[Seen] = field(default_factory=list)
    invalid: list[tuple[int, list[str]]] = field(default_factory=list)
    #: Per /v1/messages request (by its index in `seen`): the thinking blocks the API would
    #: have dropped, as (message, block) indices.
    dropped: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        seen = Seen(
            scope["method"],
            scope["path"],
            scope["query_string"].decode(),
            tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]),
            await whole_body(receive),
        )
        self.seen.append(seen)
        validator = VALIDATORS.get(seen.path)
        refused = None
        if validator is not None and seen.method == "POST" and not seen.header("content-encoding"):
            payload = json.loads(seen.body)
            found = validator(payload)
            if seen.path == "/v1/messages":
                checked = binding.check(payload, seen.headers)
                refused = checked.error or caching.check(payload)
                found = [*found, refused] if refused else found
                self.dropped[len(self.seen) - 1] = checked.dropped
            if found:
                self.invalid.append((len(self.seen) - 1, found))
        reply = self.script(seen) if refused is None else _refusal(refused)
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(k.encode(), v.encode()) for k, v in reply.headers],
            }
        )
        for chunk in reply.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _refusal(message: str) -> Reply:
    """The API's 400 for a request it refuses."""
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return Reply(status=400, chunks=(json.dumps(error).encode(),))


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """`app` served on 127.0.0.1 at a free port, until the block ends; yields its base URL."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_serve, server, sock)
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True


async def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
    await server.serve(sockets=[sock])


@dataclass
class Rig:
    url: str  # the gateway's
    upstream: Upstream
    gateway: Gateway
    client: httpx2.AsyncClient
    database: Path
    upstream_url: str = ""  # the scripted upstream's base URL

    async def post(
        self,
        body: bytes | dict[str, Any],
        headers: Sequence[tuple[str, str]] = (),
        path: str = "/v1/messages",
    ) -> httpx2.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        base = [
            ("content-type", "application/json"),
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
        ]
        answer = await self.client.post(self.url + path, content=content, headers=[*base, *headers])
        await self.gateway.settled()  # what the request added is recorded
        return answer


@asynccontextmanager
async def rig(
    tmp_path: Path,
    script: Script | None = None,
    rewrite: bool = True,
    nudges: int | None = None,
    dsn: str | None = None,
    autopilot: Autopilot | None = AUTOPILOT,
    upstream_timeout: float = 600.0,
    read_budget: int = READ_BUDGET,
) -> AsyncIterator[Rig]:
    """The gateway on a fresh database (SQLite, or the PostgreSQL database `dsn`), in front
    of a scripted upstream; its autopilot as `frs-mcp gateway` runs it unless told."""
    upstream = Upstream() if script is None else Upstream(script)
    database = tmp_path / "frs.db"
    async with served(upstream) as upstream_url:
        settings = Settings(database=dsn or str(database))
        async with (
            open_gateway(
                settings,
                Upstreams(anthropic=upstream_url, openai=upstream_url),
                rewrite=rewrite,
                nudge_step=nudges,
                autopilot=autopilot,
                upstream_timeout=upstream_timeout,
                read_budget=read_budget,
            ) as gateway,
            served(gateway) as url,
            httpx2.AsyncClient(timeout=30) as client,
        ):
            yield Rig(url, upstream, gateway, client, database, upstream_url)
        assert upstream.invalid == [], f"the upstream received invalid requests: {upstream.invalid}"
