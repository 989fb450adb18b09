"""MCP resources: the session list, a session's thread and exports, the text behind an alias,
and the squash audit trail."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from frs import SessionId, ViewOptions, pages, viewing
from frs import sessions as frs_sessions
from server.mcp.deps import DepsContext, env_of
from server.mcp.errors import resource_errors

_WHOLE = 2**62  # a resource is read whole; get_alias pages only for tool output caps
SESSIONS_URI = "frs://sessions"
SESSIONS_TEMPLATE = SESSIONS_URI + "{?offset}"
SESSIONS_PAGE = 1000
SESSION_URI = "frs://sessions/{session_id}"


def session_uris(session_id: str, *, exports: bool = True, squashes: bool = False) -> list[str]:
    """The URIs of the resources a change to a session changes (`server.mcp.live`), the session's
    own first: the thread and the session list (its row: counts, revision, time) always, the
    exports when entries changed, the squash log when a squash was made or restored. The
    alias resources are not announced: a message's and a squash's originals never change, and
    a file source is read from a file whose changes nobody here sees."""
    base = SESSION_URI.format(session_id=session_id)
    uris = [f"{base}/thread"]
    if exports:
        uris += [f"{base}/messages", f"{base}/messages/anthropic"]
    if squashes:
        uris.append(f"{base}/squashes")
    return [*uris, SESSIONS_URI]


async def sessions(ctx: DepsContext, offset: str = "0") -> dict[str, Any]:
    if not offset.isdigit():
        raise ResourceNotFoundError(
            f"offset={offset!r} is not a whole number; read {SESSIONS_URI}?offset=N with N "
            "from 0 to the total."
        )
    with resource_errors():
        page = await frs_sessions.page(env_of(ctx), SESSIONS_PAGE, int(offset))
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


async def thread(session_id: str, ctx: DepsContext) -> str:
    with resource_errors():
        return await viewing.view(env_of(ctx), ViewOptions(), SessionId(session_id))


async def messages(session_id: str, ctx: DepsContext) -> list[dict[str, Any]]:
    with resource_errors():
        return await viewing.export_openai(env_of(ctx), SessionId(session_id))


async def messages_anthropic(session_id: str, ctx: DepsContext) -> dict[str, Any]:
    with resource_errors():
        return await viewing.export_anthropic(env_of(ctx), SessionId(session_id))


async def alias(session_id: str, alias: str, ctx: DepsContext) -> str:
    with resource_errors():
        page = await pages.get_alias(env_of(ctx), alias, 0, _WHOLE, SessionId(session_id))
    return page.text


async def squashes(session_id: str, ctx: DepsContext) -> dict[str, Any]:
    with resource_errors():
        log = await frs_sessions.squash_log(env_of(ctx), SessionId(session_id))
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


@dataclass(frozen=True, slots=True)
class Resource:
    read: Callable[..., Awaitable[Any]]
    uri: str  # a URI template: its {fields} are the reader's arguments
    mime_type: str
    description: str


RESOURCES = (
    Resource(
        sessions,
        SESSIONS_TEMPLATE,
        "application/json",
        "The sessions, newest first, a page of 1,000 at a time: `total` counts them "
        "all and `next` is the URI of the next page (null on the last).",
    ),
    Resource(
        thread,
        SESSION_URI + "/thread",
        "text/plain",
        "The session's thread as frs_view_thread renders it.",
    ),
    Resource(
        messages,
        SESSION_URI + "/messages",
        "application/json",
        "The live thread as OpenAI chat messages (summaries as text, thinking left "
        "out, every tool call paired with its result): what a runtime sends to a model.",
    ),
    Resource(
        messages_anthropic,
        SESSION_URI + "/messages/anthropic",
        "application/json",
        "The live thread as an Anthropic Messages payload: system and alternating "
        "user/assistant turns, tool_use answered by tool_result.",
    ),
    Resource(
        alias,
        SESSION_URI + "/aliases/{alias}",
        "text/plain",
        "The full text behind an alias (M.7, SQ.2, H.main, with or without @sha8), "
        "unpaged: what get_alias returns a page at a time.",
    ),
    Resource(
        squashes,
        SESSION_URI + "/squashes",
        "application/json",
        "Every squash of the session: span, tokens before and after, summary, alias.",
    ),
)


def register(mcp: MCPServer[Any]) -> None:
    """Every resource of `RESOURCES`. The session list is a template, so its reader gets its
    request context; `FrsServer.list_resources` also lists the plain URI, which the template
    matches (the query is optional)."""
    for r in RESOURCES:
        mcp.resource(r.uri, mime_type=r.mime_type, description=r.description)(r.read)
