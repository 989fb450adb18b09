"""The gateway listens and serves as the MCP transports and the viewer do (`server.http.serving`):
a SIGTERM closes its database and exits 0, a port in use gets the same hint, a body over the
cap gets 413 before it is read, and its own usage shows for a flag it does not know."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from frs.host_threads import find_thread
from server.__main__ import main
from server.gateway.recorder import Recorder
from tests.command import frs_mcp
from tests.gateway.conversation import SESSION, TASK, body
from tests.gateway.harness import Upstream, rig, served, text_reply
from tests.gateway.process import gateway_process
from tests.web.conftest import viewer_process
from tests.web.sample import write_sample

pytestmark = pytest.mark.slow

KEY = [("x-api-key", "sk-test"), ("anthropic-version", "2023-06-01")]


def read_back(database: Path, into: Path, sql: str) -> list[str]:
    """What `sql` reads from a copy of the database file alone (no -wal beside it)."""
    into.mkdir()
    shutil.copy(database, into / "frs.db")
    with closing(sqlite3.connect(into / "frs.db")) as db:
        return [row[0] for row in db.execute(sql)]


class TestSignals:
    async def test_sigterm_ends_the_gateway_with_status_0_and_its_records_in_the_file(
        self, tmp_path: Path
    ) -> None:
        database = tmp_path / "frs.db"
        async with served(Upstream(lambda seen: text_reply("Fixed."))) as upstream:
            with gateway_process(database, upstream) as gateway:
                async with httpx2.AsyncClient(timeout=30) as http:
                    answer = await http.post(
                        gateway.url + "/v1/messages", content=body(TASK[:1]), headers=KEY + SESSION
                    )
                assert answer.status_code == 200
                code = await anyio.to_thread.run_sync(gateway.stop)
        assert code == 0, gateway.stderr
        assert "Traceback" not in gateway.stderr
        assert f"database {database} closed" in gateway.stderr  # logged at INFO, the default
        assert not database.with_name("frs.db-wal").exists()
        recorded = read_back(database, tmp_path / "copy", "select content from messages")
        assert recorded == [TASK[0]["content"][0]["text"], "Fixed."]

    async def test_sigterm_ends_the_viewer_with_status_0_and_the_database_closed(
        self, tmp_path: Path
    ) -> None:
        database = tmp_path / "frs.db"
        sample = await write_sample(database)
        with viewer_process(database) as (base, process):
            async with httpx2.AsyncClient(timeout=30) as http:
                assert (await http.get(base + "/")).status_code == 200  # serving
            process.send_signal(signal.SIGTERM)
            code = await anyio.to_thread.run_sync(process.wait, 60)
            assert process.stderr is not None
            log = process.stderr.read()
        assert code == 0, log
        assert f"database {database} closed" in log
        assert "Traceback" not in log
        kept = read_back(database, tmp_path / "copy", "select id from sessions")
        assert {sample.session, sample.other} <= set(kept)


class TestStumbles:
    @pytest.mark.parametrize(
        "command",
        [["gateway"], ["web"], ["--transport", "streamable-http"]],
        ids=["gateway", "web", "streamable-http"],
    )
    def test_a_port_in_use_gets_the_same_hint_everywhere(
        self, tmp_path: Path, command: list[str]
    ) -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = str(taken.getsockname()[1])
            run = frs_mcp(*command, "--db", str(tmp_path / "x.db"), "--port", port)
        assert run.returncode == 2
        assert "Another process holds the port: pass --port 0" in run.stderr
        assert run.stderr.count("\n") == 1

    def test_an_unknown_flag_shows_the_gateways_usage(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as exited:
            main(["gateway", "--bogus"])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("usage: frs-mcp gateway ")
        assert "--anthropic-upstream" in err
        assert "frs-mcp gateway: error: unrecognized arguments: --bogus" in err


async def _raw(url: str, head: bytes, chunks: int = 0) -> bytes:
    """Send `head`, then `chunks` chunks of 1 MiB (a chunked body), reading the answer all the
    while; the answer, once whole."""
    port = int(url.rsplit(":", 1)[1])
    got = b""
    async with await anyio.connect_tcp("127.0.0.1", port) as sock:
        await sock.send(head)

        async def upload() -> None:
            block = b"x" * (1 << 20)
            try:
                for _ in range(chunks):
                    await sock.send(b"%x\r\n%s\r\n" % (len(block), block))
                await sock.send(b"0\r\n\r\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the gateway answered and closed: the rest is not wanted

        async with anyio.create_task_group() as tg:
            tg.start_soon(upload)
            with anyio.fail_after(60):
                while not _whole(got):
                    got += await sock.receive()
            tg.cancel_scope.cancel()
    return got


def _whole(answer: bytes) -> bool:
    """Whether `answer` holds a whole response (its head and Content-Length bytes)."""
    head, found, rest = answer.partition(b"\r\n\r\n")
    lengths = [line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length")]
    return bool(found and lengths) and len(rest) >= int(lengths[0].split(b":")[1])


class TestBodyCap:
    @pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
    async def test_a_100_mb_body_is_refused_without_the_gateway_growing(
        self, tmp_path: Path, chunked: bool
    ) -> None:
        upstream = Upstream(lambda seen: text_reply())
        async with served(upstream) as url:
            with gateway_process(tmp_path / "frs.db", url) as gateway:
                port = gateway.url.rsplit(":", 1)[1]
                framing = "transfer-encoding: chunked" if chunked else "content-length: 104857600"
                head = (
                    f"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                    f"content-type: application/json\r\nx-api-key: sk-test\r\n{framing}\r\n\r\n"
                ).encode()
                # Warm: the first request loads what every later one uses.
                async with httpx2.AsyncClient(timeout=30) as http:
                    await http.post(gateway.url + "/v1/messages", content=b"{}", headers=KEY)
                before = gateway.status("VmHWM")
                got = await _raw(gateway.url, head, chunks=100 if chunked else 0)
                grown = gateway.status("VmHWM") - before
        assert got.startswith(b"HTTP/1.1 413 "), got[:200]
        error = json.loads(got.partition(b"\r\n\r\n")[2])["error"]
        assert "--max-body" in error["message"]
        assert "33554432 bytes" in error["message"]
        assert [seen.body for seen in upstream.seen] == [b"{}"]
        # The cap itself is held at most, while a chunked body is counted (32 MiB and the
        # reads' buffers); an announced length is refused before a byte is read.
        assert grown < (48_000 if chunked else 8_000), f"grew {grown} kB"

    async def test_a_body_at_the_cap_goes_and_one_byte_more_is_refused(
        self, tmp_path: Path
    ) -> None:
        upstream = Upstream(lambda seen: text_reply())
        cap = 64 * 1024
        under = b'{"pad":"' + b"x" * (cap - 10) + b'"}'
        assert len(under) == cap
        async with served(upstream) as url:
            with gateway_process(tmp_path / "frs.db", url, "--max-body", str(cap)) as gateway:
                async with httpx2.AsyncClient(timeout=30) as http:
                    went = await http.post(gateway.url + "/v1/messages", content=under)
                    refused = await http.post(gateway.url + "/v1/messages", content=under + b" ")
        assert went.status_code == 200
        assert refused.status_code == 413
        assert f"limit of {cap} bytes (--max-body)" in refused.json()["error"]["message"]
        assert [seen.body for seen in upstream.seen] == [under]

    async def test_a_refused_body_that_never_comes_ends_the_socket_after_one_answer(
        self, tmp_path: Path
    ) -> None:
        async with served(Upstream(lambda seen: text_reply())) as url:
            with gateway_process(tmp_path / "frs.db", url, "--body-timeout", "0.5") as gateway:
                port = int(gateway.url.rsplit(":", 1)[1])
                got = b""
                async with await anyio.connect_tcp("127.0.0.1", port) as sock:
                    await sock.send(
                        f"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                        "content-length: 104857600\r\n\r\n".encode()
                    )
                    with anyio.fail_after(30):
                        try:
                            while True:
                                got += await sock.receive()
                        except anyio.EndOfStream:
                            pass
        assert got.startswith(b"HTTP/1.1 413 ")
        assert _whole(got)
        assert got.count(b"HTTP/1.1") == 1  # no 408 written after the answer

    async def test_a_body_it_does_not_read_costs_the_gateway_a_small_multiple_of_it(
        self, tmp_path: Path
    ) -> None:
        """The body read whole (its chunks, then joined) and sent on: about 2.7 times it."""
        upstream = Upstream(lambda seen: text_reply())
        big = b'{"pad":"' + b"x" * (24 << 20) + b'"}'
        async with served(upstream) as url:
            with gateway_process(tmp_path / "frs.db", url) as gateway:
                async with httpx2.AsyncClient(timeout=60) as http:
                    path = gateway.url + "/v1/messages/count_tokens"
                    await http.post(path, content=b"{}", headers=KEY)
                    before = gateway.status("VmHWM")
                    answer = await http.post(path, content=big, headers=KEY)
                    grown = (gateway.status("VmHWM") - before) * 1024
        assert answer.status_code == 200
        assert upstream.seen[-1].body == big
        assert grown < 4 * len(big), f"grew {grown / len(big):.1f} times the body"


class TestReadBudget:
    """Concurrent large requests cannot take the gateway's memory: past `--read-budget`
    bytes of bodies being read (parsed, recorded, rewritten: about ten times their size until
    their calls settle), a request is forwarded as the host sent it, unread."""

    async def test_a_request_past_the_budget_goes_unread_and_the_next_is_read(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        release = anyio.Event()
        settling = Recorder.add_call

        async def slowly(self: Recorder, prepared: Any, sent: bytes) -> Any:
            await release.wait()  # the first call has not settled: its body is still read
            return await settling(self, prepared, sent)

        monkeypatch.setattr(Recorder, "add_call", slowly)
        first, second, third = body(TASK[:3]), body(TASK[:5]), body(TASK[:7])
        headers = [("content-type", "application/json"), ("x-api-key", "sk-test"), *SESSION]
        async with rig(tmp_path, read_budget=len(first) + len(second) - 1) as r:
            url = r.url + "/v1/messages"
            assert (await r.client.post(url, content=first, headers=headers)).status_code == 200
            assert r.gateway.traffic.unread == 0
            assert (await r.client.post(url, content=second, headers=headers)).status_code == 200
            assert r.upstream.seen[-1].body == second  # as the host sent it
            assert r.gateway.traffic.unread == 1
            release.set()
            await r.gateway.settled()
            thread = await find_thread(r.gateway.recorder.env, "claude-code", "cc-session-1")
            assert thread is not None
            assert len(thread.keys) == 3  # the first request's; the second's went unread
            assert (await r.post(third, SESSION)).status_code == 200
            assert r.gateway.traffic.unread == 1  # read again once the others settled
            thread = await find_thread(r.gateway.recorder.env, "claude-code", "cc-session-1")
            assert thread is not None
            assert len(thread.keys) == 7  # and it brings what the second one added

    def test_a_budget_out_of_range_is_refused_at_start(self, capsys: pytest.CaptureFixture[str]):
        assert main(["gateway", "--read-budget", "-1", "--port", "0"]) == 2
        error = capsys.readouterr().err
        assert "--read-budget -1: give 0 to 1099511627776 bytes" in error
