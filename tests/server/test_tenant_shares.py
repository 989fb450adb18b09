"""One tenant cannot lock the others out (issue 23): each holds at most its share of the open
requests (streams of every kind included), of the Streamable HTTP sessions and of the SSE
streams (`server.http.shares`), of listen streams (half its open requests), and `/health` answers
while a tenant holds all of its share.

A real `frs-mcp --tokens FILE` process on 127.0.0.1 with small caps, so that the attack takes a
few sockets: alice does what the attacker did, bob and a probe come after her.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.clients.frs_process import FrsProcess, frs_http
from tests.server.test_http_hygiene import LEGACY, POST, initialize, on, open_session, pinged
from tests.server.test_live import start

pytestmark = pytest.mark.slow

ALICE = "alice-secret-0123456789"
BOB = "bob-secret-0123456789ab"


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"alice {ALICE}\nbob {BOB}\n")
    path.chmod(0o600)
    return path


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def held_upload(server: FrsProcess) -> tuple[SocketStream, bytes]:
    """A request of alice's whose body never comes: it holds its socket and, once the server
    reads, is told `100 Continue`; a refused one is told 503 at once. Its first line, read
    until one of the two arrives (no timeout is waited out)."""
    sock = await anyio.connect_tcp("127.0.0.1", server.port)
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Authorization: Bearer {ALICE}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\n"
        "Content-Length: 200\r\n\r\n"
    )
    await sock.send(request.encode())
    got = b""
    with anyio.fail_after(30):
        while b"\r\n\r\n" not in got:
            got += await sock.receive()
        head, _, body = got.partition(b"\r\n\r\n")
        length = re.search(rb"content-length: (\d+)", head.lower())
        while length and len(body) < int(length[1]):
            body += await sock.receive()
    return sock, head + b"\r\n\r\n" + body


class TestOpenRequests:
    async def test_one_tenants_held_requests_leave_room_for_another_and_for_health(
        self, tmp_path: Path, tokens: Path
    ) -> None:
        """--max-connections 16: an eighth (2) is kept out of every share, each of the two
        tenants may hold 7. Alice opens 16 uploads that never end, as a flood of listen
        streams would hold them; bob still initializes and `/health` answers."""
        args = ("--transport", "streamable-http", "--tokens", str(tokens))
        with frs_http(tmp_path / "frs.db", *args, "--max-connections", "16") as server:
            async with AsyncExitStack() as stack:
                firsts = []
                for _ in range(16):
                    sock, first = await held_upload(server)
                    stack.push_async_callback(sock.aclose)
                    firsts.append(first)
                async with httpx2.AsyncClient(timeout=30) as http:
                    bobs = await http.post(
                        server.mcp_url, json=initialize(), headers={**POST, **auth(BOB)}
                    )
                    health = await http.get(server.health_url)
                    hers = await http.post(
                        server.mcp_url, json=initialize(), headers={**POST, **auth(ALICE)}
                    )
        held = [f for f in firsts if f.startswith(b"HTTP/1.1 100")]
        refused = [f for f in firsts if f.startswith(b"HTTP/1.1 503")]
        assert (len(held), len(refused)) == (7, 9), server.stderr
        assert all(b"each tenant may hold 7 at once" in f for f in refused)
        assert all(b"--max-connections 16" in f for f in refused)
        assert bobs.status_code == 200, bobs.text
        assert health.status_code == 200
        assert hers.status_code == 503  # her own share is used up, by her alone


class TestSessions:
    async def test_one_tenants_busy_sessions_neither_fill_the_limit_nor_evict_anothers(
        self, tmp_path: Path, tokens: Path
    ) -> None:
        """--max-sessions 4, a share of 2 each. Bob's session sits idle; alice opens sessions
        and holds each one's GET stream. Once she holds 2, her next is refused, naming her
        share, and bob's idle session lives on; bob opens another."""
        args = ("--transport", "streamable-http", "--tokens", str(tokens), "--max-sessions", "4")
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with (
                httpx2.AsyncClient(timeout=30, headers=auth(ALICE)) as as_alice,
                httpx2.AsyncClient(timeout=30, headers=auth(BOB)) as as_bob,
                AsyncExitStack() as streams,
            ):
                bobs = await open_session(as_bob, server)
                tries = []
                for _ in range(4):
                    opened = await as_alice.post(server.mcp_url, json=initialize(7), headers=POST)
                    tries.append(opened)
                    if opened.status_code != 200:
                        continue
                    sid = opened.headers["mcp-session-id"]
                    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                    await as_alice.post(server.mcp_url, json=done, headers=on(sid))
                    get = {**LEGACY, "Accept": "text/event-stream", "mcp-session-id": sid}
                    stream = await streams.enter_async_context(
                        as_alice.stream("GET", server.mcp_url, headers=get)
                    )
                    assert stream.status_code == 200
                still = await pinged(as_bob, server, bobs)
                another = await as_bob.post(server.mcp_url, json=initialize(), headers=POST)
        assert [t.status_code for t in tries] == [200, 200, 503, 503]
        refusal = tries[2].json()
        assert refusal["id"] == 7
        assert (
            "each tenant may hold 2 (its share of --max-sessions 4)"
            in (refusal["error"]["message"])
        )
        assert still == 200  # bob's idle session was not closed for alice
        assert another.status_code == 200, another.text


