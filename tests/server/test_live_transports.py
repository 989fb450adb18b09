"""Live updates over real transports: a real `frs-mcp` process, clients of two tenants.

Over Streamable HTTP and SSE (one process, `--tokens` with two tenants), in both protocol eras,
a client follows a session while another client of its tenant changes it: it hears exactly
that change; a client of the other tenant, following the same session id, hears nothing (a
stream is ordered, so "nothing" is what came before its own tenant's sentinel). Over stdio one
process serves one client, so the client follows its own changes.
"""

from __future__ import annotations

import shutil
import signal
import sys
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent

from tests.clients.frs_process import FrsProcess, frs_http
from tests.server.test_live import (
    WAIT,
    Inbox,
    Sentinel,
    follow,
    say,
    start,
    subscribe,
    updated,
    uris,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"
SECRETS = {"alice": "alice-secret-0123456789", "bob": "bob-secret-0123456789ab"}


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrsProcess]:
    """Both HTTP transports on one port, two tenants."""
    home = tmp_path_factory.mktemp("live")
    tokens = home / "tokens"
    tokens.write_text("".join(f"{name} {secret}\n" for name, secret in SECRETS.items()))
    tokens.chmod(0o600)
    args = ("--transport", "both-http", "--tokens", str(tokens))
    with frs_http(home / "frs.db", *args) as server:
        yield server


@asynccontextmanager
async def connect(
    server: FrsProcess, transport: str, tenant: str, **options: Any
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {SECRETS[tenant]}"}
    if transport == "sse":
        async with Client(sse_client(server.sse_url, headers=headers), **options) as client:
            yield client
        return
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(server.mcp_url, http_client=http), **options) as client,
    ):
        yield client


@asynccontextmanager
async def listening(
    server: FrsProcess, transport: str, tenant: str, era: str, sentinel: Sentinel, *sids: str
) -> AsyncIterator[AsyncIterable[ServerEvent]]:
    """A client of `tenant` following the sessions in `era`: a listen stream (2026), or
    resources/subscribe and what its connection is told (2025)."""
    if era == "2026-07-28":
        async with (
            connect(server, transport, tenant) as client,
            follow(client, sentinel, *sids) as sub,
        ):
            assert client.protocol_version == era
            yield sub
        return
    with Inbox() as inbox:
        options = {"mode": "legacy", "message_handler": inbox.handle}
        async with connect(server, transport, tenant, **options) as client:
            assert client.protocol_version == era
            await subscribe(client, sentinel, *sids)
            yield inbox


OTHER = {"streamable-http": "sse", "sse": "streamable-http"}


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_client_hears_its_tenants_changes_and_nothing_of_another_tenants(
    tenants: FrsProcess, transport: str, era: str
) -> None:
    writes = OTHER[transport]  # the writer uses the other transport: one process, one bus
    new_session = {ResourcesListChanged()}
    async with connect(tenants, writes, "alice") as alice, connect(tenants, writes, "bob") as bob:
        sid = await start(alice, "alice's")
        alice_sentinel = Sentinel(alice, await start(alice, "alice's sentinel"))
        bob_sentinel = Sentinel(bob, await start(bob, "bob's sentinel"))
        async with (
            listening(tenants, transport, "alice", era, alice_sentinel, sid) as heard_by_alice,
            # Bob follows alice's session id (as if he had guessed it).
            listening(tenants, transport, "bob", era, bob_sentinel, sid) as heard_by_bob,
        ):
            await say(alice, sid, "one", "two")
            recorded = updated(sid, "thread", "messages", "anthropic")
            assert await alice_sentinel.heard(heard_by_alice) == recorded
            await start(alice, "alice's new")
            assert await alice_sentinel.heard(heard_by_alice) == new_session

            assert await bob_sentinel.heard(heard_by_bob) == set()

            await start(bob, "bob's new")  # bob's own change reaches bob, not alice
            assert await bob_sentinel.heard(heard_by_bob) == new_session
            assert await alice_sentinel.heard(heard_by_alice) == set()


async def test_over_stdio_a_listener_hears_its_own_changes(tmp_path: Path) -> None:
    server = StdioServerParameters(command=FRS_MCP, args=["--db", str(tmp_path / "frs.db")])
    async with Client(server) as client:
        assert client.protocol_version == "2026-07-28"
        sid = await start(client, "mine")
        thread = uris(sid)["thread"]
        async with client.listen(
            resources_list_changed=True, resource_subscriptions=[thread]
        ) as sub:
            await say(client, sid, "hello")
            with anyio.fail_after(WAIT):
                assert await anext(sub) == ResourceUpdated(uri=thread)
            await start(client, "another")
            with anyio.fail_after(WAIT):
                assert await anext(sub) == ResourcesListChanged()


async def test_over_stdio_a_2025_subscriber_is_told_its_own_changes(tmp_path: Path) -> None:
    server = StdioServerParameters(command=FRS_MCP, args=["--db", str(tmp_path / "frs.db")])
    with Inbox() as inbox:
        async with Client(server, mode="legacy", message_handler=inbox.handle) as client:
            assert client.protocol_version == "2025-11-25"
            sid = await start(client, "mine")
            sentinel = Sentinel(client, await start(client, "sentinel"))
            await subscribe(client, sentinel, sid)
            assert await sentinel.heard(inbox) == {ResourcesListChanged()}  # the two starts
            await say(client, sid, "hello")
            recorded = updated(sid, "thread", "messages", "anthropic")
            assert await sentinel.heard(inbox) == recorded


async def test_a_shutdown_ends_open_listen_streams_gracefully(tmp_path: Path) -> None:
    """A listen stream is a request that never ends by itself: SIGTERM closes it as the spec's
    graceful close (not a lost stream) instead of waiting out the shutdown timeout."""
    with frs_http(tmp_path / "frs.db", "--transport", "streamable-http") as server:
        async with Client(server.mcp_url) as client:
            async with client.listen(resources_list_changed=True) as sub:
                server.proc.send_signal(signal.SIGTERM)
                with anyio.fail_after(WAIT):
                    heard = [event async for event in sub]  # SubscriptionLost if dropped
                assert heard == []
            assert await anyio.to_thread.run_sync(server.proc.wait) == 0
