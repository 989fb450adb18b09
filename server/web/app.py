"""The viewer's ASGI app: its routes, its answers to bad requests, and its security headers.

It reads through `snapshot()` only, one snapshot per page, so a page is one consistent state
even while a server writes beside it. A caller sees only its tenant's sessions: the tenant
comes from the bearer token (`server.http.guards.BearerGuard` sets it) and is the local tenant
without one, as on stdio. Every answer carries a Content-Security-Policy that allows this
server's own stylesheet and script and nothing else: no inline code, nothing remote.
"""

from __future__ import annotations

import re
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from frs.errors import SearchTooSlow, StoreError
from frs.model import LOCAL_TENANT, Message, Session, SessionId
from frs.ports import ThreadReader
from frs.views.render import plural
from server.http.guards import TENANT_KEY, tenant_in
from server.mcp.pool import calling_as
from server.web import audit, markdown, pages
from server.web.html import MOUNTED_AT
from server.web.thread import PAGE, Budget, Opened, load_page, open_squash

STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would send Origin: null
    (b"cross-origin-resource-policy", b"same-origin"),
]
SESSIONS_SHOWN = 100
SEARCH_SECONDS = 2.0  # a search running longer is stopped (`--search-seconds` of frs-mcp web)
SEARCH_CHARS = 200  # a longer search text is cut to this
MARKDOWN_ENTRIES = 1000  # a range copied as Markdown holds at most this many entries
ALL = 2**31  # a squash page opens every original
_ALIAS = re.compile(r"^(M|SQ)\.([0-9]{1,18})$")


class Readable(Protocol):
    def snapshot(self) -> AbstractAsyncContextManager[ThreadReader]: ...

    def searching(self, seconds: float) -> AbstractAsyncContextManager[ThreadReader]:
        """A snapshot for a search: where a long one holds up no other read, and stopped
        after `seconds` (`frs.errors.SearchTooSlow`)."""
        ...


def _tenant(request: Request) -> str:
    return str(getattr(request.state, TENANT_KEY, LOCAL_TENANT))


MAX_NUMBER = 2**62  # within SQLite's and PostgreSQL's 64-bit integers


