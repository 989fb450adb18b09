"""The viewer's caps on the MCP HTTP transports (issue 23), as on `frs-mcp web`: a tenant's
second search while one runs gets 429 on `/ui/`, and a client that reads nothing of a large
answer (a Streamable HTTP response, an SSE stream) is closed after `--write-timeout`, freeing
what it held (its answer, its SSE slot) while others are served.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from frs import Env, NewMessage, recording, sessions
from frs.model import LOCAL_TENANT, Limits
from server.http.options import HttpOptions, HttpTransport
from server.http.transports import build_app
from server.mcp.app import build_server
from server.mcp.deps import open_deps
from server.settings import Settings
from server.web.app import viewer_of
from storage import SqliteStore, open_database
from tests.clients.frs_process import FrsProcess, frs_http
from tests.server.test_http_hygiene import initialize, on, open_session
from tests.web.sample import write_sample
from tests.web.searching import FirstSearchWaits, drained, search_race
from tests.web.test_viewer import ANN, LOCAL

pytestmark = pytest.mark.slow

TRANSPORTS = ["streamable-http", "sse"]
EXPORT = 200  # messages of 100,000 characters: an answer of some 20 MB


class TestOneSearchAtATime:
    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_a_tenants_second_search_meanwhile_gets_429_on_the_transports_viewer(
        self, tmp_path: Path, transport: HttpTransport
    ) -> None:
        """The transports' app with its guards (`build_app`), the viewer at `/ui` over the
        server's own store, whose first search waits for the test."""
        path = tmp_path / "frs.db"
        await write_sample(path)
        settings = Settings(database=str(path), log_level="WARNING")
        tenants = ((ANN, "ann"), (LOCAL, LOCAL_TENANT))
        options = HttpOptions(transport=transport, port=8765, tenants=tenants)
        async with open_deps(settings) as deps:
            store = FirstSearchWaits(deps.env.store)
            app = build_app(build_server(settings, shared=deps), options, 8765, viewer_of(store))
            transport_ = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(
                transport=transport_, base_url="http://127.0.0.1:8765"
            ) as http:
                race = await search_race(http, "/ui/", store, LOCAL, ANN)
        assert race.second.status_code == 429, race.second.text
        assert "A search of yours is still running" in race.second.text
        assert race.other.status_code == 200
        assert race.first.status_code == 200
        assert "Parser work" in race.first.text
        assert race.again.status_code == 200


async def write_big(path: Path) -> str:
    """A session of `EXPORT` messages of 100,000 characters; its id."""
    async with open_database(path) as db:
        env = Env(SqliteStore(db), Limits())
        sid = (await sessions.start(env, "Big one")).session.id
        await recording.record(
            env, [NewMessage("user", f"{n} " + "x" * 100_000) for n in range(EXPORT)]
        )
    return str(sid)


def read_request(sid: str, request_id: int = 3) -> dict[str, object]:
    uri = f"frs://sessions/{sid}/messages"
    return {"jsonrpc": "2.0", "id": request_id, "method": "resources/read", "params": {"uri": uri}}


@contextmanager
def stalled(port: int) -> Iterator[socket.socket]:
    """A socket with a small receive buffer that the test reads only when it says so."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    with closing(sock):
        yield sock


async def logged(server: FrsProcess, text: str) -> bool:
    """Whether the server logs `text` within 30 s (a bound for a broken server, not a wait:
    the line comes within the write timeout)."""
    for _ in range(600):  # FrsProcess drains stderr in a thread: look every 50 ms
        if server.count(text):
            return True
        await anyio.sleep(0.05)
    return False


CLOSED = "read nothing of the answer for 0.5 s (--write-timeout)"


class TestAnswersNeverRead:
    async def test_a_streamable_http_answer_never_read_is_closed_and_the_session_goes_on(
        self, tmp_path: Path
    ) -> None:
        """A client reads 20 MB of an export over `/mcp` not at all: after `--write-timeout`
        its socket is aborted; another client is served meanwhile, and the session answers
        the next call."""
        path = tmp_path / "frs.db"
        sid = await write_big(path)
        args = ("--transport", "streamable-http", "--write-timeout", "0.5")
        with frs_http(path, *args) as server:
            async with httpx2.AsyncClient(timeout=30) as http:
                session = await open_session(http, server)
                body = httpx2.Request("POST", "/", json=read_request(sid)).content
                headers = {**on(session), "Host": f"127.0.0.1:{server.port}"}
                head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                with stalled(server.port) as sock:
                    sock.sendall(
                        f"POST /mcp HTTP/1.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                    closed = await logged(server, CLOSED)
                    health = await http.get(server.health_url)
                    received = await anyio.to_thread.run_sync(drained, sock)
                again = await http.post(
                    server.mcp_url, json=read_request(sid, 4), headers=on(session)
                )
        assert closed, server.stderr
        assert health.status_code == 200
        assert received.startswith(b"HTTP/1.1 200 ")
        assert len(received) < EXPORT * 100_000  # cut short: the server aborted it
        assert again.status_code == 200
        assert len(again.content) > EXPORT * 100_000  # a client that reads gets it whole

    async def test_an_sse_stream_never_read_is_closed_and_frees_its_slot(
        self, tmp_path: Path
    ) -> None:
        """An SSE client asks for 20 MB and never reads its stream: after `--write-timeout`
        the stream is aborted, and its slot of `--max-sse-connections 1` is free again for
        a client that reads."""
        path = tmp_path / "frs.db"
        sid = await write_big(path)
        args = ("--transport", "sse", "--write-timeout", "0.5", "--max-sse-connections", "1")
        with frs_http(path, *args) as server:
            async with httpx2.AsyncClient(timeout=30) as http:
                with stalled(server.port) as sock:
                    sock.sendall(
                        f"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                        "Accept: text/event-stream\r\n\r\n".encode()
                    )
                    endpoint = await anyio.to_thread.run_sync(_endpoint, sock)
                    url = f"http://127.0.0.1:{server.port}{endpoint}"
                    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                    for message in (initialize(), done, read_request(sid)):
                        posted = await http.post(url, json=message)
                        assert posted.status_code == 202, posted.text
                    closed = await logged(server, CLOSED)
                    busy = await http.get(server.health_url)
                    received = await anyio.to_thread.run_sync(drained, sock)
                async with http.stream("GET", server.sse_url) as after:
                    reopened = after.status_code
        assert closed, server.stderr
        assert busy.status_code == 200
        assert len(received) < EXPORT * 100_000
        assert reopened == 200, server.stderr


def _endpoint(sock: socket.socket) -> str:
    """Read the SSE stream's first event, the endpoint to post to, and nothing more."""
    sock.settimeout(30)
    got = b""
    while b"session_id=" not in got or not got.split(b"session_id=", 1)[1].count(b"\n"):
        got += sock.recv(1)
    line = got.split(b"data: ", 1)[1].split(b"\r\n", 1)[0].split(b"\n", 1)[0]
    return line.decode().strip()
