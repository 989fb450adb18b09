"""Reading a thread out: the numbered view a model reads, and the live thread as a payload.

A view reads only the entries it shows, in one snapshot; a thread with no session yet gets
its first one, as every tool without a session does. Exports send the live thread: summaries
in place of what they replaced, thinking left out, every call paired with a result.
"""

from __future__ import annotations

from frs import sessions, sources
from frs.env import Env
from frs.export import to_anthropic, to_openai
from frs.model import Session, SessionId
from frs.ports import ThreadReader
from frs.views import Frame, ViewOptions, check_view_options, load_frame, render_thread


async def view(env: Env, options: ViewOptions, session_id: SessionId | None = None) -> str:
    """The numbered rendering of the thread (DESIGN §5); reads only the entries it shows."""
    check_view_options(options)
    lines: list[str] = []
    if options.show_sources:
        # Files are re-read outside the snapshot: a slow disk holds no read open.
        found = await sources.states(env, session_id)
        session_id, lines = found.session.id, [state.line() for state in found.states]
    async with env.store.snapshot() as reader:
        if session_id is not None:
            session: Session | None = await sessions.get(env, reader, session_id)
        else:
            session = await sessions.find_current(env, reader)
        if session is not None:
            frame = await _frame(env, reader, session)
            return await render_thread(reader, session, options, env.limits, lines, frame)
    # No session yet: a view creates the first one, as every tool without a session does.
    session = await sessions.ensure(env, session_id)
    async with env.store.snapshot() as reader:
        frame = await _frame(env, reader, session)
        return await render_thread(reader, session, options, env.limits, lines, frame)


async def _frame(env: Env, reader: ThreadReader, session: Session) -> Frame:
    key = (session.id, session.revision)
    frame = env.frames.get(key)
    if frame is None:
        frame = await load_frame(reader, session)
        env.frames.keep(key, frame)
    return frame


async def export_openai(env: Env, session_id: SessionId | None = None) -> list[dict[str, object]]:
    """The live thread as Chat Completions messages (`frs.export`)."""
    return to_openai(list((await sessions.live_thread(env, session_id)).entries))


async def export_anthropic(env: Env, session_id: SessionId | None = None) -> dict[str, object]:
    """The live thread as a Messages API payload: `system` and alternating turns."""
    return to_anthropic(list((await sessions.live_thread(env, session_id)).entries))


async def export_text(env: Env, session_id: SessionId | None = None) -> str:
    """The whole thread as the view renders it: a window from position 1, never budgeted,
    every card whole."""
    return await view(env, ViewOptions(preview_chars=10**9, start=1), session_id)
