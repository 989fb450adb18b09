"""Building HTML safely: every text goes through `text()`, markup is only ever made here.

`Html` marks a string that is already markup; anything else handed to `tag()` is escaped
(`html.escape` with quotes, so a value can close neither an element nor an attribute).
Attribute names are ours, never stored text. Every page links one stylesheet and one script
from this server, so the Content-Security-Policy needs no inline code at all.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from contextvars import ContextVar

#: Where the viewer is mounted (`/ui` inside the HTTP transports, `` on its own); set per
#: request by `server.web.app`, so every link the pages make starts there.
MOUNTED_AT: ContextVar[str] = ContextVar("frs_viewer_mounted_at", default="")
#: Whether the request came with a viewer session's cookie (`server.web.login`): its pages
#: offer to log out.
LOGGED_IN: ContextVar[bool] = ContextVar("frs_viewer_logged_in", default=False)


def url(path: str) -> str:
    """A path of the viewer (`/s/ID`) as a link from its pages, wherever it is mounted."""
    return MOUNTED_AT.get() + path


class Html(str):
    """Markup built by this module (or escaped text): safe to put in a page as it is."""

    __slots__ = ()


def text(value: object) -> Html:
    """Any value as text in a page: `<`, `>`, `&` and both quotes escaped."""
    return value if isinstance(value, Html) else Html(html.escape(str(value), quote=True))


def join(parts: Iterable[object]) -> Html:
    return Html("".join(text(part) for part in parts))


def tag(name: str, /, *children: object, **attrs: object) -> Html:
    """`<name attrs>children</name>`; an attribute given None or False is left out, True is
    written bare, `class_` is `class`, and `data_x` is `data-x`."""
    shown = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = key.rstrip("_").replace("_", "-")
        shown.append(f" {key}" if value is True else f' {key}="{text(value)}"')
    return Html(f"<{name}{''.join(shown)}>{join(children)}</{name}>")


def void(name: str, /, **attrs: object) -> Html:
    """An element without children (`<input>`, `<link>`)."""
    element = tag(name, **attrs)
    return Html(element[: -len(f"</{name}>")])


def page(title: str, body: Iterable[object], nav: Iterable[object] = ()) -> Html:
    """A whole page: the stylesheet and script of this server, a header and the body."""
    head = tag(
        "head",
        Html('<meta charset="utf-8">'),
        void("meta", name="viewport", content="width=device-width, initial-scale=1"),
        tag("title", title, " · frs-mcp"),
        void("link", rel="stylesheet", href=url("/static/viewer.css")),
        void("link", rel="icon", type="image/svg+xml", href=url("/static/favicon.svg")),
        tag("script", src=url("/static/viewer.js"), defer=True),
    )
    logout = (
        [tag("form", tag("button", "Log out", type="submit"), method="post", action="/logout")]
        if LOGGED_IN.get()
        else []
    )
    header = tag("header", tag("a", "frs-mcp", href=url("/"), class_="home"), *nav, *logout)
    return Html(
        "<!doctype html>\n" + tag("html", head, tag("body", header, tag("main", *body)), lang="en")
    )