def _number(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_NUMBER:
        raise HTTPException(400, f"{name}={raw[:40]!r}: give a whole number of at least 1.")
    return int(raw)


async def _session(reader: ThreadReader, request: Request) -> Session:
    sid = request.path_params["sid"]
    session = await reader.find_session(_tenant(request), SessionId(sid))
    if session is None:
        raise HTTPException(404, f"No session {sid[:80]!r}: it does not exist, or is not yours.")
    return session


class Handlers:
    """The viewer's pages, one handler per route, over one store; a search runs on
    `store.searching` for at most `search_seconds`, one at a time per tenant."""

    def __init__(self, store: Readable, search_seconds: float = SEARCH_SECONDS) -> None:
        self.store = store
        self.search_seconds = search_seconds
        self.searching: set[str] = set()  # tenants with a search under way

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/", self.sessions),
            Route("/s/{sid}", self.thread),
            Route("/s/{sid}/sq/{n:int}", self.squash),
            Route("/s/{sid}/md", self.copy),
            Route("/s/{sid}/audit", self.trail),
            Route("/s/{sid}/at/{alias}", self.permalink),
            Route("/favicon.ico", _no_icon),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]

    async def search(self, tenant: str, query: str) -> list[Session]:
        if tenant in self.searching:
            raise HTTPException(
                429, "A search of yours is still running: wait for its page, then search again."
            )
        self.searching.add(tenant)
        try:
            async with self.store.searching(self.search_seconds) as reader:
                return await reader.search_sessions(tenant, query, SESSIONS_SHOWN)
        except SearchTooSlow as exc:
            raise HTTPException(400, str(exc)) from None
        finally:
            self.searching.discard(tenant)

    async def sessions(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()[:SEARCH_CHARS]
        offset = (_number(request, "offset", 0) or 1) - 1 if "offset" in request.query_params else 0
        tenant = _tenant(request)
        async with self.store.snapshot() as reader:
            total = await reader.count_sessions(tenant)
            found = [] if query else await reader.list_sessions(tenant, SESSIONS_SHOWN, offset)
        if query:
            found = await self.search(tenant, query)
        return HTMLResponse(pages.sessions_page(found, query, total, offset))

    async def thread(self, request: Request) -> Response:
        before = _number(request, "before")
        async with self.store.snapshot() as reader:
            session = await _session(reader, request)
            view = await load_page(reader, session, before)
        return HTMLResponse(pages.thread_page(view))

    async def squash(self, request: Request) -> Response:
        start = _number(request, "from", 1) or 1
        async with self.store.snapshot() as reader:
            session = await _session(reader, request)
            n = int(request.path_params["n"])
            summary, opened = await _squash_opened(reader, session, n, start)
        return HTMLResponse(pages.squash_page(session, opened, summary))

    async def copy(self, request: Request) -> Response:
        async with self.store.snapshot() as reader:
            session = await _session(reader, request)
            text = await _markdown(reader, session, request)
        return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")

    async def trail(self, request: Request) -> Response:
        async with self.store.snapshot() as reader:
            session = await _session(reader, request)
            squashes = await reader.squashes(session.id)
            changes = await reader.change_log(session.id, audit.CHANGES_SHOWN)
        return HTMLResponse(audit.audit_page(session, squashes, changes))

    async def permalink(self, request: Request) -> Response:
        async with self.store.snapshot() as reader:
            session = await _session(reader, request)
            before = await _page_of(reader, session, request.path_params["alias"])
        alias = request.path_params["alias"]
        url = pages.session_url(session, before=before) + f"#{alias}"
        return RedirectResponse(url, status_code=303)


def build_viewer(store: Readable, search_seconds: float = SEARCH_SECONDS) -> ASGIApp:
    """The viewer over `store`, from `/`; mount it elsewhere with `Mount`. A search runs on
    `store.searching` for at most `search_seconds`, one at a time per tenant."""
    routes = Handlers(store, search_seconds).routes()
    handlers = {HTTPException: _refused, StoreError: _unreadable}
    app = Starlette(routes=routes, exception_handlers=handlers)  # type: ignore[arg-type]
    return Mounted(app)


async def _no_icon(request: Request) -> Response:
    """Pages name their icon (`/static/favicon.svg`); a browser that asks `/favicon.ico` first
    gets no content rather than a 404 in its console."""
    return Response(status_code=204)


async def _refused(request: Request, exc: HTTPException) -> Response:
    return HTMLResponse(pages.error_page(exc.status_code, exc.detail), status_code=exc.status_code)


async def _unreadable(request: Request, exc: StoreError) -> Response:
    """The database failed under a page (moved, locked past the timeout, damaged)."""
    text = f"The database could not be read: {exc}. Nothing was changed; reload to try again."
    return HTMLResponse(pages.error_page(503, text), status_code=503)


async def _squash_opened(
    reader: ThreadReader, session: Session, n: int, start: int = 1
) -> tuple[Message, Opened]:
    """Squash `n`'s summary and the squash opened from its `start`th original (1-based) to as
    many as one page holds (`PAGE_CHARS`)."""
    # The route takes any digits; a number no database can hold is as absent as SQ.99.
    squash = await reader.squash(session.id, n) if 1 <= n <= MAX_NUMBER else None
    summary = None if squash is None else await reader.message(session.id, squash.summary_number)
    if squash is None or summary is None:
        raise HTTPException(404, f"No squash SQ.{n} in this session.")
    if start > squash.count:
        raise HTTPException(
            400,
            f"from={start}: SQ.{n} replaced {plural(squash.count, 'entry')}; give 1 to "
            f"{squash.count}.",
        )
    opened = await open_squash(
        reader, session.id, summary, shown=ALL, budget=Budget(), skip=start - 1
    )
    assert opened is not None  # a summary's squash, just read
    return summary, opened


async def _markdown(reader: ThreadReader, session: Session, request: Request) -> str:
    """`?sq=N`: squash N with its originals (`&from=K`: from the Kth); `?from=P&to=Q`: the
    entries at positions P..Q. Bounded as pages are; a line says where the rest is."""
    origin = f"{request.url.scheme}://{request.url.netloc}"

    def part_url(sq: int, start: int) -> str:
        return origin + pages.session_url(session, "/md", sq=sq, **{"from": start})

    def range_url(start: int, end: int) -> str:
        return origin + pages.session_url(session, "/md", **{"from": start, "to": end})

    n = _number(request, "sq")
    if n is not None:
        start = _number(request, "from", 1) or 1
        summary, opened = await _squash_opened(reader, session, n, start)
        return markdown.squash_markdown(f"SQ.{n}", summary, opened, part_url) + "\n"
    first = _number(request, "from", 1) or 1
    last = _number(request, "to", session.live_count) or 1
    if last < first or last - first + 1 > MARKDOWN_ENTRIES:
        raise HTTPException(
            400,
            f"from={first}, to={last}: give from ≤ to, at most {MARKDOWN_ENTRIES} entries apart.",
        )
    view = await load_page(reader, session, last + 1, count=last - first + 1)
    return markdown.range_markdown(view.nodes, view.first, view.end - 1, part_url, range_url)


async def _page_of(reader: ThreadReader, session: Session, alias: str) -> int | None:
    """The `before` of the thread page showing `alias` (M.n or SQ.n): its entry, or the squash
    that holds it, among the `PAGE` entries before it."""
    found = _ALIAS.match(alias)
    if found is None:
        raise HTTPException(400, f"{alias[:40]!r} is not an alias: use M.7 or SQ.2.")
    kind, n = found.group(1), int(found.group(2))
    message = None
    if kind == "SQ":
        squash = await reader.squash(session.id, n)
        if squash is not None:
            message = await reader.message(session.id, squash.summary_number)
    else:
        message = await reader.message(session.id, n)
    if message is None:
        raise HTTPException(404, f"No {alias} in this session.")
    covering = await reader.entry_covering(session.id, message.ord)
    if covering is None:
        return None
    (position,) = await reader.positions_of(session.id, [covering.ord])
    stop = position + PAGE // 2
    return None if stop > session.live_count else stop


def viewer_of(store: Readable, search_seconds: float = SEARCH_SECONDS) -> ASGIApp:
    """The viewer with its security headers, to mount beside the MCP transports (`/ui`)."""
    return SecurityHeaders(build_viewer(store, search_seconds))


class Mounted:
    """Tells the pages where the viewer is mounted (the request's `root_path`: `/ui` inside
    the HTTP transports), so their links lead back into it; and the store whose tenant's
    calls these are (`server.mcp.pool.calling_as`: each tenant's share of a pool)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = MOUNTED_AT.set(str(scope.get("root_path", "")).rstrip("/"))
        try:
            with calling_as(tenant_in(scope) or LOCAL_TENANT):
                await self.app(scope, receive, send)
        finally:
            MOUNTED_AT.reset(token)


class SecurityHeaders:
    """Adds the Content-Security-Policy and its companions to every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        # A page shows a tenant's sessions: no cache, shared or the browser's own, keeps it.
        static = "/static/" in str(scope.get("path", ""))

        async def with_headers(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *HEADERS]
                if not static and not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
