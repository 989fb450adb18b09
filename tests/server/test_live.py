"""Live updates: what each protocol era advertises, and that what it advertises is delivered.

Two in-process clients share one server process (as every client of an HTTP server does): one
listens (`subscriptions/listen`, protocol 2026-07-28), the other changes sessions. What the
listener hears is read up to a sentinel: after the change under test, the writer records into a
sentinel session the listener also follows, and the events before the sentinel's are exactly
the change's (a stream is ordered; no timing is asserted). The session list
(`frs://sessions`), which every change updates, is followed in a test of its own: a sentinel
would update it too. Tenants, stdio and the HTTP
transports are in `test_live_transports.py`.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server import MCPServer
from mcp.shared import subscriptions
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp.types import (
    Implementation,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
)

from frs.model import LOCAL_TENANT
from server import Settings, build_server
from server.mcp import events
from server.mcp.deps import Deps, open_deps
from server.mcp.events import TenantEvents
from tests.pg import Cluster

pytestmark = pytest.mark.anyio

SESSIONS = "frs://sessions"
WAIT = 30.0  # seconds before a stream that never delivers fails the test (not a measurement)


def uris(session_id: str) -> dict[str, str]:
    base = f"frs://sessions/{session_id}"
    return {
        "thread": f"{base}/thread",
        "messages": f"{base}/messages",
        "anthropic": f"{base}/messages/anthropic",
        "squashes": f"{base}/squashes",
    }


def updated(session_id: str, *names: str) -> set[ServerEvent]:
    """`ResourceUpdated` for the named resources of a session."""
    return {ResourceUpdated(uri=uris(session_id)[n]) for n in names}


@pytest.fixture
def db_path(database: Path | str) -> Path | str:
    """Live updates on both backends (tests/conftest.py: `database`): the events come from the
    service, whatever store it runs on."""
    return database


@asynccontextmanager
async def shared_server(db_path: Path) -> AsyncIterator[MCPServer[Deps]]:
    """One server whose clients share one database and one set of listeners, like HTTP's."""
    settings = Settings(database=str(db_path), log_level="WARNING")
    async with open_deps(settings) as deps:
        yield build_server(settings, shared=deps)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return dict(result.structured_content or {})


async def start(client: Client, title: str) -> str:
    return str((await call(client, "frs_session", action="start", title=title))["session_id"])


