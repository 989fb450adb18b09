"""Each tenant's share of the HTTP server's caps, so that no tenant can use up another's.

Every cap of the HTTP transports counts per tenant as well as in all: a tenant may hold at
most its share of the open requests (which bounds its streams of every kind: listen streams,
GET streams, SSE streams, slow uploads, answers it does not read), of the Streamable HTTP
sessions and of the SSE streams. A share is the cap divided among the tenants the server
knows (its `--tokens` and `--token`; one without any), at least 1; the open requests' cap is
`--max-connections` less a reserve of an eighth, kept for `/health`, refusals and newcomers,
so a server whose tenants all hold their whole share still answers them. With more tenants
than a cap, each tenant keeps one and the cap in all still holds. A tenant's live-update
listen streams (`subscriptions/listen`, `server.events`) may take half of its share of open
requests, so its listeners never leave its own calls without a socket.

`RequestShare` counts each tenant's open requests (behind `server.guards.BearerGuard`, which
names the tenant) and answers a request over its tenant's share with 503, naming the share.

On PostgreSQL every store call (a transaction, a snapshot, a search, a runtime's read) holds
a connection of the pool for as long as it runs, and one tenant's slow calls once held the
whole pool: another tenant waited for it. `PoolShare` lets each tenant hold at most its share
of the pool, the pool less an eighth divided among the tenants, so a tenant at its share
waits for its own calls and the rest of the pool stays free for the others. A call is the
caller's tenant's: the request's scope (`server.scopes`) on MCP, `calling_as` on the viewer.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from frs.errors import StoreUnavailable
from frs.model import LOCAL_TENANT, Message
from frs.ports import Store, ThreadReader, ThreadTx
from frs.raw import Raw
from server.guards import refuse, tenant_in
from server.scopes import current_scope

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


def pool_share(pool: int, tenants: int) -> int:
    """One tenant's share of a pool of `pool` connections: the pool less the reserve, divided."""
    return share(pool - pool // RESERVE, tenants)


_CALLER: ContextVar[str | None] = ContextVar("frs_caller", default=None)
_HOLDING: ContextVar[bool] = ContextVar("frs_holding_a_share", default=False)
T = TypeVar("T")


@contextmanager
def calling_as(tenant: str) -> Iterator[None]:
    """Store calls made inside are `tenant`'s (for callers without an MCP scope: the viewer)."""
    token = _CALLER.set(tenant)
    try:
        yield
    finally:
        _CALLER.reset(token)


def caller() -> str:
    """The tenant the store call being made is for: `calling_as`, else the request's scope,
    else the local tenant (stdio, the CLI)."""
    named = _CALLER.get()
    if named is not None:
        return named
    scope = current_scope()
    return scope.tenant if scope is not None else LOCAL_TENANT


class PoolShare:
    """A `frs.ports.Store` (and the viewer's reader) over a pooled one, whose every call holds
    one of its tenant's `limit` slots while it runs; a call nested in another of the same task
    uses its slot. A tenant whose slots stay taken for `wait` seconds is told so
    (`StoreUnavailable`, naming the share), as a pool that stays full is."""

    def __init__(self, store: Store, limit: int, pool: int, wait: float = 10.0) -> None:
        self.store = store
        self.limit = limit
        self.pool = pool
        self.wait = wait
        self._slots: dict[str, anyio.Semaphore] = {}

    @asynccontextmanager
    async def _slot(self, tenant: str) -> AsyncIterator[None]:
        if _HOLDING.get():
            yield
            return
        # One semaphore per tenant, kept: tenants are those the tokens name, a bounded set.
        slots = self._slots.get(tenant)
        if slots is None:
            slots = self._slots[tenant] = anyio.Semaphore(self.limit)
        acquired = False
        with anyio.move_on_after(self.wait):
            await slots.acquire()
            acquired = True
        if not acquired:
            raise StoreUnavailable(
                f"your tenant's calls hold its share of the database pool ({self.limit} of "
                f"{self.pool} connections) and none came free within {self.wait:g} s; wait "
                "for them to finish"
            )
        token = _HOLDING.set(True)
        try:
            yield
        finally:
            _HOLDING.reset(token)
            slots.release()

    @asynccontextmanager
    async def _held(self, inner: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
        async with self._slot(caller()), inner as found:
            yield found

    def transaction(self) -> AbstractAsyncContextManager[ThreadTx]:
        return self._held(self.store.transaction())

    def snapshot(self) -> AbstractAsyncContextManager[ThreadReader]:
        return self._held(self.store.snapshot())

    def searching(self, seconds: float) -> AbstractAsyncContextManager[ThreadReader]:
        return self._held(self.store.searching(seconds))

    async def newest_entries(
        self, tenant: str, interface: str, conversation: str, count: int | None
    ) -> list[Message | Raw]:
        async with self._slot(tenant):
            return await self.store.newest_entries(tenant, interface, conversation, count)
