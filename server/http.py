"""Serve MCP over SSE and Streamable HTTP on one port, safe by default.

One process opens one database and one service; every HTTP session and SSE connection shares
them (the SDK enters the server lifespan once per SSE connection, so the lifespan only hands out
the shared deps). In front of the SDK's apps sit, outermost first: `/health` (no auth), Host and
Origin checks against DNS rebinding (421, 403), the bearer token (401) and the SSE connection
limit (503). The SDK enforces the body limit (413) on `/mcp` and on the SSE message endpoint and
the session limit on `/mcp` (503); their refusals are reworded here to name the limit.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import uvicorn
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.app import build_server, version
from server.deps import Deps, open_deps
from server.settings import APP_NAME, Settings

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGE_PATH = "/messages/"
HEALTH_PATH = "/health"
DEFAULT_PORT = 8765

HttpTransport = Literal["sse", "streamable-http", "both-http"]
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARD_HOSTS = ("0.0.0.0", "::", "")


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How the HTTP transports listen and what they refuse."""

    transport: HttpTransport = "streamable-http"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 4 * 1024 * 1024
    max_sse_connections: int = 32
    max_sessions: int = 100
    session_idle_timeout: float = 900.0
    shutdown_timeout: int = 10

    @property
    def serves_sse(self) -> bool:
        return self.transport in ("sse", "both-http")

    @property
    def serves_streamable(self) -> bool:
        return self.transport in ("streamable-http", "both-http")


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def unsafe_bind(host: str, token: str | None) -> str | None:
    """Why serving on `host` without a token is refused, or None when it is allowed."""
    if token or is_loopback(host):
        return None
    return (
        f"refusing to listen on {host} without a token: anyone who can reach this port could "
        "read and change every session. Set a token with FRS_TOKEN=<secret> (or --token <secret>), "
        "e.g. export FRS_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))'); "
        "clients then send 'Authorization: Bearer <secret>'. Or bind to 127.0.0.1 (the default)."
    )


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


# --- Host and Origin (DNS rebinding) -------------------------------------------------------------

Port = int | None | Literal["*"]  # None: the header names no port


@dataclass(frozen=True, slots=True)
class _HostRule:
    name: str  # lower case; IPv6 without brackets
    port: Port  # "*" matches any port, and none

    def matches(self, name: str, port: int | None) -> bool:
        return self.name == name and (self.port == "*" or self.port == port)


