"""frs_session: start, list, select and describe sessions."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from frs import SessionId, replies
from server.deps import DepsContext, service
from server.errors import tool_errors
from server.tools.arguments import NumberingArg, SessionArg, choices, numbering_of, session_of
from server.tools.results import SessionOut, result, session_page, session_result


# Longer than most functions: its signature is the tool's input schema, and the four
# actions share it (one tool keeps the tools list short for the model).
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

    Each session is one thread. Tools without session_id use the current session (the last
    started or selected; one is created when none exists). list pages: it says "N of M"
    and gives the call for the next page. The structured result always carries session_id.
    Example: frs_session(action="start", title="Fix flaky test", goal="find the race")
    """
    with tool_errors():
        if action == "start":
            started = await service(ctx).start_session(
                title or "",
                goal or "",
                numbering_of(numbering) or "position",
                interface,
                conversation,
            )
            session, created = started.session, started.created
            return session_result(
                replies.session_started(session, created, title, goal, numbering),
                "start",
                session,
                current=True,
                created=created,
            )
        if action == "list":
            page = await service(ctx).list_sessions(limit, offset)
            return result(replies.session_list(page, limit), session_page(page))
        if action == "use":
            if session_id is None:
                raise ToolError("action='use' needs session_id; see frs_session(action='list').")
            session = await service(ctx).use_session(SessionId(session_id))
            return session_result(replies.session_used(session), "use", session, current=True)
        if action == "info":
            found = await service(ctx).find_session(session_of(session_id))
            if found is None:
                # A read must not create the session it describes.
                return result(replies.NO_SESSION, SessionOut(action="info", session_id=None))
            session = found
            # Without session_id, info describes the current session.
            return session_result(
                replies.session_info(session), "info", session, current=session_id is None
            )
    raise ToolError(f"action is {action!r}; use start, list, use or info.")
