"""frs_session: start, list, select and describe sessions."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from frs import Env, Session, SessionId, replies, sessions
from server.mcp.deps import DepsContext, env_of
from server.mcp.errors import tool_errors
from server.mcp.live import Change, changed
from server.mcp.tools.arguments import NumberingArg, SessionArg, choices, numbering_of
from server.mcp.tools.results import SessionOut, result, session_page, session_result


# The signature is the tool's input schema, which the four actions share (one tool keeps the
# tools list short for the model); each action is a function of its own below.
async def frs_session(
    ctx: DepsContext,
    action: Annotated[
        str,
        Field(
            description="start: new session (becomes current); list: the sessions, a page "
            "at a time; use: make session_id current; info: describe a session (default).",
            json_schema_extra=choices(("start", "list", "use", "info")),
        ),
    ] = "info",
    title: Annotated[str | None, Field(description="start: a short title.")] = None,
    goal: Annotated[str | None, Field(description="start: what the session is for.")] = None,
    numbering: NumberingArg = None,
    interface: Annotated[
        str | None,
        Field(
            description="start: with conversation, one session per conversation (get-or-create)."
        ),
    ] = None,
    conversation: Annotated[str | None, Field(description="start: the conversation's id.")] = None,
    offset: Annotated[
        int, Field(description="list: how many sessions to skip (the page's start).", ge=0)
    ] = 0,
    limit: Annotated[int, Field(description="list: sessions per page (1-200).", ge=1, le=200)] = 50,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, SessionOut]:
    """Start, list, select or describe reasoning sessions.

    Each session is one thread. Tools without session_id use your current session: the one
    you last started or selected (one is created when none exists). It is yours alone: each
    client, in each workspace, has its own (its scope, shown by info), kept across restarts.
    list pages: it says "N of M" and gives the call for the next page. The structured
    result always carries session_id.
    Example: frs_session(action="start", title="Fix flaky test", goal="find the race")
    """
    env = env_of(ctx)
    with tool_errors():
        if action == "start":
            return await _start(ctx, env, title, goal, numbering, interface, conversation)
        if action == "list":
            return await _list(env, limit, offset)
        if action == "use":
            return await _use(env, session_id)
        if action == "info":
            return await _info(env, session_id)
    raise ToolError(f"action is {action!r}; use start, list, use or info.")


async def _start(
    ctx: DepsContext,
    env: Env,
    title: str | None,
    goal: str | None,
    numbering: str | None,
    interface: str | None,
    conversation: str | None,
) -> CallToolResult:
    scope = env.scope.name
    started = await sessions.start(
        env, title or "", goal or "", numbering_of(numbering) or "position", interface, conversation
    )
    session, created = started.session, started.created
    if created:
        await changed(ctx, session.id, Change.RECORDED, new=True)
    text = replies.session_started(session, created, title, goal, numbering, scope)
    if env.scope.connection is None:
        text += replies.shared_current(session, scope)
    return session_result(text, "start", session, True, scope, created)


async def _list(env: Env, limit: int, offset: int) -> CallToolResult:
    scope = env.scope.name
    page = await sessions.page(env, limit, offset)
    return result(session_page(replies.session_list(page, limit, scope), page, scope))


async def _use(env: Env, session_id: str | None) -> CallToolResult:
    if session_id is None:
        raise ToolError("action='use' needs session_id; see frs_session(action='list').")
    scope = env.scope.name
    session = await sessions.use(env, SessionId(session_id))
    text = replies.session_used(session, scope)
    if env.scope.connection is None:
        text += replies.shared_current(session, scope)
    return session_result(text, "use", session, True, scope)


async def _info(env: Env, session_id: str | None) -> CallToolResult:
    """The session named, else the current one; a read never creates the one it describes."""
    scope = env.scope.name
    if session_id is not None:
        found: Session | None = await sessions.get_session(env, SessionId(session_id))
    else:
        found = await sessions.find_current_session(env)
    if found is None:
        text = replies.no_session(scope)
        return result(SessionOut(message=text, action="info", session_id=None, scope=scope))
    # Without session_id, info describes the current session.
    text = replies.session_info(found, scope)
    return session_result(text, "info", found, session_id is None, scope)
