"""A browser's way through the token: a browser cannot add an `Authorization` header, so a
viewer started with a token asks for it once and then knows the browser by a session cookie.

`CookieLogin` stands in front of `server.http.guards.BearerGuard`. `GET /login` shows a form;
`POST /login` checks the token (`server.http.tenants.tenant_of`, constant time) and, if it is a
tenant's, opens a viewer session: a random id, unrelated to the token, kept server-side
(`ViewerSessions`) with its tenant and its expiry, and sent in a cookie that is HttpOnly (no
script reads it), SameSite=Strict (no other site's page sends it), `Secure` when the viewer is
reached over HTTPS, and expiring with the session. The token itself never reaches the browser's
storage, so a cookie that leaks (another server on another port of the same host receives it)
is worth a session that `/logout` or the expiry ends, never the secret. A request with a live
session's cookie runs as its tenant; one with an `Authorization` header goes to `BearerGuard`
as any other caller; a page asked for with neither is sent to the login form.

Guessing is throttled per client address (`Throttle`): a few wrong tokens, then one try per
`Throttle.every` seconds, answered 429 with `Retry-After`; the table of addresses is bounded.
"""

from __future__ import annotations

import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.http.guards import TENANT_KEY, respond
from server.http.tenants import tenant_of
from server.web.app import HEADERS
from server.web.html import LOGGED_IN, Html, page, tag, void

LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
COOKIE = "frs_viewer_session"
_MAX_FORM = 4096  # bytes: a token is far shorter
SESSION_SECONDS = 12 * 3600  # a viewer session ends this long after its login
MAX_SESSIONS = 10_000  # viewer sessions kept; the oldest is ended to make room

Clock = Callable[[], float]


def login_page(problem: str = "") -> Html:
    form = tag(
        "form",
        tag("label", "Token ", void("input", type="password", name="token", autofocus=True)),
        " ",
        tag("button", "Open the viewer", type="submit"),
        method="post",
        action=LOGIN_PATH,
        class_="login",
    )
    notes = [tag("p", problem, class_="error")] if problem else []
    hours = SESSION_SECONDS // 3600
    text = (
        "This viewer was started with a token (--token, FRS_TOKEN or --tokens). Give yours "
        "once: the viewer checks it and then knows this browser by a random session cookie, "
        f"not by the token, which is not stored. The session ends after {hours} hours or at "
        "Log out."
    )
    return page("Token", [tag("h1", "Token"), tag("p", text), *notes, form])


@dataclass(slots=True)
class ViewerSessions:
    """Logged-in browsers: session id -> (tenant, when it expires), at most `limit`."""

    lifetime: float = SESSION_SECONDS
    limit: int = MAX_SESSIONS
    clock: Clock = time.monotonic
    _open: OrderedDict[str, tuple[str, float]] = field(default_factory=OrderedDict)

    def open(self, tenant: str) -> str:
        session = secrets.token_urlsafe(32)
        self._open[session] = (tenant, self.clock() + self.lifetime)
        while len(self._open) > self.limit:
            self._open.popitem(last=False)
        return session

    def tenant(self, session: str) -> str | None:
        """The tenant of a live session, else None (an expired one is forgotten)."""
        found = self._open.get(session)
        if found is None:
            return None
        if found[1] <= self.clock():
            del self._open[session]
            return None
        return found[0]

    def close(self, session: str) -> None:
        self._open.pop(session, None)


@dataclass(slots=True)
class Throttle:
    """Wrong tokens per client address: `burst` at once, then one more each `every` seconds
    (a token bucket); at most `addresses` addresses are remembered, the least recent forgotten."""

    burst: int = 10
    every: float = 30.0
    addresses: int = 10_000
    clock: Clock = time.monotonic
    _buckets: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)

    def _left(self, address: str) -> float:
        tries, since = self._buckets.get(address, (float(self.burst), self.clock()))
        return min(float(self.burst), tries + (self.clock() - since) / self.every)

    def wait(self, address: str) -> int:
        """Seconds until `address` may try again; 0: now."""
        left = self._left(address)
        return 0 if left >= 1 else math.ceil((1 - left) * self.every)

    def failed(self, address: str) -> None:
        self._buckets[address] = (self._left(address) - 1, self.clock())
        self._buckets.move_to_end(address)
        while len(self._buckets) > self.addresses:
            self._buckets.popitem(last=False)


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope["headers"] if key == name), None)


