"""Each tenant's share of the HTTP server's caps, so that no tenant can use up another's.

Every cap of the HTTP transports counts per tenant as well as in all: a tenant may hold at
most its share of the open requests (which bounds its streams of every kind: listen streams,
GET streams, SSE streams, slow uploads, answers it does not read), of the Streamable HTTP
sessions and of the SSE streams. A share is the cap divided among the tenants the server
knows (its `--tokens` and `--token`; one without any), at least 1; the open requests' cap is
`--max-connections` less a reserve of an eighth, kept for `/health`, refusals and newcomers,
so a server whose tenants all hold their whole share still answers them. With more tenants
than a cap, each tenant keeps one and the cap in all still holds. A tenant's live-update
listen streams (`subscriptions/listen`, `server.mcp.events`) may take half of its share of open
requests, so its listeners never leave its own calls without a socket.

`RequestShare` counts each tenant's open requests (behind `server.http.guards.BearerGuard`, which
names the tenant) and answers a request over its tenant's share with 503, naming the share.
Each tenant's share of PostgreSQL's pool is `server.mcp.pool`.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

from server.http.guards import refuse, tenant_in

log = logging.getLogger(__name__)

RESERVE = 8  # one socket in this many is kept out of every tenant's share of requests


def share(cap: int, tenants: int) -> int:
    """One tenant's share of `cap` among `tenants`: at least 1."""
    return max(1, cap // max(1, tenants))


def request_share(max_connections: int, tenants: int) -> int:
    """One tenant's share of open requests: `max_connections` less the reserve, divided."""
    return share(max_connections - max_connections // RESERVE, tenants)


def listen_share(max_connections: int, tenants: int) -> int:
    """One tenant's open listen streams: half its share of open requests, at least 1."""
    return max(1, request_share(max_connections, tenants) // 2)


@dataclass(slots=True)
class RequestShare:
    """At most `limit` open requests per tenant; one more gets 503 naming the share."""

    app: ASGIApp
    limit: int
    cap: int  # --max-connections, for the message
    open: Counter[str] = field(default_factory=Counter)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tenant = tenant_in(scope)
        if self.open[tenant] >= self.limit:
            log.warning("refused a request: its tenant holds its share of %d open", self.limit)
            await refuse(
                send,
                503,
                f"Too many open requests for your tenant: each tenant may hold {self.limit} at "
                f"once (its share of --max-connections {self.cap}), streams included. Close a "
                "stream you no longer read (a listen, an SSE or GET stream) and retry.",
                # Closed after it: the request's body, if any, is not read.
                [(b"retry-after", b"5"), (b"connection", b"close")],
            )
            return
        # No await between the check and the count: one event loop, so no race.
        self.open[tenant] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open[tenant] -= 1
            if not self.open[tenant]:
                del self.open[tenant]
