"""A browser's way through the token: a browser cannot add an `Authorization` header, so a
viewer started with a token asks for it once and keeps it in a cookie.

`CookieLogin` stands in front of `server.guards.BearerGuard`. `GET /login` shows a form;
`POST /login` checks the token (`server.tenants.tenant_of`, constant time) and keeps it in an
HttpOnly, SameSite=Strict cookie, so no script reads it and no other site's page sends it. A
request with that cookie and no `Authorization` header gets the header from the cookie, and
`BearerGuard` decides as for any other caller. A page asked for without either is sent to the
login form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, quote, unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from server.tenants import tenant_of
from server.web.app import HEADERS
from server.web.html import Html, page, tag, void

LOGIN_PATH = "/login"
COOKIE = "frs_viewer_token"
_MAX_FORM = 4096  # bytes: a token is far shorter


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
    text = (
        "This viewer was started with a token (--token, FRS_TOKEN or --tokens). Give yours; it "
        "is kept in a cookie only this server reads."
    )
    return page("Token", [tag("h1", "Token"), tag("p", text), *notes, form])


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope["headers"] if key == name), None)


def _cookie_token(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie")
    if raw is None:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except CookieError:  # a malformed Cookie header is as good as none
        return None
    morsel = jar.get(COOKIE)
    return unquote(morsel.value) if morsel else None


async def _answer(
    send: Send, status: int, body: str = "", headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(data)).encode()),
                (b"cache-control", b"no-store"),
                *HEADERS,
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


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
    app: ASGIApp
    tenants: Mapping[str, str]  # secret -> tenant, as BearerGuard has them

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == LOGIN_PATH:
            await self._login(scope, receive, send)
            return
        if _header(scope, b"authorization") is None:
            token = _cookie_token(scope)
            if token is not None:
                header = (b"authorization", f"Bearer {token}".encode("latin-1", "replace"))
                scope = {**scope, "headers": [*scope["headers"], header]}
            elif scope["method"] in ("GET", "HEAD"):
                await _answer(send, 303, headers=((b"location", LOGIN_PATH.encode()),))
                return
        await self.app(scope, receive, send)

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _answer(send, 200, login_page())
            return
        given = (await _form(receive)).get("token", [""])[0].strip()
        if tenant_of(self.tenants, given) is None:
            await _answer(send, 401, login_page("That is not a token this viewer accepts."))
            return
        cookie = f"{COOKIE}={quote(given, safe='')}; HttpOnly; SameSite=Strict; Path=/"
        headers = ((b"location", b"/"), (b"set-cookie", cookie.encode()))
        await _answer(send, 303, headers=headers)
