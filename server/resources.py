"""MCP resources: the session list, a session's thread and exports, the text behind an alias,
and the squash audit trail."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from frs import SessionId, ViewOptions
from server.deps import DepsContext
from server.errors import resource_errors

_WHOLE = 2**62  # a resource is read whole; get_alias pages only for tool output caps
SESSIONS_URI = "frs://sessions"
SESSIONS_TEMPLATE = SESSIONS_URI + "{?offset}"
SESSIONS_PAGE = 1000


def register(mcp: MCPServer[Any]) -> None:
    # A template, so the reader gets its request context; `FrsServer.list_resources` also
    # lists the plain URI, which this template matches (the query is optional).
    @mcp.resource(
        SESSIONS_TEMPLATE,
        mime_type="application/json",
        description="The sessions, newest first, a page of 1,000 at a time: `total` counts them "
        "all and `next` is the URI of the next page (null on the last).",
    )
    async def sessions(ctx: DepsContext, offset: str = "0") -> dict[str, Any]:
        service = ctx.request_context.lifespan_context.service
        if not offset.isdigit():
            raise ResourceNotFoundError(
                f"offset={offset!r} is not a whole number; read {SESSIONS_URI}?offset=N with N "
                "from 0 to the total."
            )
        with resource_errors():
            page = await service.list_sessions(SESSIONS_PAGE, int(offset))
        following = page.next_offset
        return {
            "current": page.current,
            "total": page.total,
            "offset": page.offset,
            "next": f"{SESSIONS_URI}?offset={following}" if following is not None else None,
            "sessions": [
                {
                    "id": s.id,
                    "title": s.title,
                    "goal": s.goal,
                    "numbering": s.numbering,
                    "entries": s.live_count,
                    "messages": s.recorded,
                    "revision": s.revision,
                    "created_at": s.created_at,
                    "updated_at": s.updated_at,
                    "interface": s.interface,
                    "conversation": s.conversation,
                }
                for s in page.sessions
            ],
        }

    @mcp.resource(
        "frs://sessions/{session_id}/thread",
        mime_type="text/plain",
        description="The session's thread as frs_view_thread renders it.",
    )
    async def thread(session_id: str, ctx: DepsContext) -> str:
        service = ctx.request_context.lifespan_context.service
        with resource_errors():
            return await service.view(ViewOptions(), SessionId(session_id))

    @mcp.resource(
        "frs://sessions/{session_id}/messages",
        mime_type="application/json",
        description="The live thread as OpenAI chat messages (summaries as text, thinking left "
        "out, every tool call paired with its result): what a runtime sends to a model.",
    )
    async def messages(session_id: str, ctx: DepsContext) -> list[dict[str, Any]]:
        service = ctx.request_context.lifespan_context.service
        with resource_errors():
            return await service.export_openai(SessionId(session_id))

    @mcp.resource(
        "frs://sessions/{session_id}/messages/anthropic",
        mime_type="application/json",
        description="The live thread as an Anthropic Messages payload: system and alternating "
        "user/assistant turns, tool_use answered by tool_result.",
    )
    async def messages_anthropic(session_id: str, ctx: DepsContext) -> dict[str, Any]:
        service = ctx.request_context.lifespan_context.service
        with resource_errors():
            return await service.export_anthropic(SessionId(session_id))

    @mcp.resource(
        "frs://sessions/{session_id}/aliases/{alias}",
        mime_type="text/plain",
        description="The full text behind an alias (M.7, SQ.2, H.main, with or without @sha8), "
        "unpaged: what get_alias returns a page at a time.",
    )
    async def alias(session_id: str, alias: str, ctx: DepsContext) -> str:
        service = ctx.request_context.lifespan_context.service
        with resource_errors():
            page = await service.get_alias(alias, 0, _WHOLE, SessionId(session_id))
        return page.text

    @mcp.resource(
        "frs://sessions/{session_id}/squashes",
        mime_type="application/json",
        description="Every squash of the session: span, tokens before and after, summary, alias.",
    )
    async def squashes(session_id: str, ctx: DepsContext) -> dict[str, Any]:
        service = ctx.request_context.lifespan_context.service
        with resource_errors():
            log = await service.squash_log(SessionId(session_id))
        return {
            "session_id": log.session.id,
            "squashes": [
                {
                    "alias": q.alias,
                    "numbers": [q.first, q.last],
                    "entries": q.count,
                    "messages": q.covered,
                    "tokens_before": q.tokens_before,
                    "tokens_after": q.tokens_after,
                    "summary": q.summary,
                    "summary_number": q.summary_number,
                    "created_at": q.created_at,
                    "restored": q.restored,
                }
                for q in log.squashes
            ],
        }
