"""Who hears about a change: one subscription bus per tenant, and the 2025-era subscribers.

`server.mcp.live` publishes here and serves both eras' subscriptions from here. The SDK's one bus
per server would fan every event out to every listener; a tenant's session ids must not reach
another tenant, so each tenant gets its own bus and its own `ListenHandler` (its own limit of
open streams) for 2026-07-28's `subscriptions/listen`, and its own table of its 2025-11-25
connections and what each sent `resources/subscribe` for, told on their own channel.

The writer never waits for the fan-out: `publish` hands the change to a bounded queue and
returns; the fan-out task (`running`, opened with the database in `server.mcp.deps`) tells the
listeners. 250 listeners fanned out on the writer's path took its p50 from 3 to 86 ms, and a
2025 subscriber that stopped reading held every write for `SEND_TIMEOUT`. Each listener has an
outbox of its own, sent by a task of its own: a 2026 listen stream (`MergingListen`) and a 2025
connection alike. An event already waiting in an outbox is not queued twice, so a listener
that falls behind a burst of writes is told each changed resource once, not once a write: the
fan-out still runs on the event loop beside the writers, and 250 listeners each told of every
write cost the writers most of their time.

On PostgreSQL the instances on one database tell each other (`Relay`, through the database's
own notifications: `storage.postgres.notices`). Each change made here is also sent, from a task
of its own, all that waits in one notice statement, to the others, and a change another
instance sends is told to this instance's listeners as if made here: the same buses, outboxes,
merging and caps. A process knows its own notices (`origin`) and does not tell them twice. On
SQLite there is no relay: a process tells only its own listeners.
"""

from __future__ import annotations

import json
import logging
import secrets
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Protocol, TypeVar, cast

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    InMemorySubscriptionBus,
    ServerEvent,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    ResourcesListChanged,
    ResourceUpdated,
    event_matches,
    event_to_notification,
)
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)

from server.internals import connection_of

log = logging.getLogger(__name__)

#: Open listen streams one tenant may hold over stdio; a further listen is refused until one
#: closes. Over HTTP a tenant's share of `--max-connections` (`server.http.shares.listen_share`).
MAX_STREAMS_PER_TENANT = 256
#: Seconds a 2025-era subscriber may take to take a notification before it is dropped: a
#: client that stopped reading must not hold up the call that made the change.
SEND_TIMEOUT = 5.0
#: Seconds a listen stream waits after sending all it had, so that a burst of changes merges
#: (`MergingListen`): each frame costs the event loop the writers share, and 250 streams told
#: of every write took a writer's p50 from 28 to 242 ms on a busy machine (paced: 63 → 77).
PACE = 0.5
#: Changes waiting for the fan-out task; past it a change is dropped (and logged), never waited.
PENDING_CHANGES = 1024
#: Events waiting for one connection or listen stream; past it the oldest is dropped.
PENDING_PER_CONNECTION = 256
#: What an outbox holds for a resource list's change (never a resource URI).
_LIST_CHANGED = ""
#: Changes sent to the other instances in one statement at most.
RELAYED_AT_ONCE = 256
#: The longest notice PostgreSQL carries (`storage.postgres.notices.MAX_NOTICE`).
MAX_NOTICE = 7_999
T = TypeVar("T")
Change = tuple[str, list[ServerEvent]]  # a tenant's change: the events it makes


