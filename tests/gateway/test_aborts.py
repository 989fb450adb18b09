"""Aborts, timeouts and the truth on the wire: a host that hangs up stops the provider at once,
a silent upstream is given up after `--upstream-timeout`, nothing of a request outlives it, an
answer the upstream cut reaches the host cut, and a body that did not arrive whole is never
forwarded."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream
from starlette.types import Receive, Scope, Send

from server.gateway.command import open_gateway
from server.gateway.proxy import Gateway, Upstreams
from server.settings import Settings
from tests.gateway.harness import Upstream, rig, served, text_reply
from tests.gateway.process import gateway_process

BODY = b'{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
HEADERS = {"x-api-key": "sk-test", "content-type": "application/json"}
FIRST = b'event: message_start\ndata: {"type":"message_start"}\n\n'
CHUNK = f"{len(FIRST):x}\r\n".encode() + FIRST + b"\r\n"  # FIRST as one chunk of a body


async def _drained(receive: Receive) -> None:
    while (await receive()).get("more_body", False):
        pass


async def _gone(receive: Receive) -> None:
    """Until the gateway closes the connection (the answer is never finished)."""
    while (await receive())["type"] != "http.disconnect":
        pass


@dataclass
class Talking:
    """Sends an answer's first event, then nothing: waits for the gateway to hang up."""

    started: anyio.Event = field(default_factory=anyio.Event)
    gone: anyio.Event = field(default_factory=anyio.Event)
    gone_at: float = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await _drained(receive)
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": FIRST, "more_body": True})
        self.started.set()
        await _gone(receive)
        self.gone_at = time.monotonic()
        self.gone.set()


@dataclass
class Silent:
    """Takes requests and never answers; counts those still open."""

    expected: int = 1
    open: int = 0
    arrived: anyio.Event = field(default_factory=anyio.Event)  # `expected` are open
    closed: anyio.Event = field(default_factory=anyio.Event)  # then none is

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await _drained(receive)
        self.open += 1
        if self.open == self.expected:
            self.arrived.set()
        await _gone(receive)
        self.open -= 1
        if self.open == 0 and self.arrived.is_set():
            self.closed.set()


async def read_into(got: list[bytes], http: httpx2.AsyncClient, url: str) -> None:
    """Stream the answer to a request, each chunk into `got` as it comes (it may break)."""
    async with http.stream("POST", url + "/v1/messages", content=BODY, headers=HEADERS) as answer:
        assert answer.status_code == 200
        async for chunk in answer.aiter_raw():
            got.append(chunk)


@asynccontextmanager
async def gateway_before(
    app: Any, tmp_path: Path, upstream_timeout: float = 600.0
) -> AsyncIterator[tuple[str, Gateway]]:
    """The gateway (its URL, the app) in front of the upstream `app`."""
    async with served(app) as url:
        settings = Settings(database=str(tmp_path / "frs.db"))
        async with (
            open_gateway(
                settings, Upstreams(url, url), upstream_timeout=upstream_timeout
            ) as gateway,
            served(gateway) as gateway_url,
        ):
            yield gateway_url, gateway


class TestAborts:
    async def test_a_host_that_hangs_up_mid_answer_closes_the_upstream_request_at_once(
        self, tmp_path: Path
    ) -> None:
        upstream = Talking()
        async with (
            gateway_before(upstream, tmp_path) as (url, _),
            httpx2.AsyncClient(timeout=30) as http,
        ):
            async with http.stream(
                "POST", url + "/v1/messages", content=BODY, headers=HEADERS
            ) as answer:
                assert await answer.aiter_raw().__anext__() == FIRST
            # Leaving the block closed the host's connection, the answer unfinished.
            hung_up = time.monotonic()
            with anyio.fail_after(5):  # the provider would go on for minutes
                await upstream.gone.wait()
        assert upstream.gone_at >= hung_up

    async def test_twenty_hosts_giving_up_on_a_silent_upstream_leave_nothing_open(
        self, tmp_path: Path
    ) -> None:
        upstream = Silent(expected=20)
        async with served(upstream) as url:
            with gateway_process(tmp_path / "frs.db", url) as gateway:
                port = int(gateway.url.rsplit(":", 1)[1])
                before = gateway.open_files()
                head = (
                    f"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                    f"x-api-key: sk-test\r\ncontent-length: {len(BODY)}\r\n\r\n"
                ).encode()
                hosts: list[SocketStream] = []
                for _ in range(20):
                    host = await anyio.connect_tcp("127.0.0.1", port)
                    await host.send(head + BODY)
                    hosts.append(host)
                with anyio.fail_after(30):
                    await upstream.arrived.wait()
                # Each host's socket and its upstream's (a few may share a moment's file).
                assert gateway.open_files() >= before + 20
                for host in hosts:
                    await host.aclose()
                with anyio.fail_after(10):
                    await upstream.closed.wait()
                after = gateway.open_files()
        assert upstream.open == 0
        assert after == before


