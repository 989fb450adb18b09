"""One subscription bus per tenant: a change is heard only by the streams of its tenant.

`server.live` publishes here and serves `subscriptions/listen` from here. The SDK's one bus per
server would fan every event out to every listener; a tenant's session ids must not reach
another tenant, so each tenant gets its own bus and its own `ListenHandler` (its own limit of
open streams).
"""

from __future__ import annotations

from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent

#: Open listen streams one tenant may hold; a further listen is refused until one closes.
MAX_STREAMS_PER_TENANT = 256


class TenantEvents:
    """One bus and one listen handler per tenant, made when first needed."""

    def __init__(self, max_streams: int = MAX_STREAMS_PER_TENANT) -> None:
        self._max_streams = max_streams
        self._buses: dict[str, InMemorySubscriptionBus] = {}
        self._handlers: dict[str, ListenHandler] = {}

    def handler(self, tenant: str) -> ListenHandler:
        """The listen handler serving `tenant`'s streams."""
        found = self._handlers.get(tenant)
        if found is None:
            bus = self._buses.setdefault(tenant, InMemorySubscriptionBus())
            found = ListenHandler(bus, max_subscriptions=self._max_streams)
            self._handlers[tenant] = found
        return found

    async def publish(self, tenant: str, events: list[ServerEvent]) -> None:
        """Tell `tenant`'s open streams; nobody else's. A tenant nobody listens for costs a
        dictionary lookup."""
        bus = self._buses.get(tenant)
        if bus is None:
            return
        for event in events:
            await bus.publish(event)

    def close(self) -> None:
        """End every open stream gracefully (at shutdown)."""
        for handler in self._handlers.values():
            handler.close()
