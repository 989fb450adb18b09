"""The words the model reads in tool results: every reply text, written in one place.

Each function turns a use case's result into the short text a tool returns. Views and errors
have their own modules (`frs.views.render`, `frs.errors`); everything else the model sees is here.
"""

from __future__ import annotations

import math

from frs.economics import SLOW_PAYBACK_CALLS, SLOW_PAYBACK_TOKENS, payback_calls
from frs.escaping import escape_inline
from frs.focus import LayerClosed, LayerOpened
from frs.model import Session
from frs.plans import PlanUpdated
from frs.ranges import span_name
from frs.recording import Recorded
from frs.sessions import SessionPage
from frs.sources import SourceChanged, SourceStates
from frs.squashes import Restored, Squashed
from frs.views.render import plan_line, plural

WARNINGS_SHOWN = 20  # a batch of reused ids would otherwise flood the model's context


def no_session(scope: str) -> str:
    return (
        f"No session yet in scope {scope}. Start one with frs_session(action='start', "
        "title=...), or record messages with frs_record (a first session is created for them)."
    )


def session_started(
    session: Session,
    created: bool,
    title: str | None,
    goal: str | None,
    numbering: str | None,
    scope: str,
) -> str:
    """`Started session …` or `Resumed session …`; a resumed conversation says which of the
    given title, goal and numbering it did not apply (get-or-create returns it as it is)."""
    verb = "Started" if created else "Resumed"
    text = (
        f'{verb} session {session.id} "{session.title}" (current in scope {scope}) · revision '
        f"{session.revision}"
    )
    offered = (("title", title), ("goal", goal), ("numbering", numbering))
    given = [name for name, value in offered if value]
    if not created and given:
        were = "was" if len(given) == 1 else "were"
        text += f"; it existed, so the {' and '.join(given)} given {were} not applied"
    return text


def shared_current(session: Session, scope: str) -> str:
    """Appended to start and use on a transport without connections (2026-07-28 HTTP): the
    current session is the scope's, shared by every client that names itself alike."""
    return (
        f"\nThis connection has no identity of its own (stateless HTTP): every client in scope "
        f'{scope} shares this current session. Pass session_id="{session.id}" on each call to '
        "stay in it."
    )


def session_used(session: Session, scope: str) -> str:
    return (
        f'Session {session.id} "{session.title}" is now current in scope {scope} · revision '
        f"{session.revision}"
    )


def session_info(session: Session, scope: str) -> str:
    parts = [
        f'Session {session.id} "{session.title}"',
        f"goal: {escape_inline(session.goal)}" if session.goal else "",
        f"numbering: {session.numbering}",
        f"{plural(session.live_count, 'entry')} for {plural(session.recorded, 'message')}",
        f"revision {session.revision}",
        f"created {session.created_at[:16]}",
        f"scope {scope}",
    ]
    return " · ".join(part for part in parts if part)


def session_list(page: SessionPage, limit: int, scope: str) -> str:
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
    return "\n".join([*lines, f"{where} (* = current in scope {scope}){more}"])


def recorded(done: Recorded) -> str:
    """Where the batch landed, then each pairing warning on its own line (the first
    `WARNINGS_SHOWN`; all are in `done.warnings`)."""
    if not done.positions:
        where = "no numbered messages"
    elif len(done.positions) == 1:
        where = f"1 message at position {done.positions[0]}"
    else:
        where = (
            f"{len(done.positions)} messages at positions {done.positions[0]}–{done.positions[-1]}"
        )
    if done.thinking:
        where += f" and {plural(done.thinking, 'thinking block')} (not numbered)"
    lines = [f"Recorded {where} in session {done.session_id} · revision {done.revision}"]
    lines += done.warnings[:WARNINGS_SHOWN]
    if len(done.warnings) > WARNINGS_SHOWN:
        more = len(done.warnings) - WARNINGS_SHOWN
        lines.append(f"… and {plural(more, 'more warning')} like these.")
    return "\n".join(lines)


def squashed(done: Squashed) -> str:
    """What was squashed, where its summary sits, how to read or undo it, what it saved (and,
    where a gateway sends the thread to the model, when that saving starts, or why never)."""
    sq = done.squash
    saved = sq.tokens_before - sq.tokens_after
    text = (
        f"Squashed {done.replaced} ({plural(sq.count, 'entry')}, "
        f"{plural(sq.covered, 'message')}) into a summary at position {done.position}. "
        f'Originals: get_alias(alias="{sq.alias}"); undo: frs_restore(alias="SQ.{sq.n}"). '
    )
    if done.reach is None:
        text += f"Tokens ~{sq.tokens_before:,} → ~{sq.tokens_after:,} ({_saving(saved)}). "
    else:
        text += _reached(done, saved)
    return (
        text
        + f"The thread now has {plural(done.live_count, 'entry')} · revision {done.revision}"
        + (_payback(done) if done.reach != "gone" else "")
    )


