"""Live updates over real transports: a real `frs-mcp` process, clients of two tenants.

Over Streamable HTTP and SSE (one process, `--tokens` with two tenants), a client listens while
another client of its tenant changes a session: it hears exactly that change; a client of the
other tenant, following the same session id, hears nothing (a stream is ordered, so "nothing"
is what came before its own tenant's sentinel). Over stdio one process serves one client, so
the client listens to its own changes.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from tests.clients.frs_process import FrsProcess, frs_http
from tests.server.test_live import WAIT, Sentinel, follow, say, start, updated, uris

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
async def connect(server: FrsProcess, transport: str, tenant: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {SECRETS[tenant]}"}
    if transport == "sse":
        async with Client(sse_client(server.sse_url, headers=headers)) as client:
            yield client
        return
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(server.mcp_url, http_client=http)) as client,
    ):
        yield client


OTHER = {"streamable-http": "sse", "sse": "streamable-http"}


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_listener_hears_its_tenants_changes_and_nothing_of_another_tenants(
    tenants: FrsProcess, transport: str
) -> None:
    writes = OTHER[transport]  # the writer uses the other transport: one process, one bus
    async with (
        connect(tenants, transport, "alice") as alice_listens,
        connect(tenants, writes, "alice") as alice,
        connect(tenants, transport, "bob") as bob_listens,
        connect(tenants, writes, "bob") as bob,
    ):
        assert alice_listens.protocol_version == "2026-07-28"
        sid = await start(alice, "alice's")
        alice_sentinel = Sentinel(alice, await start(alice, "alice's sentinel"))
        bob_sentinel = Sentinel(bob, await start(bob, "bob's sentinel"))
        async with (
            follow(alice_listens, alice_sentinel, sid) as heard_by_alice,
            # Bob follows alice's session id (as if he had guessed it) and the list's changes.
            follow(bob_listens, bob_sentinel, sid) as heard_by_bob,
        ):
            await say(alice, sid, "one", "two")
            recorded = updated(sid, "thread", "messages", "anthropic")
            assert await alice_sentinel.heard(heard_by_alice) == recorded
            await start(alice, "alice's new")
            assert await alice_sentinel.heard(heard_by_alice) == {ResourcesListChanged()}

            assert await bob_sentinel.heard(heard_by_bob) == set()

            await start(bob, "bob's new")  # bob's own change reaches bob, not alice
            assert await bob_sentinel.heard(heard_by_bob) == {ResourcesListChanged()}
            assert await alice_sentinel.heard(heard_by_alice) == set()


async def test_over_stdio_a_client_hears_its_own_changes(tmp_path: Path) -> None:
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