def _cookie(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie")
    if raw is None:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except CookieError:  # a malformed Cookie header is as good as none
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else None


def _address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


async def _answer(
    send: Send,
    status: int,
    body: str = "",
    headers: tuple[tuple[bytes, bytes], ...] = (),
    kind: str = "text/html",
) -> None:
    kept = [(b"cache-control", b"no-store"), *HEADERS, *headers]
    await respond(send, status, body.encode(), f"{kind}; charset=utf-8".encode(), kept)


async def _form(receive: Receive) -> dict[str, list[str]]:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > _MAX_FORM:
            return {}
        if not message.get("more_body"):
            break
    return parse_qs(body.decode("utf-8", errors="replace"))


@dataclass(slots=True)
class CookieLogin:
    """`/login`, `/logout` and the session cookie in front of `guarded` (the viewer behind
    `BearerGuard`); `app` is the viewer itself, which a live session's request reaches as its
    tenant."""

    app: ASGIApp
    guarded: ASGIApp
    tenants: Mapping[str, str]  # secret -> tenant, as BearerGuard has them
    sessions: ViewerSessions = field(default_factory=ViewerSessions)
    throttle: Throttle = field(default_factory=Throttle)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.guarded(scope, receive, send)
            return
        if scope["path"] == LOGIN_PATH:
            await self._login(scope, receive, send)
            return
        if scope["path"] == LOGOUT_PATH:
            await self._logout(scope, send)
            return
        if _header(scope, b"authorization") is not None:
            if await self._throttled(scope, send, "text/plain"):
                return
            await self.guarded(scope, receive, self._counting(scope, send))
            return
        session = _cookie(scope)
        tenant = self.sessions.tenant(session) if session is not None else None
        if tenant is not None:
            scope.setdefault("state", {})[TENANT_KEY] = tenant
            mark = LOGGED_IN.set(True)
            try:
                await self.app(scope, receive, send)
            finally:
                LOGGED_IN.reset(mark)
            return
        if scope["method"] in ("GET", "HEAD"):
            await _answer(send, 303, headers=((b"location", LOGIN_PATH.encode()),))
            return
        await self.guarded(scope, receive, send)

    def _counting(self, scope: Scope, send: Send) -> Send:
        """Counts a wrong `Authorization` header as a wrong token for the throttle."""
        address = _address(scope)

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                self.throttle.failed(address)
            await send(message)

        return counted

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _answer(send, 200, login_page())
            return
        if await self._throttled(scope, send, "text/html"):
            return
        address = _address(scope)
        given = (await _form(receive)).get("token", [""])[0].strip()
        tenant = tenant_of(self.tenants, given)
        if tenant is None:
            self.throttle.failed(address)
            await _answer(send, 401, login_page("That is not a token this viewer accepts."))
            return
        session = self.sessions.open(tenant)
        cookie = (
            f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; "
            f"Max-Age={int(self.sessions.lifetime)}"
        )
        if scope.get("scheme") == "https":
            cookie += "; Secure"
        headers = ((b"location", b"/"), (b"set-cookie", cookie.encode()))
        await _answer(send, 303, headers=headers)

    async def _throttled(self, scope: Scope, send: Send, kind: str) -> bool:
        """Answer 429 if the caller's address has used up its tries; whether it did."""
        wait = self.throttle.wait(_address(scope))
        if not wait:
            return False
        text = f"Too many wrong tokens from your address: try again in {wait} seconds."
        body = login_page(text) if kind == "text/html" else text + "\n"
        headers = ((b"retry-after", str(wait).encode()),)
        await _answer(send, 429, body, headers, kind)
        return True

    async def _logout(self, scope: Scope, send: Send) -> None:
        """End the browser's session here and in the browser; then the login form."""
        session = _cookie(scope)
        if session is not None:
            self.sessions.close(session)
        gone = f"{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
        headers = ((b"location", LOGIN_PATH.encode()), (b"set-cookie", gone.encode()))
        await _answer(send, 303, headers=headers)