class TestTimeouts:
    async def test_an_upstream_silent_before_its_answer_gets_a_504_and_is_closed(
        self, tmp_path: Path
    ) -> None:
        upstream = Silent()
        async with (
            gateway_before(upstream, tmp_path, upstream_timeout=0.5) as (url, _),
            httpx2.AsyncClient(timeout=30) as http,
        ):
            answer = await http.post(url + "/v1/messages", content=BODY, headers=HEADERS)
            with anyio.fail_after(5):
                await upstream.closed.wait()
        assert answer.status_code == 504
        message = json.loads(answer.content)["error"]["message"]
        assert "sent nothing for 0.5 s (--upstream-timeout)" in message

    async def test_an_upstream_silent_inside_its_answer_is_cut_for_the_host(
        self, tmp_path: Path
    ) -> None:
        upstream = Talking()
        got: list[bytes] = []
        async with (
            gateway_before(upstream, tmp_path, upstream_timeout=0.5) as (url, _),
            httpx2.AsyncClient(timeout=30) as http,
        ):
            with pytest.raises(httpx2.RemoteProtocolError):
                await read_into(got, http, url)
            with anyio.fail_after(5):
                await upstream.gone.wait()
        assert b"".join(got) == FIRST


@dataclass
class Cutting:
    """A raw upstream that writes part of an answer and closes its connection."""

    answer: bytes

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            got = b""
            while b"\r\n\r\n" not in got:
                got += await stream.receive()
            await stream.send(self.answer)


@asynccontextmanager
async def cutting(answer: bytes) -> AsyncIterator[str]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, Cutting(answer).handle)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            tg.cancel_scope.cancel()


class TestTruth:
    @pytest.mark.parametrize(
        "head",
        [
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + CHUNK,
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: 500\r\n\r\n" + FIRST,
        ],
        ids=["chunked", "content-length"],
    )
    async def test_an_answer_the_upstream_cut_reaches_the_host_cut(
        self, tmp_path: Path, head: bytes
    ) -> None:
        got: list[bytes] = []
        async with (
            cutting(head) as url,
            gateway_before(Upstream(), tmp_path) as (gateway_url, gateway),
            httpx2.AsyncClient(timeout=30) as http,
        ):
            gateway.upstreams = Upstreams(url, url)
            with pytest.raises(httpx2.RemoteProtocolError):
                await read_into(got, http, gateway_url)
            await gateway.settled()
        assert b"".join(got) == FIRST

    async def test_a_body_the_host_stopped_sending_is_never_forwarded(self, tmp_path: Path) -> None:
        async with rig(tmp_path, lambda seen: text_reply()) as r:
            port = int(r.url.rsplit(":", 1)[1])
            async with await anyio.connect_tcp("127.0.0.1", port) as host:
                await host.send(
                    f"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                    f"x-api-key: sk-test\r\ncontent-length: {len(BODY)}\r\n\r\n".encode()
                    + BODY[:40]
                )
            with anyio.fail_after(10):
                while r.gateway.traffic.incomplete == 0:  # noqa: ASYNC110 - no event to wait on
                    await anyio.sleep(0.01)
            whole = await r.post(BODY)
            assert whole.status_code == 200
        assert [seen.body for seen in r.upstream.seen] == [BODY]
        assert r.gateway.traffic.requests == 1