class Relay(Protocol):
    """Where the changes made through other processes on the same database come from, and
    this process's go (`storage.postgres.notices.Notices`)."""

    async def send(self, notices: Sequence[str]) -> None:
        """Tell every process listening of each notice (this one's too)."""
        ...

    def listening(self, receive: Callable[[str], None]) -> AbstractAsyncContextManager[None]:
        """Call `receive(notice)` for every notice sent while inside."""
        ...


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
        # What each connection has yet to be told, in order (a dict as an ordered set).
        self._outboxes: weakref.WeakKeyDictionary[_Told, dict[str, None]] = (
            weakref.WeakKeyDictionary()
        )

    def __len__(self) -> int:
        return len(self._followed)

    def seen(self, session: ServerSession) -> None:
        """A connection that sent a request: it is told when the resource list changes."""
        self._followed.setdefault(_connection(session), set())

    def follow(self, session: ServerSession, uri: str) -> None:
        self._followed.setdefault(_connection(session), set()).add(uri)

    def unfollow(self, session: ServerSession, uri: str) -> None:
        self._followed.get(_connection(session), set()).discard(uri)

    def tell(self, uri: str, tg: anyio.abc.TaskGroup) -> None:
        """Queue `uri` for every connection following it; their senders run in `tg`."""
        for connection, uris in list(self._followed.items()):
            if uri in uris:
                self._queue(connection, uri, tg)

    def tell_list_changed(self, tg: anyio.abc.TaskGroup) -> None:
        """Queue the resource list's change for every connection."""
        for connection in list(self._followed.keys()):
            self._queue(connection, _LIST_CHANGED, tg)

    def _queue(self, connection: _Told, uri: str, tg: anyio.abc.TaskGroup) -> None:
        outbox = self._outboxes.get(connection)
        if outbox is None:
            outbox = self._outboxes[connection] = {}
        first = not outbox
        # Already waiting: one notification tells both changes.
        if _waits(outbox, uri, "a subscriber") and first:
            # No sender is running for this connection (it ends once the box is empty).
            tg.start_soon(self._send_all, connection)

    async def _send_all(self, connection: _Told) -> None:
        """Send the connection's outbox, oldest first, until it is empty; a stuck or closed
        connection is forgotten."""
        while outbox := self._outboxes.get(connection):
            uri = next(iter(outbox))
            if not await self._tell_one(connection, uri):
                self._outboxes.pop(connection, None)
                self._followed.pop(connection, None)
                return
            outbox.pop(uri, None)

    async def _tell_one(self, connection: _Told, uri: str) -> bool:
        with anyio.move_on_after(SEND_TIMEOUT):
            try:
                if uri == _LIST_CHANGED:
                    await connection.send_resource_list_changed()
                else:
                    await connection.send_resource_updated(uri)
                return True
            except Exception as exc:  # a closed connection: forget it
                log.debug("a subscriber is gone (%s); forgetting it", type(exc).__name__)
                return False
        log.warning("a subscriber took no update for %g s; forgetting it", SEND_TIMEOUT)
        return False


def _connection(session: ServerSession) -> _Told:
    """The connection a per-request session proxy writes to (`server.internals.connection_of`):
    the proxy must not be kept, it holds the connection."""
    return cast(_Told, connection_of(session))


def _waits(outbox: dict[T, None], item: T, whose: str) -> bool:
    """Put `item` last in `outbox` (a dict as an ordered set) unless it waits there already
    (False); a full outbox drops its oldest."""
    if item in outbox:
        return False
    if len(outbox) >= PENDING_PER_CONNECTION:
        del outbox[next(iter(outbox))]
        log.warning("%s is %d updates behind; dropped its oldest", whose, PENDING_PER_CONNECTION)
    outbox[item] = None
    return True


class _Outbox:
    """A listen stream's events waiting to be sent, oldest first; one already waiting is not
    queued again. Closed: what waits is still sent, then `get` ends."""

    def __init__(self) -> None:
        self._waiting: dict[ServerEvent, None] = {}
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self.closed = False

    def put(self, event: ServerEvent) -> None:
        if not self.closed and _waits(self._waiting, event, "a listen stream"):
            self._ready.set()

    async def get(self) -> ServerEvent | None:
        """The oldest event waiting, once there is one; None once closed and empty."""
        while not self._waiting:
            if self.closed:
                return None
            self._ready = anyio.Event()
            await self._ready.wait()
        event = next(iter(self._waiting))
        del self._waiting[event]
        return event

    def __len__(self) -> int:
        return len(self._waiting)

    async def pause(self, seconds: float) -> None:
        """Wait `seconds`, or until closed."""
        with anyio.move_on_after(seconds):
            await self._closing.wait()

    def close(self) -> None:
        self.closed = True
        self._ready.set()
        self._closing.set()


def _honored(asked: SubscriptionFilter) -> SubscriptionFilter:
    """What a listen stream is told, for its ack: every kind asked for (as the SDK's handler
    answers), flags not set and an empty URI list left out."""
    return SubscriptionFilter(
        tools_list_changed=True if asked.tools_list_changed else None,
        prompts_list_changed=True if asked.prompts_list_changed else None,
        resources_list_changed=True if asked.resources_list_changed else None,
        resource_subscriptions=list(asked.resource_subscriptions or ()) or None,
    )


