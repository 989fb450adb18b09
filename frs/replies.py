"""The words the model reads in tool results: every reply text, written in one place.

Each function turns a use case's result into the short text a tool returns. Views and errors
have their own modules (`frs.render`, `frs.errors`); everything else the model sees is here.
"""

from __future__ import annotations

from frs.model import Session
from frs.render import escape_inline, plural
from frs.service import SessionPage

NO_SESSION = (
    "No session yet. Start one with frs_session(action='start', title=...), or record "
    "messages with frs_record (a first session is created for them)."
)


def session_started(
    session: Session,
    created: bool,
    title: str | None,
    goal: str | None,
    numbering: str | None,
) -> str:
    """`Started session …` or `Resumed session …`; a resumed conversation says which of the
    given title, goal and numbering it did not apply (get-or-create returns it as it is)."""
    verb = "Started" if created else "Resumed"
    text = f'{verb} session {session.id} "{session.title}" (current) · revision {session.revision}'
    offered = (("title", title), ("goal", goal), ("numbering", numbering))
    given = [name for name, value in offered if value]
    if not created and given:
        were = "was" if len(given) == 1 else "were"
        text += f"; it existed, so the {' and '.join(given)} given {were} not applied"
    return text


def session_info(session: Session) -> str:
    parts = [
        f'Session {session.id} "{session.title}"',
        f"goal: {escape_inline(session.goal)}" if session.goal else "",
        f"numbering: {session.numbering}",
        f"{plural(session.live_count, 'entry')} for {plural(session.recorded, 'message')}",
        f"revision {session.revision}",
        f"created {session.created_at[:16]}",
    ]
    return " · ".join(part for part in parts if part)


def session_list(page: SessionPage, limit: int) -> str:
    """One line per session (`*` marks the current one), then where this page sits in the
    whole list and the call for the next page."""
    if not page.total:
        return "No sessions yet. Start one with frs_session(action='start', title=...)."
    lines = [
        f'{"*" if s.id == page.current else " "} {s.id} "{s.title}"'
        f" · {plural(s.live_count, 'entry')} · revision {s.revision}"
        f" · updated {s.updated_at[:16]}"
        for s in page.sessions
    ]
    first, last = page.offset + 1, page.offset + len(page.sessions)
    if not page.sessions:
        where = f"No sessions from offset {page.offset:,}; there are {page.total:,}"
    elif first == 1 and last == page.total:
        where = f"All {plural(page.total, 'session')}, newest first"
    else:
        where = f"Sessions {first:,}–{last:,} of {page.total:,}, newest first"
    more = ""
    if page.next_offset is not None:
        size = f", limit={limit}" if limit != 50 else ""
        more = f"; next page: frs_session(action='list', offset={page.next_offset}{size})"
    return "\n".join([*lines, f"{where} (* = current){more}"])
