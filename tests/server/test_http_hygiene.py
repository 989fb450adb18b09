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

import httpx2
import pytest

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
