"""The viewer's pages as HTML: the sessions list and a thread.

Every stored string reaches the page through `server.web.html` (escaped); the text a line
shows (labels, role names, tool annotations, summary headers, checkpoint lines, focus
headings) comes from the same domain functions as the model's view (`frs.views.render`,
`frs.views.layout`), so the viewer and the model see the same numbering and the same entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote, urlencode

from frs.annotations import annotate_call
from frs.hooks import RECORDER_NOTES
from frs.host_threads import SquashCalls
from frs.model import GatewayCall, Limits, Message, PlanStep, Session
from frs.text import minify_json
from frs.views.render import (
    Entry,
    card,
    checkpoint_line,
    format_tokens,
    plan_line,
    plural,
    role_label,
)
from server.web.html import Html, join, page, tag, text, url, void
from server.web.thread import CALLS_SHOWN, PAGE, WHOLE_CHARS, Node, Opened, ThreadPage, anchor

#: A message longer than this shows as a card first, as in the model's view (its default).
PREVIEW_CHARS = Limits().preview_chars


def session_url(session: Session, path: str = "", **query: object) -> str:
    shown = {k: v for k, v in query.items() if v is not None}
    tail = f"?{urlencode(shown)}" if shown else ""
    return url(f"/s/{quote(session.id, safe='')}{path}{tail}")


def tokens(count: int) -> str:
    """`~1.2k`: a token count as views show it, without the word."""
    return format_tokens(count).removesuffix(" tokens")


# -- the sessions list ---------------------------------------------------------------------------


def sessions_page(sessions: Sequence[Session], query: str, total: int, offset: int) -> Html:
    search = tag(
        "form",
        void("input", type="search", name="q", value=query, placeholder="title or text"),
        tag("button", "Search", type="submit"),
        method="get",
        action=url("/"),
        class_="search",
    )
    heading = f"Sessions holding “{query}”" if query else f"Sessions ({total:,})"
    rows = [_session_row(s) for s in sessions]
    table = tag(
        "table",
        tag(
            "thead",
            tag(
                "tr",
                *(
                    tag("th", name)
                    for name in (
                        "Title",
                        "Interface",
                        "Messages",
                        "Live / recorded tokens",
                        "Changed",
                    )
                ),
            ),
        ),
        tag("tbody", *rows),
        class_="sessions",
    )
    empty = tag("p", "No session matches." if query else "No session yet.", class_="empty")
    more = []
    if not query and offset + len(sessions) < total:
        more.append(tag("a", "Older sessions →", href=url(f"/?offset={offset + len(sessions)}")))
    body = [search, tag("h1", heading), table if rows else empty, *more]
    return page("Sessions", body)


def _session_row(session: Session) -> Html:
    where = " · ".join(x for x in (session.interface, session.conversation) if x) or "—"
    saved = session.recorded_tokens - session.live_tokens
    ratio = tag(
        "span",
        f"{tokens(session.live_tokens)} / {tokens(session.recorded_tokens)}",
        title=f"{saved:,} tokens saved by squashing" if saved > 0 else None,
    )
    return tag(
        "tr",
        tag("td", tag("a", session.title or "(untitled)", href=session_url(session))),
        tag("td", where),
        tag("td", f"{session.recorded:,}", class_="num"),
        tag("td", ratio, class_="num"),
        tag("td", tag("time", session.updated_at[:19].replace("T", " "))),
    )


# -- a thread -----------------------------------------------------------------------------------


def thread_page(view: ThreadPage) -> Html:
    session = view.session
    nav = [
        tag("a", "thread", href=session_url(session)),
        tag("a", "audit trail", href=session_url(session, "/audit")),
    ]
    controls = tag(
        "div",
        tag("button", "Expand all", type="button", id="expand-all"),
        tag("button", "Collapse all", type="button", id="collapse-all"),
        tag(
            "form",
            "Copy positions ",
            void("input", type="number", name="from", min=1, value=view.first),
            " to ",
            void(
                "input", type="number", name="to", min=1, value=max(view.end - 1, 1), id="copy-to"
            ),
            tag("button", "Copy as Markdown", type="submit"),
            id="copy-range",
            data_md=session_url(session, "/md"),
        ),
        class_="controls",
    )
    body = [
        tag("h1", session.title or "(untitled)"),
        _about(session),
        *_plan(view.frame.plan),
        *_calls(view.calls, view.timing, view.automatic),
        controls,
        _pager(view),
        *(tag("div", line, class_="aside") for line in view.leading),
        tag("div", *(_node(session, node, top=True) for node in view.nodes), class_="thread"),
        *(tag("div", line, class_="heading") for line in view.trailing),
        _pager(view),
        _footer(view),
    ]
    return page(session.title or "thread", body, nav)


def _about(session: Session) -> Html:
    # The gateway and the hooks keep a note to the model where a session started by hand keeps
    # the user's goal.
    label = "Note" if session.goal in RECORDER_NOTES else "Goal"
    facts = [
        session.goal and f"{label}: {session.goal}",
        " · ".join(x for x in (session.interface, session.conversation) if x),
        f"{plural(session.recorded, 'message')} in {plural(session.live_count, 'entry')}",
        f"live {tokens(session.live_tokens)} of {tokens(session.recorded_tokens)} recorded tokens",
        f"revision {session.revision}",
    ]
    return tag("p", " · ".join(f for f in facts if f), class_="about")


def _calls(
    calls: Sequence[GatewayCall],
    timing: Sequence[SquashCalls] = (),
    automatic: frozenset[int] = frozenset(),
) -> list[Html]:
    """The gateway's requests for a gateway session: what the host sent against what went
    upstream, in estimated tokens (and bytes), and the share the squashes saved; then each
    squash, whether the autopilot made it, the call it was made after and the call that
    first sent it."""
    if not calls:
        return []
    sent = sum(c.sent_tokens for c in calls)
    forwarded = sum(c.forwarded_tokens for c in calls)
    head = tag(
        "tr",
        *(
            tag("th", name)
            for name in ("time", "wire", "host sent", "forwarded", "saved", "squashes", "reminders")
        ),
    )
    rows = [
        tag(
            "tr",
            tag("td", call.at.replace("T", " ")[:19]),
            tag("td", call.wire),
            tag("td", f"{tokens(call.sent_tokens)} tokens · {call.sent_bytes:,} bytes"),
            tag("td", f"{tokens(call.forwarded_tokens)} tokens · {call.forwarded_bytes:,} bytes"),
            tag("td", _share(call.sent_tokens, call.forwarded_tokens)),
            tag("td", ", ".join(f"SQ.{n}" for n in call.applied) or "—"),
            tag("td", f"{len(call.nudges)}" if call.nudges else "—"),
        )
        for call in reversed(calls)  # the newest first
    ]
    summary = (
        f"Gateway calls: {plural(len(calls), 'call')}"
        f"{' (the newest)' if len(calls) >= CALLS_SHOWN else ''}, host sent {tokens(sent)}"
        f" tokens, forwarded {tokens(forwarded)}: {_share(sent, forwarded)} saved"
    )
    squashes = [
        tag(
            "li",
            f"SQ.{t.n}",
            " (automatic)" if t.n in automatic else " (the model's)",
            f": made after call {t.made}, ",
            f"first sent at call {t.sent}" if t.sent is not None else "not sent yet",
        )
        for t in timing
    ]
    return [
        tag(
            "details",
            tag("summary", summary),
            tag("table", head, *rows),
            *([tag("ul", *squashes, class_="squash-calls")] if squashes else []),
            class_="calls",
        )
    ]


def _share(sent: int, forwarded: int) -> str:
    return f"{(sent - forwarded) / sent:.0%}" if sent > 0 else "0%"


def _plan(steps: Sequence[PlanStep]) -> list[Html]:
    return [tag("p", plan_line(steps), class_="plan")] if steps else []


def _pager(view: ThreadPage) -> Html:
    session, links = view.session, []
    if view.first > 1:
        links.append(tag("a", f"← older {PAGE}", href=session_url(session, before=view.first)))
    if view.end <= session.live_count:
        newer = view.end + PAGE
        stop = None if newer > session.live_count else newer
        links.append(tag("a", "newer →", href=session_url(session, before=stop)))
    shown = f"positions {view.first}–{view.end - 1}" if view.nodes else "no entries"
    return tag("nav", shown, " of ", f"{session.live_count:,}", *links, class_="pager")


def _footer(view: ThreadPage) -> Html:
    return tag("p", f"Read at revision {view.session.revision}.", class_="footer")


def _node(session: Session, node: Node, top: bool) -> Html:
    entry = node.entry
    headings = [tag("div", line, class_="heading") for line in entry.headings]
    marks = [tag("div", checkpoint_line(mark), class_="checkpoint") for mark in entry.checkpoints]
    inner = _squash(session, entry, node.opened, top) if node.opened else _message(entry, top)
    return join([*headings, inner, *marks])


def _label(entry: Entry) -> Html:
    return tag("a", f"[{entry.label}]", href=f"#{anchor(entry.message)}", class_="label")


def _message(entry: Entry, top: bool) -> Html:
    message = entry.message
    role = role_label(message, str)
    head = tag(
        "div",
        _label(entry),
        " ",
        tag("span", role, class_="role"),
        " ",
        tag("span", f"M.{message.number}@{message.sha8}", class_="alias"),
        class_="head",
    )
    calls = [
        tag("div", tag("code", annotate_call(call)), class_="call") for call in message.tool_calls
    ]
    thinking = [
        tag("pre", "(thinking) ", capped(t.content), class_="thinking") for t in entry.thinking
    ]
    return tag(
        "article",
        head,
        _body(message),
        *calls,
        *thinking,
        id=anchor(message),
        class_=f"entry {message.role}{'' if top else ' original'}",
    )


def _body(message: Message) -> Html:
    """The text; a long one as the model sees it first, a card (head, tail, what is left
    out), with the whole text a click away; past `WHOLE_CHARS`, its head and tail, and the
    alias that reads the whole."""
    whole = tag("pre", capped(message.content), class_="body")
    if len(message.content) > WHOLE_CHARS:
        whole = join([whole, tag("p", _whole_elsewhere(message), class_="more")])
    if len(message.content) <= PREVIEW_CHARS:
        return whole
    text = minify_json(message.content) if message.role == "tool" else message.content
    return join(
        [
            tag("pre", "\n".join(card(text, PREVIEW_CHARS)), class_="card"),
            tag(
                "details",
                tag("summary", f"all {len(message.content):,} characters"),
                whole,
                class_="whole",
            ),
        ]
    )


def capped(content: str) -> str:
    """At most `WHOLE_CHARS` of `content`: its head and tail, saying how much is left out."""
    if len(content) <= WHOLE_CHARS:
        return content
    half = WHOLE_CHARS // 2
    left_out = len(content) - 2 * half
    return f"{content[:half]}\n\n[… {left_out:,} characters left out …]\n\n{content[-half:]}"


def _whole_elsewhere(message: Message) -> str:
    return (
        f"This page shows {WHOLE_CHARS:,} of its {len(message.content):,} characters: read "
        f"the whole with get_alias M.{message.number}@{message.sha8} (frs-mcp's tools)."
    )


def _squash(session: Session, entry: Entry, opened: Opened, top: bool) -> Html:
    message, squash = entry.message, opened.squash
    sizes = (
        f"{plural(squash.covered, 'message')}, {tokens(squash.tokens_before)} → "
        f"{tokens(squash.tokens_after)} tokens"
    )
    head = tag(
        "div",
        _label(entry),
        " ",
        tag("span", f"Summary of {plural(message.covered, 'message')}", class_="role"),
        " ",
        *([tag("span", "automatic", class_="auto"), " "] if squash.automatic else []),
        tag("span", squash.alias, class_="alias"),
        " ",
        tag(
            "button",
            "Copy as Markdown",
            type="button",
            class_="copy",
            data_md=_md(session, squash.n),
        ),
        class_="head",
    )
    members = [_node(session, member, top=False) for member in opened.members]
    if opened.hidden:
        members.append(tag("p", *_left_out(session, opened), class_="more"))
    originals = tag(
        "details",
        tag("summary", sizes, class_="sizes"),
        tag("div", *members, class_="originals"),
        data_key=f"SQ.{squash.n}",
    )
    return tag(
        "section",
        head,
        tag("pre", capped(message.content), class_="body summary-text"),
        originals,
        id=anchor(message),
        class_=f"squash{'' if top else ' original'}",
    )


def _left_out(session: Session, opened: Opened) -> list[Html | str]:
    """The line after the originals a page shows of a squash: how much it leaves out, and
    where the whole is (the squash's own page from the first left out, or `get_alias`)."""
    squash, more = opened.squash, plural(opened.hidden, "more original")
    size = f"{opened.hidden_chars:,} characters ({more})" if opened.hidden_chars else more
    start = opened.next_member
    return [
        f"… {size} left out; the full text: ",
        tag(
            "a",
            f"the squash's own page from original {start}",
            href=squash_url(session, squash.n, start),
        ),
        f", or get_alias {squash.alias} (frs-mcp's tools).",
    ]


def squash_url(session: Session, n: int, start: int = 1) -> str:
    """The page of squash `n` opening its originals from the `start`th (1-based)."""
    return session_url(session, f"/sq/{n}", **({"from": start} if start > 1 else {}))


def _md(session: Session, n: int) -> str:
    return session_url(session, "/md", sq=n)


def squash_page(session: Session, opened: Opened, summary: Message) -> Html:
    """One squash by itself: its summary and its originals from `opened.skipped` on, as many
    as a page holds (`server.web.thread.PAGE_CHARS`), for a squash too large to open inside
    the thread; the line after them links the next page."""
    node = Node(Entry(f"SQ.{opened.squash.n}", summary), opened)
    nav = [tag("a", "thread", href=session_url(session))]
    earlier = []
    if opened.skipped:
        earlier.append(
            tag(
                "p",
                f"Originals from number {opened.skipped + 1:,} on; the first ones: ",
                tag("a", "from the start", href=squash_url(session, opened.squash.n)),
                class_="more",
            )
        )
    body = [
        tag("h1", session.title or "(untitled)", " · ", f"SQ.{opened.squash.n}"),
        *earlier,
        _node(session, node, True),
    ]
    return page(f"SQ.{opened.squash.n}", body, nav)


def error_page(status: int, message: str) -> Html:
    return page(f"{status}", [tag("h1", f"{status}"), tag("p", message, class_="error")])


__all__ = [
    "capped",
    "error_page",
    "sessions_page",
    "squash_page",
    "squash_url",
    "text",
    "thread_page",
]