async def say(client: Client, session_id: str | None, *contents: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": c} for c in contents]
    if session_id is None:
        return await call(client, "frs_record", messages=messages)
    return await call(client, "frs_record", messages=messages, session_id=session_id)


class Sentinel:
    """A session the listener follows (its thread only) to know where a change's events end:
    a record into it sends exactly one event the listener asked for."""

    def __init__(self, writer: Client, session_id: str) -> None:
        self.writer = writer
        self.session_id = session_id
        self.uri = uris(session_id)["thread"]

    async def heard(self, sub: AsyncIterable[ServerEvent]) -> set[ServerEvent]:
        """Everything `sub` heard before the sentinel's next change (a set: the client
        merges an event with an equal one it has not handed out yet)."""
        await say(self.writer, self.session_id, "sentinel")
        heard: set[ServerEvent] = set()
        with anyio.fail_after(WAIT):
            async for event in sub:
                if event == ResourceUpdated(uri=self.uri):
                    return heard
                heard.add(event)
        raise AssertionError(f"the stream ended; heard {heard}")


class Inbox:
    """The updates a 2025-era client is told (its `message_handler`), as events: in the
    order they came, none merged."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[ServerEvent](1000)

    async def handle(self, message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            await self._send.send(ResourceUpdated(uri=str(message.params.uri)))
        elif isinstance(message, ResourceListChangedNotification):
            await self._send.send(ResourcesListChanged())

    def __aiter__(self) -> AsyncIterator[ServerEvent]:
        return self._receive.__aiter__()

    def __enter__(self) -> Inbox:
        return self

    def __exit__(self, *_: object) -> None:
        self._send.close()
        self._receive.close()


async def subscribe(client: Client, sentinel: Sentinel, *session_ids: str) -> None:
    """2025's resources/subscribe for every resource of the sessions and the sentinel's
    thread (the client warns that 2026-07-28 removed the method)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        for uri in [*(u for s in session_ids for u in uris(s).values()), sentinel.uri]:
            await client.subscribe_resource(uri)


def follow(client: Client, sentinel: Sentinel, *session_ids: str, **asked: Any) -> Any:
    """A listen stream on every resource of the sessions and the resource list's changes;
    `asked` adds to or overrides the filter."""
    followed = [u for s in session_ids for u in uris(s).values()]
    options: dict[str, Any] = {
        "resources_list_changed": True,
        "resource_subscriptions": [*followed, sentinel.uri],
        **asked,
    }
    return client.listen(**options)


class TestWhatIsAdvertised:
    async def test_2026_advertises_resource_updates_and_list_changes_not_tool_or_prompt_changes(
        self, db_path: Path
    ) -> None:
        async with shared_server(db_path) as server, Client(server) as client:
            assert client.protocol_version == "2026-07-28"
            caps = client.server_capabilities
            assert caps.resources is not None
            assert caps.resources.subscribe is True
            assert caps.resources.list_changed is True
            # The tools and prompts never change while the server runs: nothing to deliver.
            assert caps.tools is not None
            assert caps.tools.list_changed is False
            assert caps.prompts is not None
            assert caps.prompts.list_changed is False

    async def test_2025_advertises_resource_subscriptions_and_list_changes_only(
        self, db_path: Path
    ) -> None:
        async with shared_server(db_path) as server, Client(server, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            caps = client.server_capabilities
            assert caps.resources is not None
            assert caps.resources.subscribe is True
            assert caps.resources.list_changed is True
            assert caps.tools is not None
            assert not caps.tools.list_changed
            assert caps.prompts is not None
            assert not caps.prompts.list_changed


class TestTwoClients:
    async def test_each_change_is_told_for_exactly_the_resources_it_changed(
        self, db_path: Path
    ) -> None:
        async with shared_server(db_path) as server, Client(server) as a, Client(server) as b:
            sid = await start(b, "watched")
            other = await start(b, "not watched")
            sentinel = Sentinel(b, await start(b, "sentinel"))
            async with follow(a, sentinel, sid) as sub:
                assert await sentinel.heard(sub) == set()

                await say(b, sid, "one", "two", "three")
                recorded = updated(sid, "thread", "messages", "anthropic")
                assert await sentinel.heard(sub) == recorded

                squash = {"from": 1, "to": 2, "summary": "s", "session_id": sid}
                await call(b, "frs_compress_range", **squash)
                squashed = updated(sid, "thread", "messages", "anthropic", "squashes")
                assert await sentinel.heard(sub) == squashed

                await call(b, "frs_restore", alias="SQ.1", session_id=sid)
                assert await sentinel.heard(sub) == squashed

                await call(b, "frs_compress_last", count=1, summary="s", session_id=sid)
                assert await sentinel.heard(sub) == squashed

                await call(b, "frs_plan", checkpoint="here", session_id=sid)
                assert await sentinel.heard(sub) == updated(sid, "thread")

                await call(b, "frs_focus", action="open", goal="g", session_id=sid)
                assert await sentinel.heard(sub) == updated(sid, "thread")
                await say(b, sid, "inside")
                assert await sentinel.heard(sub) == recorded
                await call(b, "frs_focus", action="close", summary="done", session_id=sid)
                assert await sentinel.heard(sub) == squashed

                added = await b.call_tool(
                    "frs_source", {"action": "add", "alias": "D.x", "text": "t", "session_id": sid}
                )
                assert not added.is_error, added.content
                assert await sentinel.heard(sub) == updated(sid, "thread")

                await say(b, other, "elsewhere")  # a session this listener does not follow
                assert await sentinel.heard(sub) == set()

                await start(b, "new")
                assert await sentinel.heard(sub) == {ResourcesListChanged()}

    async def test_reads_refusals_and_get_or_create_hits_tell_nobody(self, db_path: Path) -> None:
        async with shared_server(db_path) as server, Client(server) as a, Client(server) as b:
            sid = await start(b, "watched")
            keyed = {"action": "start", "interface": "chat", "conversation": "c1"}
            await call(b, "frs_session", **keyed)
            sentinel = Sentinel(b, await start(b, "sentinel"))
            async with follow(a, sentinel, sid) as sub:
                await b.call_tool("frs_view_thread", {"session_id": sid})
                await b.read_resource(uris(sid)["thread"])
                await b.read_resource(SESSIONS)
                stale = await b.call_tool(
                    "frs_record",
                    {
                        "session_id": sid,
                        "messages": [{"role": "user", "content": "x"}],
                        "expected_revision": 99,
                    },
                )
                assert stale.is_error
                await call(b, "frs_session", action="use", session_id=sid)
                found = await call(b, "frs_session", **keyed)  # get-or-create finds it
                assert found["created"] is False
                assert await sentinel.heard(sub) == set()

    async def test_the_first_record_of_a_client_without_a_session_says_the_list_changed(
        self, db_path: Path
    ) -> None:
        async with shared_server(db_path) as server, Client(server) as a, Client(server) as b:
            sentinel = Sentinel(b, await start(b, "sentinel"))
            fresh_client = Client(server, client_info=Implementation(name="fresh", version="0"))
            async with fresh_client as fresh, follow(a, sentinel) as sub:
                created = (await say(fresh, None, "hello"))["session_id"]
                assert await sentinel.heard(sub) == {ResourcesListChanged()}
                await say(fresh, None, "again")  # its session exists now
                assert await sentinel.heard(sub) == set()
                await call(fresh, "frs_plan", checkpoint="c", session_id=created)
                assert await sentinel.heard(sub) == set()

    async def test_every_change_updates_the_session_list_for_those_who_follow_it(
        self, db_path: Path
    ) -> None:
        async with shared_server(db_path) as server, Client(server) as a, Client(server) as b:
            sid = await start(b, "any")
            async with a.listen(resource_subscriptions=[SESSIONS]) as sub:
                await say(b, sid, "one")
                with anyio.fail_after(WAIT):
                    assert await anext(sub) == ResourceUpdated(uri=SESSIONS)

    async def test_a_listener_that_did_not_ask_for_list_changes_does_not_get_them(
        self, db_path: Path
    ) -> None:
        async with shared_server(db_path) as server, Client(server) as a, Client(server) as b:
            sentinel = Sentinel(b, await start(b, "sentinel"))
            async with follow(a, sentinel, resources_list_changed=False) as sub:
                await start(b, "new")
                assert await sentinel.heard(sub) == set()


class TestTwoClientsIn2025:
    async def test_a_subscriber_is_told_each_change_of_what_it_subscribed_to(
        self, db_path: Path
    ) -> None:
        with Inbox() as inbox:
            async with (
                shared_server(db_path) as server,
                Client(server) as b,
                Client(server, mode="legacy", message_handler=inbox.handle) as a,
            ):
                sid = await start(b, "watched")
                other = await start(b, "not watched")
                sentinel = Sentinel(b, await start(b, "sentinel"))
                await subscribe(a, sentinel, sid)
                # The three sessions just started: the list changed.
                assert await sentinel.heard(inbox) == {ResourcesListChanged()}

                await say(b, sid, "one", "two", "three")
                assert await sentinel.heard(inbox) == updated(
                    sid, "thread", "messages", "anthropic"
                )
                await call(b, "frs_compress_last", count=2, summary="s", session_id=sid)
                assert await sentinel.heard(inbox) == updated(
                    sid, "thread", "messages", "anthropic", "squashes"
                )
                await call(b, "frs_plan", checkpoint="c", session_id=sid)
                assert await sentinel.heard(inbox) == updated(sid, "thread")
                await say(b, other, "elsewhere")
                assert await sentinel.heard(inbox) == set()
                await start(b, "new")
                assert await sentinel.heard(inbox) == {ResourcesListChanged()}

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await a.unsubscribe_resource(uris(sid)["thread"])
                await say(b, sid, "four")
                assert await sentinel.heard(inbox) == updated(sid, "messages", "anthropic")


class TestTheWriterDoesNotWait:
    async def test_a_subscriber_that_takes_no_update_holds_no_write_up_and_is_told_after(
        self, db_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The fan-out runs in a task of its own: a 2025 subscriber whose connection takes no
        update (a client that stopped reading; here its connection's send waits on a gate)
        once held every write of its tenant until it was dropped; now the writes return while
        it is stuck, and once it takes updates again it is told what changed meanwhile."""
        monkeypatch.setattr(events, "SEND_TIMEOUT", 3600.0)  # stuck for the whole test
        settings = Settings(database=str(db_path), log_level="WARNING")
        entered, gate = anyio.Event(), anyio.Event()
        with Inbox() as inbox:
            async with (
                open_deps(settings) as deps,
                Client(build_server(settings, shared=deps)) as b,
                Client(
                    build_server(settings, shared=deps), mode="legacy", message_handler=inbox.handle
                ) as a,
            ):
                sid = await start(b, "watched")
                sentinel = Sentinel(b, await start(b, "sentinel"))
                await subscribe(a, sentinel, sid)
                [connection] = list(deps.events.subscribers(LOCAL_TENANT)._followed)
                send = connection.send_resource_updated

                async def stuck(uri: str) -> None:
                    entered.set()
                    await gate.wait()
                    await send(uri)

                monkeypatch.setattr(connection, "send_resource_updated", stuck)
                with anyio.fail_after(WAIT):
                    await say(b, sid, "first")
                    await entered.wait()
                    for n in range(3):
                        await say(b, sid, f"while stuck {n}")
                assert not gate.is_set()
                monkeypatch.setattr(connection, "send_resource_updated", send)
                gate.set()
                heard = await sentinel.heard(inbox)
        assert updated(sid, "thread", "messages", "anthropic") <= heard


class TestBursts:
    async def test_a_burst_of_writes_during_a_streams_pause_is_sent_as_one_frame(
        self, db_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A listen stream sends what waits, then pauses (`PACE`), and what comes meanwhile
        merges: 250 streams each sent a frame for every write took the event loop from the
        writers. Here the pause lasts until the streams are closed: the first write is sent
        at once, ten writes during the pause leave one frame for the thread, sent at the
        close, and the stream then ends."""
        monkeypatch.setattr(events, "PACE", 3600.0)
        sent: list[str] = []
        to_frame = subscriptions.event_to_notification

        def counted(event: ServerEvent, meta: dict[str, Any]) -> Any:
            sent.append(getattr(event, "uri", ""))
            return to_frame(event, meta)

        monkeypatch.setattr(events, "event_to_notification", counted)
        settings = Settings(database=str(db_path), log_level="WARNING")
        async with open_deps(settings) as deps:
            server = build_server(settings, shared=deps)
            async with Client(server) as writer, Client(server) as listener:
                sid = await start(writer, "burst")
                thread = uris(sid)["thread"]
                async with listener.listen(resource_subscriptions=[thread]) as sub:
                    await say(writer, sid, "first")
                    with anyio.fail_after(WAIT):
                        first = await anext(aiter(sub))
                    for n in range(10):
                        await say(writer, sid, f"burst {n}")
                    [outbox] = deps.events.handler(LOCAL_TENANT)._streams
                    for _ in range(int(WAIT * 100)):  # the fan-out task hands it over
                        if outbox:
                            break
                        await anyio.sleep(0.01)
                    deps.events.close()  # ends the pause: what waits is sent, then the result
                    with anyio.fail_after(WAIT):
                        rest = [event async for event in sub]
        assert first == ResourceUpdated(uri=thread)
        assert rest == [ResourceUpdated(uri=thread)]
        assert sent == [thread, thread]  # two frames for eleven writes


class TestAcrossInstances:
    """Two instances on one PostgreSQL database, in one process (each its own `open_deps`: its
    own pool, listeners and notices): a change made through B is told to A's listeners by the
    same fan-out as A's own, merged as A's own are. Two real processes behind each other are
    `test_live_instances.py`."""

    async def test_a_burst_made_through_another_instance_merges_as_one_made_here(
        self, pg_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(events, "PACE", 3600.0)
        settings = Settings(database=pg_cluster.create_database(), log_level="WARNING")
        async with (
            open_deps(settings) as a,
            open_deps(settings) as b,
            Client(build_server(settings, shared=b)) as writer,
            Client(build_server(settings, shared=a)) as listener,
        ):
            sid = await start(writer, "burst")
            thread = uris(sid)["thread"]
            async with listener.listen(resource_subscriptions=[thread]) as sub:
                await say(writer, sid, "first")
                with anyio.fail_after(WAIT):
                    first = await anext(aiter(sub))
                for n in range(10):
                    await say(writer, sid, f"burst {n}")
                await say(writer, sid, "last")
                [outbox] = a.events.handler(LOCAL_TENANT)._streams
                for _ in range(int(WAIT * 100)):  # B's notices reach A's fan-out
                    if outbox:
                        break
                    await anyio.sleep(0.01)
                a.events.close()  # ends the pause: what waits is sent, then the result
                with anyio.fail_after(WAIT):
                    rest = [event async for event in sub]
        assert first == ResourceUpdated(uri=thread)
        assert rest == [ResourceUpdated(uri=thread)]  # eleven writes, one frame

    def test_a_notice_is_told_here_only_if_another_instance_sent_it(self) -> None:
        here, there = TenantEvents(), TenantEvents()
        told: list[tuple[str, list[ServerEvent]]] = []
        here._changes = _Told(told)  # type: ignore[assignment]
        here.handler("alice")  # alice listens here; bob does not
        change: list[ServerEvent] = [ResourceUpdated(uri="frs://sessions/s1/thread")]
        change.append(ResourcesListChanged())
        mine, theirs = here._notice("alice", change), there._notice("alice", change)
        assert mine is not None
        assert theirs is not None
        here.heard(mine)
        here.heard(there._notice("bob", change) or "")
        for junk in ("", "{}", "[1]", '{"origin": 1}', "not json"):
            here.heard(junk)
        assert told == []
        here.heard(theirs)
        assert told == [("alice", change)]

    def test_a_change_too_long_for_a_notice_is_told_here_only(self) -> None:
        uri = "frs://sessions/" + "x" * 8_000 + "/thread"
        assert TenantEvents()._notice("alice", [ResourceUpdated(uri=uri)]) is None


class _Told:
    """Stands for the fan-out's queue: what is handed to it."""

    def __init__(self, told: list[tuple[str, list[ServerEvent]]]) -> None:
        self.told = told

    def send_nowait(self, change: tuple[str, list[ServerEvent]]) -> None:
        self.told.append(change)


class TestLimits:
    async def test_a_listen_over_the_tenants_limit_is_refused_saying_what_to_do(
        self, db_path: Path
    ) -> None:
        settings = Settings(database=str(db_path), log_level="WARNING")
        async with open_deps(settings) as deps:
            server = build_server(settings, shared=replace(deps, events=TenantEvents(1)))
            async with (
                Client(server) as a,
                Client(server) as b,
                a.listen(resources_list_changed=True),
            ):
                with pytest.raises(MCPError) as refused:
                    await refused_listen(b)
        assert refused.value.message == (
            "Too many open listen streams: your tenant has the most it may have open at once "
            "(1). Close one you no longer read (or follow several resources in one listen), "
            "then listen again."
        )

    async def test_a_2025_subscriber_that_goes_away_is_forgotten(self, db_path: Path) -> None:
        settings = Settings(database=str(db_path), log_level="WARNING")
        async with open_deps(settings) as deps:
            server = build_server(settings, shared=deps)
            subscribers = deps.events.subscribers(LOCAL_TENANT)
            async with Client(server, mode="legacy") as client:
                sentinel = Sentinel(client, await start(client, "s"))
                await subscribe(client, sentinel)
                assert len(subscribers) == 1
            gc.collect()
            assert len(subscribers) == 0


async def refused_listen(client: Client) -> None:
    async with client.listen(resources_list_changed=True):
        raise AssertionError("a listen over the limit was accepted")