class MergingListen:
    """Serves `subscriptions/listen` as the SDK's `ListenHandler` does (the ack first, every
    frame stamped with the subscription id, only the kinds asked for, at most
    `max_subscriptions` streams, `close` ending them gracefully), each stream sending from an
    `_Outbox`: a change told again while the stream is still sending is merged with the one
    waiting."""

    def __init__(self, bus: InMemorySubscriptionBus, max_subscriptions: int) -> None:
        self._bus = bus
        self._max_subscriptions = max_subscriptions
        self._streams: set[_Outbox] = set()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
        if len(self._streams) >= self._max_subscriptions:
            # `server.mcp.live` rewords it.
            raise MCPError(INTERNAL_ERROR, "Subscription limit reached")
        honored = _honored(params.notifications)
        uris = frozenset(honored.resource_subscriptions or ())
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        outbox = _Outbox()

        def deliver(event: ServerEvent) -> None:
            if event_matches(honored, uris, event):
                outbox.put(event)

        # Subscribed before the ack, so nothing published meanwhile is lost; sent after it.
        unsubscribe = self._bus.subscribe(deliver)
        self._streams.add(outbox)
        try:
            await ctx.session.send_notification(
                SubscriptionsAcknowledgedNotification(
                    params=SubscriptionsAcknowledgedNotificationParams(
                        notifications=honored, _meta=meta
                    )
                ),
                related_request_id=subscription_id,
            )
            while (event := await outbox.get()) is not None:
                await ctx.session.send_notification(
                    event_to_notification(event, meta), related_request_id=subscription_id
                )
                if not outbox:
                    # What comes meanwhile merges: a burst of writes is told in a few frames.
                    await outbox.pause(PACE)
        finally:
            unsubscribe()
            self._streams.discard(outbox)
            outbox.close()
        return SubscriptionsListenResult(_meta=meta)

    def close(self) -> None:
        """End every open stream gracefully: each sends what waits, then its result."""
        for outbox in list(self._streams):
            outbox.close()


