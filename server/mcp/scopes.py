"""Who is calling: the scope each request runs in (`frs.model.Scope`).

The tenant comes from the bearer token (`server.http.guards.BearerGuard`; stdio and in-process
callers are the local tenant). The client is what the client says about itself: its
`clientInfo` name, in either protocol era, and, where it offers roots, its first workspace
root, so two hosts, or two windows on two projects, each keep their own current session;
`--scope`/`FRS_SCOPE` overrides it. The connection is the live MCP session (its
`Mcp-Session-Id`, or the SSE stream's `session_id`; one per process on stdio), so two
connections of one client never take each other's current session while both are open.
The conversation is the host's own conversation the call belongs to (`frs.conversations`): a
tool call's `_meta` (Codex CLI), else the one the host started this stdio process for
(`CLAUDE_CODE_SESSION_ID`); it narrows the scope to that conversation, whose thread is its own
session. An explicit `--scope` keeps the scope as named: no conversation narrows it.

`scope_middleware` works it out once per request, asking for roots once per connection, and
`current_scope()` hands it to `server.mcp.deps.env_of`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Any

import anyio

from frs import conversations
from frs.escaping import escape_inline
from frs.model import DEFAULT_CLIENT, LOCAL_TENANT, Conversation, Scope
from server.http.guards import MESSAGE_PATH, TENANT_KEY

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

log = logging.getLogger(__name__)

_SCOPE: ContextVar[Scope | None] = ContextVar("frs_scope", default=None)
_CLIENT_CHARS = 200  # a name and a root; longer is cut (the store keys on it)
_ROOTS_TIMEOUT = 2.0  # seconds a client may take to list its roots before it is asked no more
_ROOTS_KEPT = 10_000  # connections whose first root is remembered
_PROCESS = "process"  # stdio and in-process: one connection per server process


class Roots:
    """The first root of each connection, asked for once (None: it offers none); each tenant
    has its own table, so one tenant's connections push out only its own."""

    def __init__(self) -> None:
        self._first: dict[str, OrderedDict[str, str | None]] = {}

    async def first(self, rc: ServerRequestContext[Any, Any], connection: str) -> str | None:
        table = self._first.setdefault(tenant_of(rc), OrderedDict())
        if connection in table:
            table.move_to_end(connection)
            return table[connection]
        found = await _ask_roots(rc)
        table[connection] = found
        if len(table) > _ROOTS_KEPT:
            table.popitem(last=False)
        return found


async def _ask_roots(rc: ServerRequestContext[Any, Any]) -> str | None:
    """The client's first root, when it declared roots and the connection lets the server ask
    (not on 2026-07-28, which has no server-to-client requests)."""
    capabilities = rc.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    try:
        with anyio.fail_after(_ROOTS_TIMEOUT):
            listed = await rc.session.list_roots()
    except Exception as exc:  # no back-channel, a timeout, an error from the client
        log.debug("roots/list unanswered (%s); the scope is the client's name", type(exc).__name__)
        return None
    return str(listed.roots[0].uri) if listed.roots else None


def connection_of(rc: ServerRequestContext[Any, Any]) -> str:
    """The live connection a request came on: its HTTP session, its SSE stream, or the
    process; "" for none.

    Only an id the SDK checked names a connection: a 2025 request's `Mcp-Session-Id` (the SDK
    answers 404 to one it did not issue to this tenant) and the SSE message endpoint's
    `session_id` (likewise). A 2026-07-28 request has no connection: the SDK ignores an
    `Mcp-Session-Id` it carries, so here it is ignored too; otherwise made-up ids would each
    take a place in the tables of connections (`frs.env.Chosen`)."""
    request = rc.request
    if request is None:
        return _PROCESS
    headers = getattr(request, "headers", {})
    params = getattr(request, "query_params", {})
    version = headers.get("mcp-protocol-version")
    stateful = version is None or version in _handshake_versions()
    if getattr(getattr(request, "url", None), "path", "") == MESSAGE_PATH:
        return str(params.get("session_id") or "")
    return str((headers.get("mcp-session-id") if stateful else None) or "")


@cache
def _handshake_versions() -> frozenset[str]:
    """The protocol versions that open a session with a handshake. Imported when first asked:
    the viewer reaches this module (`current_scope`, through `server.mcp.pool`) and serves
    no MCP, so it must not load the SDK's types (a third of a second)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


def tenant_of(rc: ServerRequestContext[Any, Any]) -> str:
    request = rc.request
    state = getattr(request, "state", None) if request is not None else None
    return str(getattr(state, TENANT_KEY, LOCAL_TENANT))


def client_of(rc: ServerRequestContext[Any, Any], override: str | None, root: str | None) -> str:
    """`--scope`, else the client's name and first root (`claude-code@file:///work/p`)."""
    if override:
        return override[:_CLIENT_CHARS]
    params = rc.session.client_params
    name = (params.client_info.name if params is not None else "").strip() or DEFAULT_CLIENT
    client = f"{name}@{root}" if root else name
    # One line, no invisible characters: the scope is shown in replies.
    return escape_inline(client)[:_CLIENT_CHARS]


def scope_of(
    rc: ServerRequestContext[Any, Any],
    override: str | None,
    root: str | None,
    process: Conversation | None,
) -> Scope:
    """The request's scope: tenant, client and connection, narrowed to the host's conversation
    (the request's `_meta`, else the process's) unless `--scope` named the scope."""
    connection = connection_of(rc) or None
    scope = Scope(tenant_of(rc), client_of(rc, override, root), connection)
    if override:
        return scope
    conversation = conversations.from_meta(rc.meta) or process
    return scope.in_conversation(conversation) if conversation is not None else scope


def current_scope() -> Scope | None:
    """The scope `scope_middleware` worked out for the request being handled."""
    return _SCOPE.get()


def scope_middleware(
    override: str | None, roots: Roots, process: Conversation | None = None
) -> Any:
    """A server middleware that works out each request's scope before its handler runs;
    `process` is the conversation the host started this process for (stdio), if it said."""

    async def middleware(rc: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        connection = connection_of(rc)
        root = None
        if override is None and connection and rc.method != "initialize":
            root = await roots.first(rc, connection)
        scope = scope_of(rc, override, root, process)
        token = _SCOPE.set(scope)
        try:
            return await call_next(rc)
        finally:
            _SCOPE.reset(token)

    return middleware
