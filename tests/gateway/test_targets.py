"""Requests go only where configured: a request target that names another place (an authority
in any disguise) is answered 400 and reaches nothing, and an upstream URL that could let one
is refused at start.

The targets are written on a raw socket: an HTTP client would normalise them before sending.
A canary listener on 127.0.0.1 stands where each target points; it must receive nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketStream

from server.__main__ import main
from server.gateway.proxy import Upstreams
from server.gateway.targets import upstream_of
from tests.gateway.harness import rig, text_reply

BODY = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'


@dataclass
class Canary:
    """A listener that only counts who connects and what they send."""

    port: int = 0
    connections: int = 0
    received: list[bytes] = field(default_factory=list)

    async def handle(self, stream: SocketStream) -> None:
        self.connections += 1
        async with stream:
            with anyio.move_on_after(0.5):
                self.received.append(await stream.receive())


@asynccontextmanager
async def canary() -> AsyncIterator[Canary]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    found = Canary()
    found.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, found.handle)
        try:
            yield found
        finally:
            tg.cancel_scope.cancel()


async def raw(url: str, method: str, target: str, body: bytes = BODY) -> tuple[int, bytes]:
    """Send one request with this exact target; the status and body of the answer."""
    port = int(url.rsplit(":", 1)[1])
    head = (
        f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: sk-test\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    got = b""
    async with await anyio.connect_tcp("127.0.0.1", port) as sock:
        await sock.send(head.encode() + body)
        with anyio.fail_after(30):
            try:
                while True:
                    got += await sock.receive()
            except anyio.EndOfStream:
                pass
    status_line, _, rest = got.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


#: Every way a target has named another place (finding 3 of issue 30), {port} the canary's.
TRICKS = [
    ("POST", "@127.0.0.1:{port}/v1/messages"),
    ("POST", "%40127.0.0.1:{port}/v1/messages"),
    ("GET", "@127.0.0.1:{port}/latest/meta-data/"),
    ("POST", ":{port}/v1/messages"),  # an upstream without a port took this one's
    ("POST", "http://127.0.0.1:{port}/v1/messages"),
    ("POST", "//127.0.0.1:{port}/v1/messages"),
    ("POST", "/%2F127.0.0.1:{port}/v1/messages"),
    ("POST", "/%252F127.0.0.1:{port}/v1/messages"),
    ("POST", "/v1/../../@127.0.0.1:{port}/v1/messages"),
    ("POST", "/v1/%2e%2e/x"),
    ("POST", "127.0.0.1:{port}"),
    ("POST", "*"),
]


class TestTargets:
    @pytest.mark.parametrize(
        "upstream",
        ["scripted", "default", "portless"],
        ids=["scripted upstream", "the providers' own", "an upstream without a port"],
    )
    async def test_a_target_naming_another_place_reaches_nothing_and_gets_400(
        self, tmp_path: Path, upstream: str
    ) -> None:
        async with canary() as bird, rig(tmp_path, lambda seen: text_reply()) as r:
            if upstream == "default":
                r.gateway.upstreams = Upstreams()
            elif upstream == "portless":
                r.gateway.upstreams = Upstreams("http://127.0.0.1", "http://127.0.0.1")
            for method, target in TRICKS:
                status, answer = await raw(r.url, method, target.format(port=bird.port))
                assert status == 400, (target, status, answer)
                if answer:  # h11 refuses a few targets itself, with a body of its own
                    text = json.loads(answer)["error"]["message"]
                    assert "must be a path" in text
            await r.gateway.settled()
            assert bird.connections == 0
            assert bird.received == []
            assert r.upstream.seen == []

    async def test_a_path_goes_to_the_upstream_under_its_prefix_with_its_query(
        self, tmp_path: Path
    ) -> None:
        async with rig(tmp_path, lambda seen: text_reply()) as r:
            r.gateway.upstreams = Upstreams(r.upstream_url + "/proxy/", r.upstream_url)
            status, _ = await raw(r.url, "POST", "/v1/messages?beta=true&x=%40a")
            assert status == 200
            seen = r.upstream.seen[0]
            assert (seen.path, seen.query) == ("/proxy/v1/messages", "beta=true&x=%40a")
            assert seen.body == BODY


class TestUpstreamUrls:
    @pytest.mark.parametrize(
        ("url", "said"),
        [
            ("http://127.0.0.1:/", "empty port"),
            ("http://127.0.0.1:0", "not a number from 1 to 65535"),
            ("http://127.0.0.1:99999", "not a number from 1 to 65535"),
            ("http://user:pw@127.0.0.1:8080", "user name or password"),
            ("http://127.0.0.1:8080/?key=1", "query or a fragment"),
            ("http://127.0.0.1:8080#x", "query or a fragment"),
            ("ftp://127.0.0.1", "not an http:// or https:// URL"),
            ("http:///v1", "names no host"),
            ("http://127.0.0.1/a/../b", "'.' or '..'"),
            ("http://[::1", "not a URL"),
        ],
    )
    def test_an_upstream_that_could_stray_is_refused_at_start_in_one_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, said: str
    ) -> None:
        with pytest.raises(ValueError, match="upstream"):
            upstream_of(url)
        args = ["gateway", "--db", str(tmp_path / "x.db"), "--port", "0"]
        assert main([*args, "--anthropic-upstream", url]) == 2
        err = capsys.readouterr().err
        assert said in err
        assert err.count("\n") == 1
        assert "pw" not in err  # a password in the URL is never echoed
        assert not (tmp_path / "x.db").exists()

    @pytest.mark.parametrize(
        "url", ["https://api.anthropic.com", "http://127.0.0.1:8080/api/", "http://[::1]:9"]
    )
    def test_an_upstream_url_is_split_into_the_parts_requests_are_built_from(
        self, url: str
    ) -> None:
        upstream = upstream_of(url)
        assert upstream.shown == url.rstrip("/")
        built = upstream.url(b"/v1/messages", b"beta=true")
        assert str(built) == url.rstrip("/") + "/v1/messages?beta=true"
