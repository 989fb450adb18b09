"""The ASGI layers in front of the SDK's apps, outermost first: `/health` (no auth), the
Host and Origin checks (421, 403), the bearer token (401), the SSE connection limit (503), and
the rewording of the SDK's own refusals (413, 503) so they name the limit.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.http.hosts import HostPolicy
from server.http.tenants import tenant_of
from server.settings import APP_NAME, version

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGE_PATH = "/messages/"
HEALTH_PATH = "/health"
#: Where an authorized request carries its tenant: `request.state.frs_tenant`.
TENANT_KEY = "frs_tenant"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (),
    head: bool = False,
) -> None:
    """A whole answer of this server's own: its type and length, then `headers`; the body is
    left out when answering a HEAD request (`head`), its length stays."""
    start = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def refuse(
    send: Send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await respond(send, status, (text + "\n").encode(), b"text/plain; charset=utf-8", headers)


def tenant_in(scope: Scope) -> str:
    """The tenant `BearerGuard` named for this request ("" without tokens: one tenant)."""
    return str(scope.get("state", {}).get(TENANT_KEY, ""))


def _shown(value: str) -> str:
    return repr(value[:100])


@dataclass(slots=True)
class Health:
    """`GET /health` answers 200 without auth or Host checks, for probes and load balancers."""

    app: ASGIApp
    transports: tuple[str, ...]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != HEALTH_PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await refuse(send, 405, "Use GET /health.", [(b"allow", b"GET, HEAD")])
            return
        body = json.dumps(
            {
                "status": "ok",
                "server": APP_NAME,
                "version": version(),
                "transports": self.transports,
            }
        ).encode()
        await respond(send, 200, body, b"application/json", head=scope["method"] == "HEAD")


@dataclass(slots=True)
class HostGuard:
    """421 for a Host this server does not answer to, 403 for a foreign Origin."""

    app: ASGIApp
    policy: HostPolicy
    port: int

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if not self.policy.allows_host(host):
            log.warning("refused Host %s (DNS rebinding guard)", _shown(host or ""))
            await refuse(
                send,
                421,
                f"Misdirected request: Host {_shown(host or '')} is not a name this server "
                f"answers to (a guard against DNS rebinding). Use http://127.0.0.1:{self.port}, "
                "or start frs-mcp with --allowed-host <the name clients use>.",
            )
            return
        origin = _header(scope, b"origin")
        if not self.policy.allows_origin(origin):
            log.warning("refused Origin %s (DNS rebinding guard)", _shown(origin or ""))
            await refuse(
                send,
                403,
                f"Forbidden: pages from Origin {_shown(origin or '')} may not call this server "
                "(a guard against DNS rebinding). To allow them, start frs-mcp with "
                "--allowed-host <that page's host>.",
            )
            return
        await self.app(scope, receive, send)


@dataclass(slots=True)
class BearerGuard:
    """401 unless the request carries `Authorization: Bearer <secret>` of a tenant (compared
    in constant time, `server.http.tenants`); the request then runs as that tenant
    (`scope["state"]["frs_tenant"]`, read by `server.mcp.scopes`), and as the principal
    `principal(tenant)` makes for the app behind (`scope["user"]`; the MCP transports' keeps
    each MCP session to the tenant that opened it, `server.http.transports`)."""

    app: ASGIApp
    tenants: Mapping[str, str]  # secret -> tenant
    principal: Callable[[str], object] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scheme, _, given = (_header(scope, b"authorization") or "").partition(" ")
        tenant = tenant_of(self.tenants, given.strip()) if scheme.lower() == "bearer" else None
        if tenant is not None:
            scope.setdefault("state", {})[TENANT_KEY] = tenant
            if self.principal is not None:
                scope["user"] = self.principal(tenant)
            await self.app(scope, receive, send)
            return
        await refuse(
            send,
            401,
            "Unauthorized: send the header 'Authorization: Bearer <token>' with the token this "
            "server was started with (--token or FRS_TOKEN) or your tenant's (--tokens).",
            [(b"www-authenticate", f'Bearer realm="{APP_NAME}"'.encode())],
        )


@dataclass(slots=True)
class SseLimit:
    """At most `limit` open SSE streams, and at most `per_tenant` of one tenant's (its share,
    `server.http.shares`); one more gets 503 saying what to do."""

    app: ASGIApp
    limit: int
    streamable_too: bool
    per_tenant: int = 0  # 0: no share (the whole limit)
    open: Counter[str] = field(default_factory=Counter)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != SSE_PATH or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        tenant = tenant_in(scope)
        share = self.per_tenant or self.limit
        total = sum(self.open.values())
        if total >= self.limit or self.open[tenant] >= share:
            log.warning("refused an SSE connection: %d of %d open", total, self.limit)
            other = f" connect over Streamable HTTP at {MCP_PATH}," if self.streamable_too else ""
            whose = (
                f"the limit of {self.limit} is reached"
                if total >= self.limit
                else f"your tenant holds its share of {share} of the {self.limit}"
            )
            await refuse(
                send,
                503,
                f"Too many SSE connections: {whose}. Close another SSE client and retry,"
                f"{other} or restart frs-mcp with a larger --max-sse-connections.",
                [(b"retry-after", b"5")],
            )
            return
        # No await between the check and the count: one event loop, so no race.
        self.open[tenant] += 1
        try:
            await self.app(scope, receive, _once(send))
        finally:
            self.open[tenant] -= 1


def _once(send: Send) -> Send:
    """Drop a second response. After its stream the SDK's SSE endpoint returns an empty
    `Response()`; uvicorn ignores it once the client is gone, but when the server ends the
    stream itself (at shutdown) it arrives as a second response, which is an error."""
    started = dropping = False

    async def guarded(message: Message) -> None:
        nonlocal started, dropping
        if message["type"] == "http.response.start":
            dropping, started = started, True
        if not dropping:
            await send(message)

    return guarded


@dataclass(slots=True)
class RewordLimits:
    """Replace the SDK's terse 413/503 bodies with ones that name the limit and the way out,
    keeping their format (JSON-RPC error or plain text) and answering the request's own id
    (the SDK refuses before it reads the body, so it says `"id": null`)."""

    app: ASGIApp
    texts: dict[int, str]
    spared: str = ""  # a path prefix whose answers are not the SDK's (the viewer's), kept

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.spared and scope["path"].startswith(self.spared)):
            await self.app(scope, receive, send)
            return
        held: list[Message] = []
        body = RequestBody(receive)

        async def reword(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in self.texts:
                held.append(message)
                return
            if held and message["type"] == "http.response.body":
                start = held.pop()
                text = self.texts[start["status"]]
                # A body over the limit is not read on to find its id: a client announcing
                # more than the limit and sending nothing would hold the answer until its
                # body timed out (408) instead of getting its 413 at once.
                read = start["status"] != 413
                await _send_reworded(send, start, message, text, await body.request_id(read))
                return
            await send(message)

        await self.app(scope, body.receive, reword)


_ID_BYTES = 64 * 1024  # a request whose id is not within this much is answered with id null


@dataclass(slots=True)
class RequestBody:
    """The request body as the app reads it, its first `_ID_BYTES` kept to find the id."""

    source: Receive
    kept: bytearray = field(default_factory=bytearray)
    more: bool = True

    async def receive(self) -> Message:
        message = await self.source()
        if message["type"] == "http.request":
            if len(self.kept) <= _ID_BYTES:
                self.kept += message.get("body", b"")
            self.more = bool(message.get("more_body", False))
        return message

    async def request_id(self, read: bool = True) -> str | int | None:
        """The JSON-RPC id of a single request, reading what the app left of a small body
        (unless not `read`: then from what was read); None for a batch, a body too large or
        not JSON."""
        while read and self.more and len(self.kept) <= _ID_BYTES:
            if (await self.receive())["type"] != "http.request":
                break
        if self.more or len(self.kept) > _ID_BYTES:
            return None
        try:
            found = json.loads(self.kept).get("id")
        except (ValueError, AttributeError):
            return None
        return found if isinstance(found, str | int) and not isinstance(found, bool) else None


async def _send_reworded(
    send: Send, start: Message, body: Message, text: str, request_id: str | int | None
) -> None:
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
    data: bytes
    if content_type.startswith(b"application/json"):
        try:
            payload = json.loads(body.get("body", b"") or b"{}")
            payload["error"]["message"] = text
            payload["id"] = request_id
            data = json.dumps(payload).encode()
        except (ValueError, KeyError, TypeError):
            data = json.dumps(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": text}}
            ).encode()
    else:
        data = (text + "\n").encode()
    headers.append((b"content-length", str(len(data)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": data})