def _split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6][:port]` as (name, port); None if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") > 1:
        return None  # an IPv6 address must be bracketed in a Host header
    else:
        name, _, port_text = value.partition(":")
        port_text = port_text if ":" in value else None
    if not name:
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


def parse_allowed_host(value: str) -> tuple[str, Port]:
    """One --allowed-host as (name, port): `name` (port None: given without one), `name:PORT`,
    or `name:*` (any port); raises ValueError for anything else."""
    text = value.strip().lower()
    wildcard = text.endswith(":*")
    parsed = _split_host(text[:-2] if wildcard else text)
    if parsed is None or (wildcard and parsed[1] is not None) or not _is_name(parsed[0]):
        raise ValueError(f"--allowed-host {value!r} is not a host name, host:port or host:*")
    return parsed[0], "*" if wildcard else parsed[1]


_LABELS = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


def _is_name(name: str) -> bool:
    """A DNS name, an IPv4 address or an IPv6 address (given without its brackets)."""
    if _LABELS.match(name):
        return True
    try:
        return ipaddress.ip_address(name).version == 6
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which Host and Origin headers may reach the server.

    Host must name the server as it is bound (loopback names always, the bound address when it
    is a specific one) with its port, or an --allowed-host. Origin is absent for non-browser
    clients; when sent, it must be a loopback page (any port) or an allowed host.
    """

    rules: tuple[_HostRule, ...]

    @classmethod
    def for_server(cls, host: str, port: int, allowed: Sequence[str] = ()) -> HostPolicy:
        names = list(_LOOPBACK_NAMES)
        bound = host.strip("[]").lower()
        if bound not in _WILDCARD_HOSTS and bound not in names:
            names.append(bound)
        rules = [_HostRule(name, port) for name in names]
        if port == 80:
            rules += [_HostRule(name, None) for name in names]
        for value in allowed:
            name, given = parse_allowed_host(value)
            if given is None:
                # A name without a port: behind a proxy on the default port, or this server's.
                rules += [_HostRule(name, None), _HostRule(name, port)]
            else:
                rules.append(_HostRule(name, given))
        return cls(tuple(rules))

    def allows_host(self, header: str | None) -> bool:
        parsed = _split_host(header) if header else None
        return parsed is not None and any(rule.matches(*parsed) for rule in self.rules)

    def allows_origin(self, header: str | None) -> bool:
        if header is None:
            return True
        try:
            parts = urlsplit(header.strip())
            name, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not name:
            return False
        if name in _LOOPBACK_NAMES:
            return True
        return any(rule.matches(name, port) for rule in self.rules)

    def names(self) -> list[str]:
        seen: list[str] = []
        for rule in self.rules:
            shown = f"[{rule.name}]" if ":" in rule.name else rule.name
            if shown not in seen:
                seen.append(shown)
        return seen


# --- ASGI layers -----------------------------------------------------------------------------


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _refuse(
    send: Send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


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
            await _refuse(send, 405, "Use GET /health.", [(b"allow", b"GET, HEAD")])
            return
        body = json.dumps(
            {
                "status": "ok",
                "server": APP_NAME,
                "version": version(),
                "transports": self.transports,
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )


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
            await _refuse(
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
            await _refuse(
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
    """401 unless the request carries `Authorization: Bearer <token>` (compared in constant
    time)."""

    app: ASGIApp
    token: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorized(_header(scope, b"authorization")):
            await self.app(scope, receive, send)
            return
        await _refuse(
            send,
            401,
            "Unauthorized: send the header 'Authorization: Bearer <token>' with the token this "
            "server was started with (--token or FRS_TOKEN).",
            [(b"www-authenticate", f'Bearer realm="{APP_NAME}"'.encode())],
        )

    def _authorized(self, header: str | None) -> bool:
        scheme, _, given = (header or "").partition(" ")
        # compare_digest on bytes: constant time for equal lengths, no early exit on a prefix.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self.token.encode()
        )


@dataclass(slots=True)
class SseLimit:
    """At most `limit` open SSE streams; one more gets 503 saying what to do."""

    app: ASGIApp
    limit: int
    streamable_too: bool
    open: int = field(default=0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != SSE_PATH or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        if self.open >= self.limit:
            log.warning("refused an SSE connection: %d of %d open", self.open, self.limit)
            other = f" connect over Streamable HTTP at {MCP_PATH}," if self.streamable_too else ""
            await _refuse(
                send,
                503,
                f"Too many SSE connections: the limit of {self.limit} is reached. Close another "
                f"SSE client and retry,{other} or restart frs-mcp with a larger "
                "--max-sse-connections.",
                [(b"retry-after", b"5")],
            )
            return
        # No await between the check and the count: one event loop, so no race.
        self.open += 1
        try:
            await self.app(scope, receive, _once(send))
        finally:
            self.open -= 1


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
    keeping their format (JSON-RPC error or plain text)."""

    app: ASGIApp
    texts: dict[int, str]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def reword(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in self.texts:
                held.append(message)
                return
            if held and message["type"] == "http.response.body":
                start = held.pop()
                await _send_reworded(send, start, message, self.texts[start["status"]])
                return
            await send(message)

        await self.app(scope, receive, reword)


async def _send_reworded(send: Send, start: Message, body: Message, text: str) -> None:
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
    data: bytes
    if content_type.startswith(b"application/json"):
        try:
            payload = json.loads(body.get("body", b"") or b"{}")
            payload["error"]["message"] = text
            data = json.dumps(payload).encode()
        except (ValueError, KeyError, TypeError):
            data = json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": text}}
            ).encode()
    else:
        data = (text + "\n").encode()
    headers.append((b"content-length", str(len(data)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": data})


# --- The app and the server --------------------------------------------------------------------


def urls(options: HttpOptions, port: int) -> dict[str, str]:
    """What clients connect to, by transport name."""
    host = options.host if options.host not in _WILDCARD_HOSTS else "127.0.0.1"
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    base = f"http://{host}:{port}"
    found: dict[str, str] = {}
    if options.serves_streamable:
        found["Streamable HTTP"] = base + MCP_PATH
    if options.serves_sse:
        found["SSE"] = base + SSE_PATH
    found["health"] = base + HEALTH_PATH
    return found


def announce(options: HttpOptions, port: int, policy: HostPolicy) -> None:
    """Tell the operator (stderr) where clients connect."""
    for name, url in urls(options, port).items():
        print(f"{APP_NAME}: {name:<16} {url}", file=sys.stderr, flush=True)
    if options.host in _WILDCARD_HOSTS:
        print(
            f"{APP_NAME}: listening on every address; clients must call it by one of these "
            f"names: {', '.join(policy.names())} (add more with --allowed-host)",
            file=sys.stderr,
            flush=True,
        )
    if options.token:
        print(
            f"{APP_NAME}: every request except {HEALTH_PATH} needs 'Authorization: Bearer <token>'",
            file=sys.stderr,
            flush=True,
        )


def build_app(mcp: MCPServer[Any], options: HttpOptions, port: int) -> ASGIApp:
    """The ASGI app serving the chosen transports with every guard in place."""
    # HostGuard checks Host and Origin on every path, bound to 0.0.0.0 too; the SDK's own check
    # (on only for loopback binds, with its own rules) is switched off so there is one policy.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    policy = HostPolicy.for_server(options.host, port, options.allowed_hosts)
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
            "is reached. Close a client you no longer use (closing ends its session), wait for "
            f"idle sessions to expire (after {options.session_idle_timeout:g} s), or restart "
            "frs-mcp with a larger --max-sessions.",
        },
    )
    app = SseLimit(app, options.max_sse_connections, options.serves_streamable)
    if options.token:
        app = BearerGuard(app, options.token)
    app = HostGuard(app, policy, port)
    return Health(app, tuple(transports))


class _Server(uvicorn.Server):
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
    async with open_deps(settings) as deps:
        mcp = build_server(settings, shared=deps)
        config = uvicorn.Config(
            build_app(mcp, options, port),
            lifespan="on",
            log_config=None,  # our stderr logging, not uvicorn's (its access log goes to stdout)
            log_level=settings.log_level.lower(),
            access_log=settings.log_level.upper() == "DEBUG",
            timeout_graceful_shutdown=options.shutdown_timeout,
        )
        await _Server(config).serve(sockets=[sock])
    log.info("stopped; database %s closed", settings.database)
