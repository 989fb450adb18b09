"""SSE and Streamable HTTP over real sockets: one shared database, and safe by default.

Every test talks to a real `frs-mcp` process on an ephemeral port of 127.0.0.1: with MCP clients
(Python's SSE and Streamable HTTP clients) or with raw HTTP where the status code is the point.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from server.__main__ import main
from server.http.hosts import HostPolicy, parse_allowed_host
from tests.clients.frs_process import FRS_MCP, TOKEN, FrsProcess, frs_http, server_env
from tests.conftest import Connect

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {TOKEN}"}
BODY_LIMIT = 65_536
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-http-test", "version": "0"},
    },
}
POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrsProcess]:
    """Both transports on one port, with a token and a 64 KiB body limit."""
    db = tmp_path_factory.mktemp("guarded") / "frs.db"
    args = ("--transport", "both-http", "--max-body-bytes", str(BODY_LIMIT))
    with frs_http(db, *args, env=server_env(FRS_TOKEN=TOKEN)) as server:
        yield server


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def start_session(client: Client, title: str) -> str:
    result = await client.call_tool("frs_session", {"action": "start", "title": title})
    found = re.search(r'session (\S+) "', text(result))
    assert found, text(result)
    return found[1]


async def record(client: Client, session_id: str, *contents: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": content} for content in contents]
    result = await client.call_tool("frs_record", {"session_id": session_id, "messages": messages})
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


@asynccontextmanager
async def sse(server: FrsProcess, headers: dict[str, str] = AUTH) -> AsyncIterator[Client]:
    async with Client(sse_client(server.sse_url, headers=headers)) as client:
        yield client


@asynccontextmanager
async def streamable(server: FrsProcess, headers: dict[str, str] = AUTH) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(server.mcp_url, http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def sse_session(
    http: httpx2.AsyncClient, server: FrsProcess, headers: dict[str, str] = AUTH
) -> AsyncIterator[tuple[str, AsyncIterator[str]]]:
    """A raw SSE connection: its message URL (from the first event) and its remaining lines."""
    async with http.stream("GET", server.sse_url, headers=headers) as stream:
        assert stream.status_code == 200
        # Keep this iterator referenced: a discarded one is closed and takes the stream with it.
        lines = stream.aiter_lines()
        async for line in lines:
            if line.startswith("data: "):
                yield server.base + line.removeprefix("data: ").strip(), lines
                return
        raise AssertionError("the SSE stream ended before its endpoint event")


async def next_data(lines: AsyncIterator[str]) -> str:
    async for line in lines:
        if line.startswith("data: "):
            return line.removeprefix("data: ")
    raise AssertionError("the SSE stream ended")


async def initialize(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    return await http.post(url, json=INITIALIZE, headers=POST_HEADERS)


async def squash(
    results: dict[str, CallToolResult], name: str, client: Client, arguments: dict[str, Any]
) -> None:
    summary = f"{arguments['summary']} {name}"
    results[name] = await client.call_tool("frs_compress_range", {**arguments, "summary": summary})


class TestOneDatabaseForEveryConnection:
    async def test_two_sse_clients_and_one_http_client_see_each_others_writes(
        self, guarded: FrsProcess
    ) -> None:
        async with sse(guarded) as a, sse(guarded) as b, streamable(guarded) as c:
            session_id = await start_session(a, "shared by three connections")
            clients = {"sse-a": a, "sse-b": b, "http-c": c}
            for name, client in clients.items():
                await record(client, session_id, f"written by {name}")
            for client in clients.values():
                view = text(await client.call_tool("frs_view_thread", {"session_id": session_id}))
                assert all(f"written by {name}" in view for name in clients), view
            listed = await c.read_resource(f"frs://sessions/{session_id}/thread")
        assert "written by sse-b" in str(listed.contents[0])
        # The store was opened once for the process, not once per SSE connection.
        assert guarded.count(" ready (schema version") == 1, guarded.stderr

    async def test_two_clients_racing_the_same_squash_get_one_success_and_one_stale_revision(
        self, guarded: FrsProcess
    ) -> None:
        async with sse(guarded) as over_sse, streamable(guarded) as over_http:
            session_id = await start_session(over_sse, "race")
            for round_ in range(3):
                contents = (f"round {round_} message {i}: " + "detail " * 20 for i in range(4))
                done = await record(over_http, session_id, *contents)
                revision, first = done["revision"], done["positions"][0]
                results: dict[str, CallToolResult] = {}
                same = {
                    "session_id": session_id,
                    "from": first,
                    "to": first + 2,
                    "summary": f"round {round_} squashed by",
                    "expected_revision": revision,
                }
                async with anyio.create_task_group() as tg:
                    tg.start_soon(squash, results, "sse", over_sse, same)
                    tg.start_soon(squash, results, "http", over_http, same)

                winners = [name for name, result in results.items() if not result.is_error]
                losers = [name for name, result in results.items() if result.is_error]
                assert len(winners) == 1, {k: text(v) for k, v in results.items()}
                assert len(losers) == 1
                refusal = text(results[losers[0]])
                assert "Stale revision" in refusal
                assert f"you expected revision {revision}" in refusal
                view = text(await over_sse.call_tool("frs_view_thread", {"session_id": session_id}))
                assert f"round {round_} squashed by {winners[0]}" in view
                assert f"round {round_} squashed by {losers[0]}" not in view


class TestBearerToken:
    @pytest.mark.parametrize(
        "authorization",
        [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN],
    )
    @pytest.mark.parametrize(("method", "path"), [("POST", "/mcp"), ("GET", "/sse")])
    async def test_a_request_without_the_right_bearer_token_gets_401(
        self, guarded: FrsProcess, authorization: str | None, method: str, path: str
    ) -> None:
        headers = {**POST_HEADERS, **({"Authorization": authorization} if authorization else {})}
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.request(
                method, guarded.base + path, headers=headers, json=INITIALIZE
            )
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "Authorization: Bearer <token>" in response.text

    async def test_the_sse_message_endpoint_needs_the_token_too(self, guarded: FrsProcess) -> None:
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            sse_session(http, guarded) as (endpoint, lines),
        ):
            without = await http.post(endpoint, json=ping)
            with_token = await http.post(endpoint, json=ping, headers=AUTH)
            answer = json.loads(await next_data(lines))
        assert without.status_code == 401
        assert with_token.status_code == 202
        assert answer["id"] == 7

    async def test_the_right_token_opens_a_session(self, guarded: FrsProcess) -> None:
        async with httpx2.AsyncClient(headers=AUTH, timeout=30) as http:
            response = await initialize(http, guarded.mcp_url)
        assert response.status_code == 200
        assert response.headers["mcp-session-id"]

    async def test_health_answers_without_a_token(self, guarded: FrsProcess) -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.get(guarded.health_url)
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok"
        assert body["transports"] == ["streamable-http", "sse"]


class TestDnsRebindingGuard:
    @pytest.mark.parametrize(("method", "path"), [("POST", "/mcp"), ("GET", "/sse")])
    @pytest.mark.parametrize(
        "host", ["evil.example", "evil.example:{port}", "127.0.0.1", "127.0.0.1:1", "localhost"]
    )
    async def test_a_foreign_host_gets_421_even_with_the_token(
        self, guarded: FrsProcess, host: str, method: str, path: str
    ) -> None:
        headers = {**POST_HEADERS, **AUTH, "Host": host.format(port=guarded.port)}
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.request(
                method, guarded.base + path, headers=headers, json=INITIALIZE
            )
        assert response.status_code == 421
        assert "--allowed-host" in response.text

    @pytest.mark.parametrize(("method", "path"), [("POST", "/mcp"), ("GET", "/sse")])
    @pytest.mark.parametrize(
        "origin", ["http://evil.example", "http://evil.example:{port}", "null", "file://"]
    )
    async def test_a_foreign_origin_gets_403_even_with_the_token(
        self, guarded: FrsProcess, origin: str, method: str, path: str
    ) -> None:
        headers = {**POST_HEADERS, **AUTH, "Origin": origin.format(port=guarded.port)}
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.request(
                method, guarded.base + path, headers=headers, json=INITIALIZE
            )
        assert response.status_code == 403
        assert "Origin" in response.text

    @pytest.mark.parametrize(
        ("host", "origin"),
        [
            ("localhost:{port}", None),
            ("127.0.0.1:{port}", "http://localhost:5173"),
            ("[::1]:{port}", "http://127.0.0.1:{port}"),
        ],
    )
    async def test_loopback_names_and_loopback_pages_are_served(
        self, guarded: FrsProcess, host: str, origin: str | None
    ) -> None:
        headers = {**POST_HEADERS, **AUTH, "Host": host.format(port=guarded.port)}
        if origin:
            headers["Origin"] = origin.format(port=guarded.port)
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(guarded.mcp_url, json=INITIALIZE, headers=headers)
        assert response.status_code == 200


class TestHostPolicy:
    """The Host/Origin rules on their own; the tests above show them applied to requests."""

    def test_loopback_names_need_the_servers_port(self) -> None:
        policy = HostPolicy.for_server("127.0.0.1", 8765)
        assert policy.allows_host("127.0.0.1:8765")
        assert policy.allows_host("LOCALHOST:8765")
        assert policy.allows_host("[::1]:8765")
        assert not policy.allows_host("127.0.0.1")
        assert not policy.allows_host("127.0.0.1:8766")
        assert not policy.allows_host(None)
        assert not policy.allows_host("::1:8765")

    def test_allowed_hosts_take_a_name_a_port_or_any_port(self) -> None:
        allowed = ("proxy.example", "fixed.example:9000", "any.example:*")
        policy = HostPolicy.for_server("0.0.0.0", 8765, allowed)
        assert policy.allows_host("proxy.example")
        assert policy.allows_host("proxy.example:8765")
        assert not policy.allows_host("proxy.example:9000")
        assert policy.allows_host("fixed.example:9000")
        assert not policy.allows_host("fixed.example:8765")
        assert policy.allows_host("any.example:1234")
        assert not policy.allows_host("0.0.0.0:8765")

    def test_origins_are_loopback_pages_or_allowed_hosts(self) -> None:
        policy = HostPolicy.for_server("127.0.0.1", 8765, ("app.example",))
        assert policy.allows_origin(None)
        assert policy.allows_origin("http://localhost:5173")
        assert policy.allows_origin("https://app.example")
        assert not policy.allows_origin("https://app.example.evil.example")
        assert not policy.allows_origin("null")
        assert not policy.allows_origin("ftp://localhost")

    @pytest.mark.parametrize("value", ["bad host", "x.example:port", "[::1", "a:1:2", ":80"])
    def test_a_malformed_allowed_host_is_refused_at_startup(
        self, value: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(ValueError, match="--allowed-host"):
            parse_allowed_host(value)
        assert main(["--transport", "sse", "--port", "0", "--allowed-host", value]) == 2
        assert "--allowed-host" in capsys.readouterr().err


class TestBodyLimit:
    @pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
    @pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
    async def test_streamable_http_refuses_a_body_over_the_limit_with_413(
        self, guarded: FrsProcess, declared: bool, era: str
    ) -> None:
        padded = {**INITIALIZE, "params": {"pad": "x" * BODY_LIMIT}}
        data = json.dumps(padded).encode()

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(0, len(data), 8192):
                yield data[i : i + 8192]

        async with httpx2.AsyncClient(headers=AUTH, timeout=30) as http:
            response = await http.post(
                guarded.mcp_url,
                content=data if declared else chunks(),
                headers={**POST_HEADERS, "MCP-Protocol-Version": era},
            )
        assert response.status_code == 413
        assert f"the limit is {BODY_LIMIT} bytes" in response.text
        assert "--max-body-bytes" in response.text

    @pytest.mark.parametrize("path", ["/mcp", "/messages/?session_id=0"])
    async def test_a_content_length_over_the_limit_is_refused_at_once_without_its_body(
        self, guarded: FrsProcess, path: str
    ) -> None:
        """The announced length alone decides: a client that sends no body gets its 413 at
        once, not a 408 when the body timeout (30 s) runs out."""
        async with await anyio.connect_tcp("127.0.0.1", guarded.port) as sock:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{guarded.port}\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                f"Content-Length: {BODY_LIMIT + 1}\r\n\r\n"
            )
            await sock.send(head.encode())
            got = b""
            with anyio.fail_after(25):  # under the body timeout: a 408 would come too late
                while b"\r\n" not in got:
                    got += await sock.receive()
        assert got.startswith(b"HTTP/1.1 413 "), got

    async def test_the_sse_message_endpoint_refuses_a_body_over_the_limit_with_413(
        self, guarded: FrsProcess
    ) -> None:
        big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * BODY_LIMIT}}
        async with (
            httpx2.AsyncClient(headers=AUTH, timeout=30) as http,
            sse_session(http, guarded) as (endpoint, lines),
        ):
            refused = await http.post(endpoint, json=big)
            accepted = await http.post(endpoint, json={"jsonrpc": "2.0", "id": 2, "method": "ping"})
            answer = json.loads(await next_data(lines))
        assert refused.status_code == 413
        assert f"the limit is {BODY_LIMIT} bytes" in refused.text
        assert accepted.status_code == 202
        assert answer["id"] == 2  # the refused message never reached the session

    async def test_a_message_under_the_limit_is_recorded(self, guarded: FrsProcess) -> None:
        async with streamable(guarded) as client:
            session_id = await start_session(client, "under the limit")
            done = await record(client, session_id, "y" * (BODY_LIMIT - 4096))
        assert done["positions"] == [1]


class TestConnectionLimits:
    async def test_an_sse_connection_over_the_limit_gets_503_until_one_closes(
        self, tmp_path: Path
    ) -> None:
        with frs_http(tmp_path / "frs.db", "--transport", "sse", "--max-sse-connections", "2") as s:
            async with httpx2.AsyncClient(timeout=30) as http, AsyncExitStack() as streams:
                first = await streams.enter_async_context(http.stream("GET", s.sse_url))
                second = await streams.enter_async_context(http.stream("GET", s.sse_url))
                assert (first.status_code, second.status_code) == (200, 200)
                refused = await http.get(s.sse_url)
                assert refused.status_code == 503
                assert "limit of 2" in refused.text
                assert "--max-sse-connections" in refused.text
                await first.aclose()
                # The server notices the closed stream on its own schedule; poll for the slot.
                status = 503
                for _ in range(100):
                    async with http.stream("GET", s.sse_url) as third:
                        status = third.status_code
                    if status == 200:
                        break
                    await anyio.sleep(0.1)
                assert status == 200

    async def test_idle_sessions_expire_and_free_their_place(self, tmp_path: Path) -> None:
        args = ("--transport", "streamable-http", "--max-sessions", "1")
        with frs_http(tmp_path / "frs.db", *args, "--session-idle-timeout", "0.5") as server:
            async with httpx2.AsyncClient(timeout=30) as http:
                idle = (await initialize(http, server.mcp_url)).headers["mcp-session-id"]
                status = 503
                for _ in range(100):
                    status = (await initialize(http, server.mcp_url)).status_code
                    if status == 200:
                        break
                    await anyio.sleep(0.1)
                expired = await http.post(
                    server.mcp_url,
                    json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                    headers={**POST_HEADERS, "mcp-session-id": idle},
                )
        assert status == 200
        assert expired.status_code == 404


class TestBindingBeyondLoopback:
    @pytest.mark.parametrize("transport", ["sse", "streamable-http"])
    def test_all_addresses_without_a_token_refuse_to_start_and_say_how_to_set_one(
        self, tmp_path: Path, transport: str
    ) -> None:
        db = tmp_path / "frs.db"
        done = subprocess.run(
            [
                FRS_MCP,
                "--transport",
                transport,
                "--host",
                "0.0.0.0",
                "--port",
                "0",
                "--db",
                str(db),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=server_env(),
        )
        assert done.returncode == 2
        assert "without a token" in done.stderr
        assert "FRS_TOKEN" in done.stderr
        assert "--token" in done.stderr
        assert not db.exists()

    async def test_all_addresses_with_a_token_still_check_host_origin_and_token(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "both-http", "--host", "0.0.0.0", "--allowed-host", "frs.example")
        env = server_env(FRS_TOKEN=TOKEN)
        with frs_http(tmp_path / "frs.db", *args, env=env) as server:
            port = server.port

            async def status(method: str, path: str, **headers: str) -> int:
                async with httpx2.AsyncClient(timeout=30) as http:
                    response = await http.request(
                        method,
                        server.base + path,
                        json=INITIALIZE,
                        headers={**POST_HEADERS, **headers},
                    )
                return response.status_code

            bearer = AUTH["Authorization"]
            assert await status("POST", "/mcp", Host="evil.example", Authorization=bearer) == 421
            assert await status("GET", "/sse", Host=f"evil.example:{port}") == 421
            assert await status("POST", "/mcp", Origin="http://evil.example") == 403
            assert await status("POST", "/mcp") == 401
            assert await status("POST", "/mcp", Host=f"frs.example:{port}") == 401
            assert (
                await status("POST", "/mcp", Host=f"frs.example:{port}", Authorization=bearer)
                == 200
            )
            assert await status("POST", "/mcp", Host="frs.example", Authorization=bearer) == 200
            assert (
                await status("POST", "/mcp", Origin="https://frs.example", Authorization=bearer)
                == 200
            )


class TestShutdown:
    @pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
    async def test_a_signal_finishes_or_fails_calls_closes_the_database_and_frees_the_port(
        self, db_path: Path, connect: Connect, sig: signal.Signals
    ) -> None:
        batch = [{"role": "user", "content": f"in flight {i}"} for i in range(2000)]
        outcome: list[str] = []
        with frs_http(db_path, "--transport", "both-http") as server:
            port = server.port
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                http.stream("GET", server.sse_url) as open_stream,
            ):
                assert open_stream.status_code == 200
                async with streamable(server, headers={}) as client:
                    session_id = await start_session(client, "before the signal")
                    await record(client, session_id, "recorded before the signal")

                    async def in_flight() -> None:
                        try:
                            result = await client.call_tool(
                                "frs_record", {"session_id": session_id, "messages": batch}
                            )
                            outcome.append("error" if result.is_error else "done")
                        except Exception:
                            outcome.append("failed")

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(in_flight)
                        await anyio.sleep(0.05)
                        code = await anyio.to_thread.run_sync(server.stop, sig)
        assert code == 0, server.stderr
        assert "Traceback" not in server.stderr, server.stderr
        assert f"database {db_path} closed" in server.stderr
        # SQLite removes the WAL file when the last connection closes.
        assert not await anyio.Path(f"{db_path}-wal").exists()
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))
            probe.listen()
        async with connect() as client:
            view = text(
                await client.call_tool("frs_view_thread", {"session_id": session_id, "last": 5000})
            )
        assert "recorded before the signal" in view
        kept = view.count("in flight ")
        # All or nothing: a call cut short by the shutdown never leaves half a batch.
        assert kept in (0, len(batch)), kept
        assert outcome in (["done"], ["failed"], ["error"])
        if outcome == ["done"]:
            assert kept == len(batch)
