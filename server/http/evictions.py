"""Room for a new Streamable HTTP client at the session limit: the least recently used idle
session is closed to make it.

Clients that go away without a `DELETE` (a closed laptop, a killed agent, a conformance run)
keep their sessions until the idle timeout; at `--max-sessions` the SDK would refuse every new
client meanwhile (503). `EvictIdle` stands in front of the SDK's `/mcp` app: when a request
that opens a session arrives and the limit is reached, it closes the idle session whose last
request is the oldest, so the newcomer is admitted. The newcomer's tenant's own idle sessions
go first. Each tenant holds at most its share of the limit (`server.http.shares`): a tenant at its
share that opens another session closes its own least recently used idle one, or, when all of
its own are busy, is refused (503, naming its share), so one tenant's busy sessions never fill
the limit and never close another tenant's. A session serving a request or holding its GET
stream open is never closed; if every session is busy, the SDK's 503 stands (reworded by
`server.http.guards.RewordLimits`). An evicted client's next request gets 404, after which the
protocol has a client initialize anew.

The SDK exposes neither its sessions nor a way to close one, so this reads and closes them
through `server.internals` (`live_sessions`, `discard_session`).
"""

from __future__ import annotations

import json
import logging
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import INTERNAL_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.http.guards import TENANT_KEY, RequestBody, respond
from server.internals import discard_session, live_sessions

log = logging.getLogger(__name__)

_SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


@dataclass(slots=True)
class EvictIdle:
    """Keeps the order in which `path`'s sessions were last used and which are busy, and
    closes the least recently used idle one when a new session needs its slot.

    Busy is counted here, from the client's side: a request is over once its response's last
    byte is sent, which the client may see before the SDK's handler has returned."""

    app: ASGIApp
    manager: StreamableHTTPSessionManager
    limit: int
    path: str
    per_tenant: int = 0  # each tenant's share of `limit`; 0: the whole limit
    _used: OrderedDict[str, int] = field(default_factory=OrderedDict)  # session -> requests open
    _owners: dict[str, str | None] = field(default_factory=dict)  # session -> its tenant
    _opening: Counter[str | None] = field(default_factory=Counter)  # tenant -> opens under way

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        session = _header(scope, _SESSION_HEADER)
        tenant = _tenant(scope)
        if session is None and _opens_a_session(scope):
            if not await self._make_room(tenant):
                await self._refuse_over_share(receive, send)
                return
            await self._serve(scope, receive, send, tenant, None, opening=True)
            return
        if session is not None and session in self._live():
            if self._owners.get(session, tenant) != tenant:
                # Another tenant's session: the SDK answers 404; it neither uses nor holds it.
                await self.app(scope, receive, send)
                return
            self._used[session] = self._used.get(session, 0) + 1
            self._used.move_to_end(session)
        await self._serve(scope, receive, send, tenant, session)

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        tenant: str | None,
        session: str | None,
        opening: bool = False,
    ) -> None:
        request = _Request(self._used, self._owners, tenant, session)
        if opening:  # counted until its session is known (owned) or it ends without one
            request.opening = self._opening
            self._opening[tenant] += 1
        try:
            await self.app(scope, receive, request.watching(send))
        finally:
            request.over()

    async def _refuse_over_share(self, receive: Receive, send: Send) -> None:
        """503 as the SDK words its own (a JSON-RPC error answering the request's id)."""
        text = (
            f"Too many open Streamable HTTP sessions for your tenant: each tenant may hold "
            f"{self.per_tenant} (its share of --max-sessions {self.limit}) and every one of "
            "yours is busy (serving a request or holding its stream open). Close a client you "
            "no longer use (closing ends its session) and retry."
        )
        request_id = await RequestBody(receive).request_id()
        error = {"code": INTERNAL_ERROR, "message": text}
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
        await respond(send, 503, body, b"application/json", [(b"retry-after", b"5")])

    def _live(self) -> dict[str, Any]:
        return live_sessions(self.manager)

    async def _make_room(self, tenant: str | None) -> bool:
        """Make room for a session of `tenant`: at its share, close its own least recently
        used idle session (False if it has none: refuse it); at the limit, the least recently
        used idle session, the tenant's own first."""
        live = self._live()
        for gone in [s for s in self._used if s not in live]:
            del self._used[gone]
            self._owners.pop(gone, None)
        held = sum(1 for s in live if self._owners.get(s) == tenant)
        at_share = bool(self.per_tenant) and held + self._opening[tenant] >= self.per_tenant
        if len(live) < self.limit and not at_share:
            return True
        # Least recently used first; one never seen here (opened before counting) first of all.
        order = [s for s in live if s not in self._used] + list(self._used)
        idle = [
            s
            for s in order
            if not self._used.get(s, 0) and not getattr(live.get(s), "is_terminated", True)
        ]
        if at_share:
            idle = [s for s in idle if self._owners.get(s) == tenant]
        idle.sort(key=lambda s: self._owners.get(s) != tenant)  # stable: LRU within each group
        if not idle:
            return not at_share  # at the limit alone, the SDK's 503 stands
        session = idle[0]
        self._used.pop(session, None)
        self._owners.pop(session, None)
        log.info(
            "session limit of %d reached: evicted the least recently used idle session to "
            "admit a new client",
            self.limit,
        )
        await discard_session(self.manager, session, live[session])
        return True


def _tenant(scope: Scope) -> str | None:
    """The caller's tenant, as `server.http.guards.BearerGuard` set it (None without tokens)."""
    found = scope.get("state", {}).get(TENANT_KEY)
    return str(found) if found is not None else None


@dataclass(slots=True)
class _Request:
    """One request on `/mcp`: its session is busy until the response's last byte is sent (or
    the handler returns without one). The opening request learns its session from the
    response's `Mcp-Session-Id`."""

    used: OrderedDict[str, int]
    owners: dict[str, str | None]
    tenant: str | None
    session: str | None
    counted: bool = False
    opening: Counter[str | None] | None = None  # the tenants' opens under way, while this is one

    def __post_init__(self) -> None:
        self.counted = self.session is not None and self.session in self.used

    def watching(self, send: Send) -> Send:
        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and self.session is None:
                for key, value in message.get("headers", ()):
                    if key.lower() == _SESSION_HEADER:
                        self.session = value.decode("latin-1")
                        self.used[self.session] = self.used.get(self.session, 0) + 1
                        self.owners[self.session] = self.tenant
                        self.counted = True
                        self._opened()
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.over()  # before the client can see it: its next request finds it idle
            await send(message)

        return watch

    def _opened(self) -> None:
        if self.opening is not None:
            self.opening[self.tenant] -= 1
            self.opening = None

    def over(self) -> None:
        self._opened()
        if self.counted and self.session is not None:
            self.counted = False
            if self.session in self.used:
                self.used[self.session] = max(0, self.used[self.session] - 1)


def _opens_a_session(scope: Scope) -> bool:
    """A request without a session id opens one unless it speaks the stateless 2026-07-28
    era (its version header names a version that has no handshake)."""
    version = _header(scope, _VERSION_HEADER)
    return scope["method"] == "POST" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