class TestSseStreams:
    async def test_one_tenants_sse_streams_leave_another_its_share(
        self, tmp_path: Path, tokens: Path
    ) -> None:
        args = ("--transport", "sse", "--tokens", str(tokens), "--max-sse-connections", "4")
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with (
                httpx2.AsyncClient(timeout=30, headers=auth(ALICE)) as as_alice,
                httpx2.AsyncClient(timeout=30, headers=auth(BOB)) as as_bob,
                AsyncExitStack() as streams,
            ):
                statuses = []
                for _ in range(4):
                    opened = await streams.enter_async_context(
                        as_alice.stream("GET", server.sse_url)
                    )
                    statuses.append(opened.status_code)
                    if opened.status_code == 503:
                        refusal = (await opened.aread()).decode()
                bobs = await streams.enter_async_context(as_bob.stream("GET", server.sse_url))
                bob_status = bobs.status_code
        assert statuses == [200, 200, 503, 503]
        assert "your tenant holds its share of 2 of the 4" in refusal
        assert bob_status == 200


class TestListenStreams:
    async def test_a_tenants_listen_streams_are_half_its_share_and_leave_its_calls_room(
        self, tmp_path: Path, tokens: Path
    ) -> None:
        """--max-connections 16, two tenants: 7 open requests each, half of them (3) listen
        streams. Alice's fourth listen is refused naming the share; she still calls tools, and
        bob listens."""
        args = ("--transport", "streamable-http", "--tokens", str(tokens))
        with frs_http(tmp_path / "frs.db", *args, "--max-connections", "16") as server:
            async with (
                connect(server, ALICE) as alice,
                connect(server, BOB) as bob,
                AsyncExitStack() as listens,
            ):
                for _ in range(3):
                    await listens.enter_async_context(alice.listen(resources_list_changed=True))
                with pytest.raises(MCPError) as refused:
                    async with alice.listen(resources_list_changed=True):
                        raise AssertionError("a listen over alice's share was accepted")
                started = await start(alice, "alice still calls")
                async with bob.listen(resources_list_changed=True):
                    bobs = await start(bob, "bob listens")
        assert refused.value.message == (
            "Too many open listen streams: your tenant has the most it may have open at once "
            "(3, half your tenant's share of --max-connections 16). Close one you no longer "
            "read (or follow several resources in one listen), then listen again."
        )
        assert started
        assert bobs


@asynccontextmanager
async def connect(server: FrsProcess, secret: str) -> AsyncIterator[Client]:
    """An MCP client of the tenant whose secret is `secret`, over Streamable HTTP."""
    async with (
        httpx2.AsyncClient(headers=auth(secret), timeout=30) as http,
        Client(streamable_http_client(server.mcp_url, http_client=http)) as client,
    ):
        yield client
