"""Live updates: a change to a session, told to the clients of its tenant that listen.

Under protocol 2026-07-28 a client opens a `subscriptions/listen` stream (its response is the
stream) naming the resource URIs it wants to hear about and whether it wants the resource
list's changes. The SDK's `ListenHandler` serves one stream and its bus fans events out; the
server keeps one bus and one handler per tenant, so an event published for a tenant's session
reaches only that tenant's streams (another tenant subscribing to the same URI hears nothing:
not even that the id exists).

`server.mcp.events.TenantEvents` holds the buses. The mutating tools say what they changed
(`changed`): the edge knows which session a call wrote. On SQLite a change made by another
process on the same database file is not seen here (two stdio processes, or an import from the
command line): each process tells only its own listeners. On PostgreSQL the instances on one
database tell each other (`TenantEvents.running` with a relay): a listener here hears the
changes made through any of them.

Under 2025-11-25 a client sends `resources/subscribe` for a URI and is told on its connection's
own channel (stdio, its SSE stream, its Streamable HTTP session's GET stream); every 2025
connection that sent a request (`seen`) is told when the resource list changes. The SDK
advertises that era's `listChanged` only when asked (`serve` asks); `advertised` shapes the
2026-07-28 capabilities to what is delivered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    DiscoverResult,
    EmptyResult,
    RequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from frs import sessions
from server.internals import announce_resource_list_changes
from server.mcp.deps import env_of
from server.mcp.events import TenantEvents
from server.mcp.resources import session_uris
from server.mcp.scopes import current_scope, tenant_of

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from server.mcp.deps import DepsContext

_SDK_LIMIT = "Subscription limit reached"


class Change(Enum):
    """What a call did to a session, and so which of its resources changed."""

    RECORDED = "recorded"  # entries added (or a new session): thread, exports, list row
    SQUASHED = "squashed"  # squashed or restored: also the squash log
    FRAMED = "framed"  # plan, checkpoint, focus heading, sources: the thread view, list row


def events_for(session_id: str, change: Change, new: bool = False) -> list[ServerEvent]:
    """The events a change to `session_id` sends: an update for each of its resources that
    changed, and for a new session, the resource list's change."""
    uris = session_uris(
        session_id,
        exports=new or change is not Change.FRAMED,
        squashes=change is Change.SQUASHED,
    )
    events: list[ServerEvent] = [ResourceUpdated(uri=uri) for uri in uris]
    if new:
        events.append(ResourcesListChanged())
    return events


async def creates(ctx: DepsContext, session_id: str | None) -> bool:
    """Whether a change without `session_id` will create the caller's first session: asked
    before the change, from memory once the connection has a current session."""
    if session_id is not None:
        return False
    env = env_of(ctx)
    if env.chosen.get(env.scope) is not None:
        return False
    return await sessions.find_current_session(env) is None


async def changed(ctx: DepsContext, session_id: str, change: Change, new: bool = False) -> None:
    """Tell the listening clients of the caller's tenant that `session_id` changed (`new`: it
    was created by this call): handed to the fan-out task, not waited for."""
    rc = ctx.request_context
    scope = current_scope()
    tenant = scope.tenant if scope is not None else tenant_of(rc)
    rc.lifespan_context.events.publish(tenant, events_for(session_id, change, new))


async def listen(
    rc: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
) -> SubscriptionsListenResult:
    """`subscriptions/listen`, served by the caller's tenant's handler."""
    events: TenantEvents = rc.lifespan_context.events
    try:
        return await events.handler(tenant_of(rc))(rc, params)
    except MCPError as exc:
        if exc.message != _SDK_LIMIT:  # the SDK's words for the one refusal before the ack
            raise
        raise MCPError(
            INTERNAL_ERROR,
            f"Too many open listen streams: your tenant has the most it may have open at once "
            f"({events.max_streams}{events.source and ', ' + events.source}). Close one you no "
            "longer read (or follow several resources in one listen), then listen again.",
        ) from None


async def subscribe(
    rc: ServerRequestContext[Any, Any], params: SubscribeRequestParams
) -> EmptyResult:
    """2025's `resources/subscribe`: any URI is accepted (one that names nothing never
    changes, as with listen), and told to this connection only while it lasts."""
    events: TenantEvents = rc.lifespan_context.events
    events.subscribers(tenant_of(rc)).follow(rc.session, str(params.uri))
    return EmptyResult()


async def unsubscribe(
    rc: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    events: TenantEvents = rc.lifespan_context.events
    events.subscribers(tenant_of(rc)).unfollow(rc.session, str(params.uri))
    return EmptyResult()


Answer = BaseModel | dict[str, Any] | None


async def seen(
    ctx: ServerRequestContext[Any, Any],
    call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[Answer]],
) -> Answer:
    """A server middleware: each 2025 connection is known to its tenant's subscribers, so it
    is told of list changes (2026-07-28 connections listen instead)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        events: TenantEvents = ctx.lifespan_context.events
        events.subscribers(tenant_of(ctx)).seen(ctx.session)
    return await call_next(ctx)


def serve(lowlevel: Server[Any]) -> None:
    """Serve subscriptions per tenant in both eras and advertise only what is delivered."""
    lowlevel.middleware.append(seen)
    # 2025-11-25: the resource list's changes are sent, so the handshake says so.
    announce_resource_list_changes(lowlevel)
    lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, listen)
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    discover = lowlevel.get_request_handler("server/discover")
    assert discover is not None  # the SDK registers it in Server.__init__

    async def discover_delivered(
        rc: ServerRequestContext[Any, Any], params: RequestParams
    ) -> DiscoverResult:
        found = await discover.handler(rc, params)
        assert isinstance(found, DiscoverResult)  # the SDK's own handler's answer
        return advertised(found)

    lowlevel.add_request_handler("server/discover", RequestParams, discover_delivered)


def advertised(found: DiscoverResult) -> DiscoverResult:
    """The SDK advertises every list-changed flag once listen is served; the tools and prompts
    never change at run time, so only the resources' flags stay."""
    caps = found.capabilities
    update: dict[str, Any] = {}
    if caps.tools is not None:
        update["tools"] = caps.tools.model_copy(update={"list_changed": False})
    if caps.prompts is not None:
        update["prompts"] = caps.prompts.model_copy(update={"list_changed": False})
    return found.model_copy(update={"capabilities": caps.model_copy(update=update)})
