"""The audit trail of a session: its squashes and restores, the change log, and a chart of
live tokens against recorded tokens over revisions (inline SVG, drawn here, no script).

Change-log lines written before the store kept counters (schema 6) have none; the chart
starts at the first line that has them.
"""

from __future__ import annotations

from collections.abc import Sequence

from frs.model import Change, Session, Squash
from frs.views.render import plural
from server.web.html import Html, page, tag
from server.web.pages import session_url, tokens

WIDTH, HEIGHT, MARGIN = 640, 200, 36
CHANGES_SHOWN = 1000


def audit_page(session: Session, squashes: Sequence[Squash], changes: Sequence[Change]) -> Html:
    nav = [
        tag("a", "thread", href=session_url(session)),
        tag("a", "audit trail", href=session_url(session, "/audit")),
    ]
    body = [
        tag("h1", session.title or "(untitled)", " · audit trail"),
        tag("h2", "Live tokens against recorded tokens"),
        chart(changes),
        tag("h2", f"Squashes ({len(squashes)})"),
        _squash_table(session, squashes) if squashes else tag("p", "No squash yet."),
        tag("h2", f"Change log (the newest {plural(len(changes), 'line')})"),
        tag("ol", *(_change(c) for c in changes), class_="changes"),
    ]
    return page("audit trail", body, nav)


def _squash_table(session: Session, squashes: Sequence[Squash]) -> Html:
    head = tag("tr", *(tag("th", h) for h in ("Squash", "Messages", "Tokens", "Made", "Restored")))
    rows = [
        tag(
            "tr",
            tag("td", tag("a", s.alias, href=session_url(session, f"/sq/{s.n}"))),
            tag("td", f"{s.covered:,}", class_="num"),
            tag("td", f"{tokens(s.tokens_before)} → {tokens(s.tokens_after)}", class_="num"),
            tag("td", s.created_at[:19].replace("T", " ")),
            tag("td", "restored" if s.restored else "—"),
            class_="restored" if s.restored else None,
        )
        for s in squashes
    ]
    return tag("table", tag("thead", head), tag("tbody", *rows), class_="squashes")


def _change(change: Change) -> Html:
    kind = change.change.split(" ", 1)[0]
    marked = kind in ("squashed", "restored")
    counters = (
        f" · {plural(change.live_count, 'entry')}, {tokens(change.live_tokens or 0)} tokens live"
        if change.live_count is not None
        else ""
    )
    return tag(
        "li",
        tag("span", f"revision {change.revision}", class_="rev"),
        " ",
        tag("span", change.change, class_="what"),
        tag("span", counters, class_="counters"),
        value=change.revision,
        class_=kind if marked else None,
    )


def chart(changes: Sequence[Change]) -> Html:
    """Two lines over revisions: live tokens (what the model reads) and recorded tokens (what
    it would read without squashing)."""
    points = [
        (c.revision, c.live_tokens, c.recorded_tokens)
        for c in changes
        if c.live_tokens is not None and c.recorded_tokens is not None
    ]
    if len(points) < 2:
        return tag("p", "Not enough revisions with counters to draw yet.", class_="empty")
    first, last = points[0][0], points[-1][0]
    top = max(max(p[1], p[2]) for p in points) or 1

    def xy(revision: int, value: int) -> str:
        x = MARGIN + (WIDTH - 2 * MARGIN) * (revision - first) / max(last - first, 1)
        y = HEIGHT - MARGIN - (HEIGHT - 2 * MARGIN) * value / top
        return f"{x:.1f},{y:.1f}"

    live = " ".join(xy(r, v) for r, v, _ in points)
    recorded = " ".join(xy(r, v) for r, _, v in points)
    axis = f"M{MARGIN},{MARGIN} V{HEIGHT - MARGIN} H{WIDTH - MARGIN}"
    return tag(
        "svg",
        tag("title", "Live tokens against recorded tokens, by revision"),
        tag("path", d=axis, class_="axis"),
        tag("polyline", points=recorded, class_="recorded"),
        tag("polyline", points=live, class_="live"),
        tag("text", f"{tokens(top)}", x=2, y=MARGIN),
        tag("text", f"rev {first}", x=MARGIN, y=HEIGHT - 8),
        tag("text", f"rev {last}", x=WIDTH - MARGIN, y=HEIGHT - 8, text_anchor="end"),
        tag(
            "text",
            "recorded",
            x=WIDTH - MARGIN,
            y=MARGIN - 18,
            text_anchor="end",
            class_="recorded",
        ),
        tag("text", "live", x=WIDTH - MARGIN, y=MARGIN - 4, text_anchor="end", class_="live"),
        viewBox=f"0 0 {WIDTH} {HEIGHT}",
        role="img",
        class_="chart",
        id="chart",
    )