def _reached(done: Squashed, saved: int) -> str:
    """When the squash reaches the model the gateway sends this thread to."""
    sq = done.squash
    tokens = f"~{sq.tokens_before:,} → ~{sq.tokens_after:,} tokens"
    if done.reach == "gone":
        return (
            f"The model is no longer sent these messages: the host compacted its history after "
            f"them, so this squash shortens this view only ({tokens}, nothing fewer in what "
            "the model is sent). "
        )
    fewer = f"~{saved:,} fewer in every call" if saved > 0 else _saving(saved)
    if done.reach == "open":
        return (
            f"The gateway sends it once the newest tool call it covers has been answered, "
            f"not while the model still works on it ({tokens}: {fewer} from then on). "
        )
    return (
        "The gateway sends it instead of the originals from the model's next call "
        f"({tokens}: {fewer}). "
    )


def _payback(done: Squashed) -> str:
    """A word on a squash that pays back slowly where the prompt is cached (`frs.economics`):
    where the model is sent squashes (the gateway, a runtime), an old span with much after it
    breaks the cache for all of that."""
    if done.after_tokens is None or done.after_tokens < SLOW_PAYBACK_TOKENS:
        return ""
    sq = done.squash
    calls = payback_calls(sq.tokens_before, sq.tokens_after, done.after_tokens)
    if calls is None or calls <= SLOW_PAYBACK_CALLS:
        return ""
    return (
        f". Where the prompt is cached, this pays back only after ~{math.ceil(calls):,} more "
        f"model calls: the ~{done.after_tokens:,} tokens after it are written to the cache "
        "again once; squash recent stretches, or more at once, to pay back sooner"
    )


def _saving(saved: int) -> str:
    """`saved ~7`; a summary no smaller than what it replaced says so instead of `saved ~-2`."""
    if saved > 0:
        return f"saved ~{saved:,}"
    return "no saving" if saved == 0 else f"~{-saved:,} more"


def restored(done: Restored) -> str:
    hold = "holds" if done.first == done.last else "hold"
    return (
        f"Restored SQ.{done.squash.n}: {span_name('position', done.first, done.last)} {hold} "
        f"its {plural(done.squash.count, 'entry')} again · revision {done.revision}"
    )


def layer_opened(done: LayerOpened) -> str:
    return (
        f"Opened focus layer {done.layer.depth} ({done.layer.goal!r}); messages recorded now "
        f"belong to it · revision {done.revision}"
    )


def layer_closed(done: LayerClosed) -> str:
    closed = f"Closed focus layer {done.layer.depth} ({done.layer.goal!r}). "
    if done.squashed is None:
        return closed + f"It was empty · revision {done.revision}"
    return closed + squashed(done.squashed)


def plan_updated(done: PlanUpdated, checkpoint: str | None) -> str:
    """The plan as it now is, step by step, and the checkpoint added, if any."""
    shown = plan_line(done.steps) if done.steps else "Plan: no steps"
    marked = f"; checkpoint {checkpoint.strip()!r} added" if checkpoint else ""
    return f"{shown}{marked} · revision {done.session.revision}"


def source_added(done: SourceChanged) -> str:
    source = done.source
    return (
        f"Registered {source.alias}@{source.sha8} {escape_inline(source.where)} · "
        f"{plural(source.lines, 'line')} · {source.chars:,} chars. Read it with "
        f'get_alias(alias="{source.alias}") · revision {done.revision}'
    )


def source_removed(done: SourceChanged) -> str:
    where = escape_inline(done.source.where)
    return f"Removed source {done.source.alias} ({where}) · revision {done.revision}"


def source_list(found: SourceStates, verified: bool) -> str:
    """One line per source, drift marked; after a verify, how many changed."""
    if not found.states:
        return (
            f"No sources in session {found.session.id}. Register one with "
            "frs_source(action='add', alias=..., text=... or path=...)."
        )
    lines = [state.line() for state in found.states]
    if verified:
        changed = sum(1 for s in found.states if s.changed or s.sha256 is None)
        lines.append(f"{changed} of {len(found.states)} sources changed or unreadable")
    return "\n".join(lines)
