"""Who hears about a change: one subscription bus per tenant, and the 2025-era subscribers.

`server.live` publishes here and serves both eras' subscriptions from here. The SDK's one bus
per server would fan every event out to every listener; a tenant's session ids must not reach
another tenant, so each tenant gets its own bus and its own `ListenHandler` (its own limit of
open streams) for 2026-07-28's `subscriptions/listen`, and its own table of its 2025-11-25
connections and what each sent `resources/subscribe` for, told on their own channel.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

log = logging.getLogger(__name__)

#: Open listen streams one tenant may hold; a further listen is refused until one closes.
MAX_STREAMS_PER_TENANT = 256
#: Seconds a 2025-era subscriber may take to take a notification before it is dropped: a
#: client that stopped reading must not hold up the call that made the change.
SEND_TIMEOUT = 5.0


class _Told(Protocol):
    """What a 2025 client is told through: its connection (or, failing that, a session)."""

    async def send_resource_updated(self, uri: str) -> None: ...

    async def send_resource_list_changed(self) -> None: ...


class Subscribers:
    """2025-era clients of one tenant: each live connection and the URIs it subscribed to.
    Keyed weakly by the connection, which nothing here keeps alive: a connection that ends is
    forgotten with it."""

    def __init__(self) -> None:
        self._followed: weakref.WeakKeyDictionary[_Told, set[str]] = weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        return len(self._followed)

    def seen(self, session: ServerSession) -> None:
        """A connection that sent a request: it is told when the resource list changes."""
        self._followed.setdefault(_connection(session), set())

    def follow(self, session: ServerSession, uri: str) -> None:
        self._followed.setdefault(_connection(session), set()).add(uri)

    def unfollow(self, session: ServerSession, uri: str) -> None:
        self._followed.get(_connection(session), set()).discard(uri)

    async def tell(self, uri: str) -> None:
        """Tell every connection following `uri`."""
        following = [c for c, uris in list(self._followed.items()) if uri in uris]
        await self._tell(following, lambda c: c.send_resource_updated(uri))

    async def tell_list_changed(self) -> None:
        """Tell every connection that the resource list changed."""
        await self._tell(list(self._followed.keys()), lambda c: c.send_resource_list_changed())

    async def _tell(
        self, connections: list[_Told], send: Callable[[_Told], Awaitable[None]]
    ) -> None:
        """All at once: a stuck connection holds the change's call up for `SEND_TIMEOUT` at
        most, and is forgotten."""
        if not connections:
            return
        async with anyio.create_task_group() as tg:
            for connection in connections:
                tg.start_soon(self._tell_one, connection, send)

    async def _tell_one(self, connection: _Told, send: Callable[[_Told], Awaitable[None]]) -> None:
        with anyio.move_on_after(SEND_TIMEOUT) as waited:
            try:
                await send(connection)
                return
            except Exception as exc:  # a closed connection: forget it
                log.debug("a subscriber is gone (%s); forgetting it", type(exc).__name__)
        if waited.cancelled_caught:
            log.warning("a subscriber took no update for %g s; forgetting it", SEND_TIMEOUT)
        self._followed.pop(connection, None)


def _connection(session: ServerSession) -> _Told:
    """The connection a per-request session proxy writes to: what a subscription belongs to.
    The SDK builds a proxy per request (which holds its connection, so it must not be kept);
    mcp 2.3 keeps the connection in `_connection`."""
    found: _Told = getattr(session, "_connection", session)
    return found


class TenantEvents:
    """Per tenant, made when first needed: a bus and a listen handler (2026-07-28), and the
    subscribers (2025-11-25)."""

    def __init__(self, max_streams: int = MAX_STREAMS_PER_TENANT) -> None:
        self._max_streams = max_streams
        self._buses: dict[str, InMemorySubscriptionBus] = {}
        self._handlers: dict[str, ListenHandler] = {}
        self._subscribers: dict[str, Subscribers] = {}

    @property
    def max_streams(self) -> int:
        return self._max_streams

    def handler(self, tenant: str) -> ListenHandler:
        """The listen handler serving `tenant`'s streams."""
        found = self._handlers.get(tenant)
        if found is None:
            bus = self._buses.setdefault(tenant, InMemorySubscriptionBus())
            found = ListenHandler(bus, max_subscriptions=self._max_streams)
            self._handlers[tenant] = found
        return found

    def subscribers(self, tenant: str) -> Subscribers:
        """`tenant`'s 2025-era subscribers."""
        return self._subscribers.setdefault(tenant, Subscribers())

    async def publish(self, tenant: str, events: list[ServerEvent]) -> None:
        """Tell `tenant`'s listeners and subscribers; nobody else's. A tenant nobody listens
        for costs two dictionary lookups."""
        bus = self._buses.get(tenant)
        subscribers = self._subscribers.get(tenant)
        for event in events:
            if bus is not None:
                await bus.publish(event)
            if subscribers is None:
                continue
            if isinstance(event, ResourceUpdated):
                await subscribers.tell(event.uri)
            elif isinstance(event, ResourcesListChanged):
                await subscribers.tell_list_changed()

    def close(self) -> None:
        """End every open listen stream gracefully (at shutdown)."""
        for handler in self._handlers.values():
            handler.close()