class TenantEvents:
    """Per tenant, made when first needed: a bus and a listen handler (2026-07-28), and the
    subscribers (2025-11-25)."""

    def __init__(self, max_streams: int = MAX_STREAMS_PER_TENANT, source: str = "") -> None:
        self._max_streams = max_streams
        self.source = source  # where the limit comes from, for the refusal ("" : a constant)
        self._buses: dict[str, InMemorySubscriptionBus] = {}
        self._handlers: dict[str, MergingListen] = {}
        self._subscribers: dict[str, Subscribers] = {}
        # Open only while `running`: the fan-out task reads what `publish` writes, and the
        # relay's task what goes to the other instances.
        self._changes: MemoryObjectSendStream[Change] | None = None
        self._relayed: MemoryObjectSendStream[Change] | None = None
        #: What this process signs its notices with, to know them when they come back.
        self.origin = secrets.token_hex(8)

    @property
    def max_streams(self) -> int:
        return self._max_streams

    def handler(self, tenant: str) -> MergingListen:
        """The listen handler serving `tenant`'s streams."""
        found = self._handlers.get(tenant)
        if found is None:
            bus = self._buses.setdefault(tenant, InMemorySubscriptionBus())
            found = MergingListen(bus, max_subscriptions=self._max_streams)
            self._handlers[tenant] = found
        return found

    def subscribers(self, tenant: str) -> Subscribers:
        """`tenant`'s 2025-era subscribers."""
        return self._subscribers.setdefault(tenant, Subscribers())

    def publish(self, tenant: str, events: list[ServerEvent]) -> None:
        """Hand `tenant`'s change to the fan-out task (and to the relay's, for the other
        instances) and return at once: the writer never waits for listeners. A tenant nobody
        listens for here costs two dictionary lookups (and, with a relay, a queued notice)."""
        if self._relayed is not None:
            _hand(self._relayed, (tenant, events), "the other instances")
        if tenant not in self._buses and tenant not in self._subscribers:
            return
        if self._changes is None:
            log.warning("a change was published with no fan-out task running; nobody is told")
            return
        _hand(self._changes, (tenant, events), "the listeners")

    def heard(self, notice: str) -> None:
        """A notice from the relay: another instance's change, told to the listeners here as if
        made here; this process's own, and anything that is not a change, are ignored."""
        found = _read_notice(notice)
        if found is None:
            log.debug("ignored a notice that is not a change: %.80r", notice)
            return
        origin, tenant, events = found
        if origin == self.origin or self._changes is None:
            return
        if tenant in self._buses or tenant in self._subscribers:
            _hand(self._changes, (tenant, events), "the listeners")

    @asynccontextmanager
    async def running(self, relay: Relay | None = None) -> AsyncIterator[None]:
        """Fan changes out while inside (the database's lifetime), with those of the other
        instances `relay` tells of, and tell them of ours; stop on exit."""
        changes, received = anyio.create_memory_object_stream[Change](PENDING_CHANGES)
        relayed, to_relay = anyio.create_memory_object_stream[Change](PENDING_CHANGES)
        failure: Exception | None = None
        with changes, received, relayed, to_relay:
            async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
                tg.start_soon(self._fan_out, received, tg)
                self._changes = changes
                if relay is not None:
                    tg.start_soon(self._relay_out, to_relay, relay)
                    self._relayed = relayed
                try:
                    if relay is not None:
                        await stack.enter_async_context(relay.listening(self.heard))
                    yield
                except Exception as exc:  # raised below as it is: a task group would wrap it
                    failure = exc  # in an ExceptionGroup, which the commands do not expect
                finally:
                    self._changes = self._relayed = None
                    tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def _relay_out(self, received: MemoryObjectReceiveStream[Change], relay: Relay) -> None:
        """Send this process's changes to the other instances, all that wait in one go."""
        async for first in received:
            batch = [first]
            while len(batch) < RELAYED_AT_ONCE:
                try:
                    batch.append(received.receive_nowait())
                except anyio.WouldBlock:
                    break
            notices = [n for n in (self._notice(t, e) for t, e in batch) if n is not None]
            try:
                await relay.send(notices)
            except Exception as exc:  # the database is away: those changes are not told there
                log.warning(
                    "%d change(s) were not told to the other instances: %s", len(notices), exc
                )

    def _notice(self, tenant: str, events: list[ServerEvent]) -> str | None:
        """The change as a notice (compact JSON); None, logged, past PostgreSQL's size."""
        updated = [e.uri for e in events if isinstance(e, ResourceUpdated)]
        listed = any(isinstance(e, ResourcesListChanged) for e in events)
        notice = json.dumps(
            {"origin": self.origin, "tenant": tenant, "updated": updated, "listed": listed},
            separators=(",", ":"),
        )
        if len(notice.encode()) > MAX_NOTICE:
            log.warning("a change too long for a notice (%d bytes) is told here only", len(notice))
            return None
        return notice

    async def _fan_out(
        self, received: MemoryObjectReceiveStream[Change], tg: anyio.abc.TaskGroup
    ) -> None:
        async for tenant, events in received:
            bus = self._buses.get(tenant)
            subscribers = self._subscribers.get(tenant)
            for event in events:
                if bus is not None:
                    await bus.publish(event)  # each stream's own bounded buffer
                if subscribers is None:
                    continue
                if isinstance(event, ResourceUpdated):
                    subscribers.tell(event.uri, tg)
                elif isinstance(event, ResourcesListChanged):
                    subscribers.tell_list_changed(tg)

    def close(self) -> None:
        """End every open listen stream gracefully (at shutdown)."""
        for handler in self._handlers.values():
            handler.close()


def _hand(stream: MemoryObjectSendStream[Change], change: Change, whom: str) -> None:
    """Queue `change` without waiting; dropped (and logged) when the queue is full."""
    try:
        stream.send_nowait(change)
    except anyio.WouldBlock:
        log.warning("%d changes wait for %s; dropped one", PENDING_CHANGES, whom)
    except anyio.ClosedResourceError:
        pass  # shutting down


def _read_notice(notice: str) -> tuple[str, str, list[ServerEvent]] | None:
    """(origin, tenant, events) of a change's notice (`TenantEvents._notice`); None for
    anything else."""
    try:
        found = json.loads(notice)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    origin, tenant = found.get("origin"), found.get("tenant")
    updated, listed = found.get("updated"), found.get("listed")
    if not (isinstance(origin, str) and isinstance(tenant, str) and isinstance(listed, bool)):
        return None
    if not isinstance(updated, list) or not all(isinstance(uri, str) for uri in updated):
        return None
    events: list[ServerEvent] = [ResourceUpdated(uri=uri) for uri in updated]
    if listed:
        events.append(ResourcesListChanged())
    return origin, tenant, events
