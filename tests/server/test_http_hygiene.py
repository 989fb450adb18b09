"""HTTP session hygiene and slow clients (issue 13): clients that went away without closing do
not lock new ones out, a refusal that remains says which request it refuses, and idle or slow
sockets cannot hold the server's connections. A real `frs-mcp` process on 127.0.0.1, spoken
to with raw HTTP, since the status codes and the sockets are the point.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream

from tests.clients.frs_process import FrsProcess, frs_http

pytestmark = pytest.mark.slow

POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LEGACY = {"mcp-protocol-version": "2025-11-25"}


def initialize(request_id: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def ping(request_id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


async def open_session(http: httpx2.AsyncClient, server: FrsProcess) -> str:
    opened = await http.post(server.mcp_url, json=initialize(), headers=POST)
    assert opened.status_code == 200, opened.text
    sid = str(opened.headers["mcp-session-id"])
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(server.mcp_url, json=done, headers=on(sid))).status_code == 202
    return sid


def on(sid: str) -> dict[str, str]:
    return {**POST, **LEGACY, "mcp-session-id": sid}


async def pinged(http: httpx2.AsyncClient, server: FrsProcess, sid: str) -> int:
    return (await http.post(server.mcp_url, json=ping(), headers=on(sid))).status_code


@asynccontextmanager
async def busy(http: httpx2.AsyncClient, server: FrsProcess, sid: str) -> AsyncIterator[None]:
    """The session holds its GET stream open: a request in flight, so it is not idle."""
    headers = {**LEGACY, "Accept": "text/event-stream", "mcp-session-id": sid}
    async with http.stream("GET", server.mcp_url, headers=headers) as stream:
        assert stream.status_code == 200
        yield


class TestSessionLimit:
    async def test_at_the_limit_a_new_client_gets_in_and_the_least_recently_used_idle_session_goes(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "streamable-http", "--max-sessions", "2")
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with httpx2.AsyncClient(timeout=30) as http:
                oldest = await open_session(http, server)
                used = await open_session(http, server)
                assert await pinged(http, server, oldest) == 200
                assert await pinged(http, server, used) == 200  # now oldest is the least recent
                newcomer = await http.post(server.mcp_url, json=initialize(), headers=POST)
                statuses = [await pinged(http, server, sid) for sid in (oldest, used)]
        assert newcomer.status_code == 200, newcomer.text
        assert statuses == [404, 200]
        assert "evicted the least recently used idle session" in server.stderr

    async def test_a_tenant_at_the_limit_evicts_its_own_idle_session_before_anothers(
        self, tmp_path: Path
    ) -> None:
        tokens = tmp_path / "tokens"
        tokens.write_text("alice alice-secret-0123456789\nbob bob-secret-0123456789ab\n")
        tokens.chmod(0o600)
        args = ("--transport", "streamable-http", "--max-sessions", "2", "--tokens", str(tokens))
        alice = {"Authorization": "Bearer alice-secret-0123456789"}
        bob = {"Authorization": "Bearer bob-secret-0123456789ab"}
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with (
                httpx2.AsyncClient(timeout=30, headers=alice) as as_alice,
                httpx2.AsyncClient(timeout=30, headers=bob) as as_bob,
            ):
                bobs = await open_session(as_bob, server)
                hers = await open_session(as_alice, server)
                assert await pinged(as_alice, server, hers) == 200  # bob's is the least recent
                another = await as_alice.post(server.mcp_url, json=initialize(), headers=POST)
                after = (await pinged(as_alice, server, hers), await pinged(as_bob, server, bobs))
        assert another.status_code == 200, another.text
        assert after == (404, 200)  # alice made room with her own idle session, not bob's

    async def test_a_busy_session_is_never_evicted_and_the_refusal_echoes_the_requests_id(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "streamable-http", "--max-sessions", "1")
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with httpx2.AsyncClient(timeout=30) as http:
                held = await open_session(http, server)
                async with busy(http, server, held):
                    refused = await http.post(server.mcp_url, json=initialize(41), headers=POST)
                    named = await http.post(server.mcp_url, json=initialize("x-7"), headers=POST)
                    still = await pinged(http, server, held)
        assert refused.status_code == 503
        assert refused.json()["id"] == 41
        assert named.json()["id"] == "x-7"
        message = refused.json()["error"]["message"]
        assert "limit of 1" in message
        assert "--max-sessions" in message
        assert still == 200

    async def test_a_delete_frees_the_slot_at_once(self, tmp_path: Path) -> None:
        args = ("--transport", "streamable-http", "--max-sessions", "1")
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with httpx2.AsyncClient(timeout=30) as http:
                first = await open_session(http, server)
                async with busy(http, server, first):
                    ended = await http.delete(server.mcp_url, headers=on(first))
                    second = await http.post(server.mcp_url, json=initialize(), headers=POST)
        assert ended.status_code == 200
        assert second.status_code == 200, second.text


async def until_closed(sock: SocketStream) -> bytes:
    """Everything the server sends before it closes the socket (a bound: 30 s)."""
    got = b""
    async with sock:
        with anyio.fail_after(30):
            try:
                while True:
                    got += await sock.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return got


async def connected(server: FrsProcess) -> SocketStream:
    return await anyio.connect_tcp("127.0.0.1", server.port)


class TestSlowAndIdleSockets:
    async def test_thirty_idle_sockets_at_the_cap_make_room_and_a_real_client_gets_in(
        self, tmp_path: Path
    ) -> None:
        """The header timeout is long here: the client gets in because the oldest sockets that
        never sent a request are closed for it, not because they timed out."""
        args = ("--transport", "streamable-http", "--max-connections", "8")
        with frs_http(tmp_path / "frs.db", *args, "--header-timeout", "120") as server:
            idle = [await connected(server) for _ in range(30)]
            async with httpx2.AsyncClient(timeout=30) as http:
                served = await http.post(server.mcp_url, json=initialize(), headers=POST)
            closed = [await until_closed(sock) for sock in idle[:22]]
            for sock in idle[22:]:
                await sock.aclose()
        assert served.status_code == 200
        assert all(a.startswith(b"HTTP/1.1 503 ") for a in closed)
        assert all(b"at its limit of 8 connections (--max-connections)" in a for a in closed)

    async def test_at_the_cap_with_every_socket_in_use_a_new_one_gets_503(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "sse", "--max-connections", "2")
        with frs_http(tmp_path / "frs.db", *args) as server:
            async with (
                httpx2.AsyncClient(timeout=30) as one,
                httpx2.AsyncClient(timeout=30) as two,
                one.stream("GET", server.sse_url) as first,
                two.stream("GET", server.sse_url) as second,
            ):
                assert (first.status_code, second.status_code) == (200, 200)
                answer = await until_closed(await connected(server))
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert b"the limit of 2 is reached (--max-connections)" in answer

    async def test_an_idle_socket_gets_408_naming_the_header_timeout(self, tmp_path: Path) -> None:
        args = ("--transport", "streamable-http", "--header-timeout", "0.5")
        with frs_http(tmp_path / "frs.db", *args) as server:
            answer = await until_closed(await connected(server))
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"within 0.5 s (--header-timeout)" in answer

    async def test_headers_sent_a_byte_at_a_time_get_408_naming_the_limit(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "streamable-http", "--header-timeout", "0.5")
        with frs_http(tmp_path / "frs.db", *args) as server:
            sock = await connected(server)
            await sock.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            answer = await until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"headers did not arrive within 0.5 s (--header-timeout)" in answer

    async def test_a_body_shorter_than_its_content_length_gets_408_and_others_are_served(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "streamable-http", "--body-timeout", "0.5")
        with frs_http(tmp_path / "frs.db", *args) as server:
            sock = await connected(server)
            host = f"127.0.0.1:{server.port}".encode()
            await sock.send(
                b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\n"
                b"Content-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Content-Length: 400\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 1,'
            )
            async with httpx2.AsyncClient(timeout=30) as http:
                meanwhile = await http.post(server.mcp_url, json=initialize(), headers=POST)
            answer = await until_closed(sock)
        assert meanwhile.status_code == 200
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"within 0.5 s of its headers (--body-timeout)" in answer
        assert b"Content-Length" in answer

    async def test_a_socket_idle_between_requests_is_closed(self, tmp_path: Path) -> None:
        args = ("--transport", "streamable-http", "--keep-alive-timeout", "0.5")
        with frs_http(tmp_path / "frs.db", *args) as server:
            sock = await connected(server)
            host = f"127.0.0.1:{server.port}".encode()
            await sock.send(b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
            answer = await until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert b'"status": "ok"' in answer
