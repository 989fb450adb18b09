"""Each tenant's share of PostgreSQL's pool, so that no tenant's store calls use up another's.

On PostgreSQL every store call (a transaction, a snapshot, a search, a runtime's read) holds
a connection of the pool for as long as it runs, and one tenant's slow calls once held the
whole pool: another tenant waited for it (12 searches held a pool of 10; another tenant's view
waited 7.9 s). `PoolShare` lets each tenant hold at most its share of the pool, the pool less
an eighth divided among the tenants as the HTTP caps are (`server.http.shares`), so a tenant
at its share waits for its own calls and the rest of the pool stays free for the others. A
call is the caller's tenant's: the request's scope (`server.mcp.scopes`) on MCP, `calling_as`
on the viewer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import TypeVar

import anyio

from frs.errors import StoreUnavailable
from frs.model import LOCAL_TENANT, Message
from frs.ports import Store, ThreadReader, ThreadTx
from frs.raw import Raw
from server.http.shares import RESERVE, share
from server.mcp.scopes import current_scope


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
