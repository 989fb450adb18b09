"""The bad-input table, row by row: make the call, compare the exact text the sender sees.

Tool rows go through an in-process MCP client on a seeded file, and must also leave every row of
the file as it was. stdio rows speak raw JSON-RPC lines to a subprocess; a row without a response
must still leave the server answering the next request. CLI rows run `frs-mcp` and read its
stderr; database rows break the file under a running server; HTTP rows send raw requests to a
server started with a token. The table itself is in `bad_inputs.py`, and docs/bad-inputs.md must
be its current rendering.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import Implementation

from server import Settings, build_server
from server.cli.options import parser
from storage import MIGRATIONS
from tests.robust import wire as wire_module
from tests.robust.audit import Acknowledged, check_acknowledged, check_database, snapshot
from tests.robust.bad_inputs import (
    DOC,
    INITIALIZE,
    NO_RESPONSE,
    ROWS,
    SEED,
    Cli,
    Http,
    Row,
    Served,
    Stdio,
    Tool,
    render,
)
from tests.robust.wire import (
    EXCHANGE_TIMEOUT,
    WIRE_CLIENT,
    Wire,
    frs_mcp_command,
    server_env,
    text_of,
)

Context = dict[str, str]
TOKEN = "s3cret-0123456789abcdef"
SILENCE = 1.0  # seconds to wait, after the next request is answered, before calling it none
_SESSION = re.compile(r"session (\w+) ")


def _unprivileged() -> list[str]:
    """A prefix that makes root obey file permissions (CAP_DAC_OVERRIDE dropped); none else."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "running as root: setpriv (util-linux) is needed to test a read-only file"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(folder: Path, prefix: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(prefix))


def _read_only(folder: Path) -> None:
    for file in folder.iterdir():
        file.chmod(0o444)


def _largest(folder: Path) -> int:
    return max(file.stat().st_size for file in folder.iterdir())


async def _seeded(client: Client) -> str:
    session = ""
    for name, arguments in SEED:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result.content
        if name == "frs_session":
            found = _SESSION.search(result.content[0].text)  # type: ignore[union-attr]
            assert found
            session = found.group(1)
    return session


def _source_root(home: Path) -> Path:
    """The allowed root of tool rows: in it a hard link and a symlink to a file outside it, and
    a symlink to a file that does not exist outside it."""
    root, outside = home / "root", home / "outside.txt"
    root.mkdir()
    outside.write_text("TOP SECRET\n")
    os.link(outside, root / "linked.txt")
    (root / "out.txt").symlink_to(outside)
    (root / "dangling.txt").symlink_to(home / "missing.txt")
    return root


async def observe_tool(probe: Tool, home: Path) -> tuple[str, Context]:
    db, root = home / "frs.db", _source_root(home)
    settings = Settings(database=str(db), allow_roots=(str(root),))
    async with Client(build_server(settings)) as client:
        session = await _seeded(client)
        before = snapshot(db)
        result = await client.call_tool(probe.name, probe.arguments)
        assert result.is_error, f"{probe.name} accepted the bad input"
        assert snapshot(db) == before, f"the refused {probe.name} wrote to the file"
        text = "\n".join(getattr(block, "text", "") for block in result.content)
    return text, {"{session}": session, "{root}": str(root)}


def _line_id(line: bytes) -> int | str | None:
    """The id the server can read in `line`: none in a line that is not UTF-8 or not JSON
    (its answer then carries id null, and waiting for this id would wait out the timeout)."""
    try:
        message = json.loads(line.decode("utf-8"))  # strictly, as the server reads it
    except (ValueError, RecursionError):
        return None
    key = message.get("id") if isinstance(message, dict) else None
    return key if isinstance(key, int | str) else None


async def observe_stdio(probe: Stdio, home: Path, silent: bool) -> tuple[str, Context]:
    """`silent`: the row expects no answer, so wait only SILENCE for one (else the full time)."""
    async with Wire.spawn(["--db", str(home / "frs.db")], home) as wire:
        await wire.initialize()
        started = await wire.call_tool("frs_session", {"action": "start", "title": "stdio"})
        found = _SESSION.search(text_of(started))
        assert found
        keys = [_line_id(line) for line in probe.lines]
        for line, key in zip(probe.lines, keys, strict=True):
            if key is not None:
                wire.expect(key)
            await wire.send_line(line)
        # The server must still answer; by then it has read (and dispatched or dropped) the
        # lines. A dispatched request is answered within moments, however slow the pong.
        pong = await wire.request("ping")
        assert pong.get("result") == {}, pong
        message: dict[str, Any] | None = wire.unsolicited[0] if wire.unsolicited else None
        for key in (k for k in keys if k is not None):
            with anyio.move_on_after(SILENCE if silent else EXCHANGE_TIMEOUT):
                message = await wire.wait_answer(key)
        if message is None:
            return NO_RESPONSE, {"{session}": found.group(1)}
        if "error" in message:
            text = json.dumps(message["error"], ensure_ascii=False, separators=(",", ":"))
        else:
            text = text_of(message["result"])
    return text, {"{session}": found.group(1)}


def _prepare(kind: str | None, home: Path) -> Path:
    """The database file a CLI row names as {db}."""
    path = home / "frs.db"
    if kind == "directory":
        path.mkdir()
    elif kind == "not sqlite":
        path.write_text("name,revision\nfrs,1\n")
    elif kind == "newer schema":
        # As a backup copy would be (VACUUM INTO, .backup): rollback journal, not WAL.
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("create table sessions (id text primary key)")
            conn.execute("insert into sessions values ('from-the-future')")
            conn.execute("pragma user_version = 999")
            conn.commit()
    elif kind == "another application's":
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("pragma application_id = 1196444487")  # "GPKG": a GeoPackage
            conn.execute("create table gpkg_contents (table_name text)")
            conn.commit()
    elif kind == "unstamped other tables":
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("create table notes (body text)")
            conn.commit()
    elif kind == "read-only empty":
        path.touch(mode=0o444)
        path.chmod(0o444)
    elif kind is None:
        path = home / "missing.jsonl"
    return path


async def observe_cli(probe: Cli, home: Path) -> tuple[str, Context]:
    db = _prepare(probe.prepare, home)
    untouched = ("newer schema", "another application's", "unstamped other tables")
    before = _sha(db) if probe.prepare in untouched else None
    prefix = _unprivileged() if probe.prepare == "read-only empty" else []
    args = [arg.replace("{db}", str(db)) for arg in probe.args]
    done = await anyio.run_process(
        [*prefix, *frs_mcp_command(), *args],
        stdin=subprocess.DEVNULL,
        check=False,
        env=server_env(home),
    )
    assert done.returncode == probe.exit, done.stderr.decode(errors="replace")
    if before is not None:
        assert _sha(db) == before, "the refused database was modified"
        assert _names(home, db.name) == [db.name], "the refused database got WAL files"
    context = {
        "{db}": str(db),
        "{usage}": parser().format_usage().rstrip("\n"),
        "{supported}": str(len(MIGRATIONS)),
    }
    return done.stderr.decode(errors="replace").rstrip("\n"), context


async def _record(wire: Wire, content: str) -> dict[str, Any]:
    return await wire.call_tool("frs_record", {"messages": [{"role": "tool", "content": content}]})


async def observe_served(probe: Served, home: Path) -> tuple[str, Context]:
    db = home / "frs.db"
    acked = Acknowledged()
    # Seeded as the wire client names itself: its current session is the seeded one.
    wire_client = Implementation(name=WIRE_CLIENT, version="1")
    async with Client(build_server(Settings(database=str(db))), client_info=wire_client) as client:
        session = await _seeded(client)
    prefix: Sequence[str]
    if probe.condition == "read-only file":
        _read_only(home)
        before = _sha(db)
        prefix = _unprivileged()
    else:
        prefix = ["prlimit", f"--fsize={_largest(home) + 300_000}:unlimited"]
    async with Wire.spawn(["--db", str(db)], home, prefix=prefix) as wire:
        await wire.initialize()
        view = await wire.call_tool("frs_view_thread", {})
        assert not view.get("isError"), text_of(view)
        assert "[1] User:" in text_of(view), text_of(view)
        refused: dict[str, Any] | None = None
        for attempt in range(20):
            result = await _record(wire, f"{attempt} " + "x" * 100_000)
            if result.get("isError"):
                refused = result
                break
            data = result["structuredContent"]
            acked.messages[(data["session_id"], data["numbers"][0])] = f"{attempt} " + "x" * 100_000
            assert probe.condition == "full disk", "a read-only file took a write"
        assert refused is not None, "the disk never filled"
        if probe.condition == "full disk":
            # Room again (the soft limit lifted): the same server writes without a restart.
            await anyio.run_process(
                ["prlimit", "--pid", str(wire.process.pid), "--fsize=unlimited:unlimited"]
            )
            again = await _record(wire, "after the disk had room again")
            assert not again.get("isError"), text_of(again)
    if probe.condition == "read-only file":
        assert _sha(db) == before, "the read-only file changed"
    else:
        check_database(db)
        check_acknowledged(db, acked)
    return text_of(refused), {"{session}": session}


def _request(
    port: int, method: str, path: str, headers: dict[str, str], body: bytes
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


@contextmanager
def http_server(home: Path) -> Iterator[int]:
    """`frs-mcp --transport both-http --token s3cret` on a free port, shared by the HTTP rows
    (none of them changes what another sees)."""
    stderr_path = home / "http.err"
    command = [*frs_mcp_command(), "--transport", "both-http", "--port", "0", "--token", TOKEN]
    with (
        stderr_path.open("wb") as stderr,
        subprocess.Popen(
            [*command, "--db", str(home / "frs.db")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=server_env(home),
        ) as process,
    ):
        try:
            deadline = time.monotonic() + 60
            while not (
                found := re.search(rb"http://127\.0\.0\.1:(\d+)/", stderr_path.read_bytes())
            ):
                assert process.poll() is None, stderr_path.read_text(errors="replace")
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)
            yield int(found.group(1))
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


async def observe_http(probe: Http, port: int) -> tuple[str, Context]:
    headers = {
        "Host": f"127.0.0.1:{port}",
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if probe.legacy_session:
        status, answer, _ = await anyio.to_thread.run_sync(
            _request, port, "POST", "/mcp", headers, INITIALIZE
        )
        assert status == 200
        headers["Mcp-Session-Id"] = answer["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        status, _, _ = await anyio.to_thread.run_sync(
            _request,
            port,
            "POST",
            "/mcp",
            headers,
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        )
        assert status == 202
    for name, value in probe.headers.items():
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    status, _, body = await anyio.to_thread.run_sync(
        _request, port, probe.method, probe.path, headers, probe.body
    )
    return f"{status} {body.decode(errors='replace').rstrip()}", {"{port}": str(port)}


async def observe(row: Row, home: Path, port: int | None = None) -> tuple[str, Context]:
    """What the sender of this row's input sees, and the values of its placeholders; HTTP rows
    go to the server on `port`."""
    probe = row.probe
    if isinstance(probe, Tool):
        return await observe_tool(probe, home)
    if isinstance(probe, Stdio):
        return await observe_stdio(probe, home, silent=row.sees == NO_RESPONSE)
    if isinstance(probe, Cli):
        return await observe_cli(probe, home)
    if isinstance(probe, Served):
        return await observe_served(probe, home)
    assert port is not None, "an HTTP row needs a running server"
    return await observe_http(probe, port)


def expected(row: Row, context: Context) -> str:
    text = row.sees
    for placeholder, value in context.items():
        text = text.replace(placeholder, value)
    return text


@pytest.fixture(scope="module")
def http_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with http_server(tmp_path_factory.mktemp("http")) as port:
        yield port


def _param(row: Row) -> Any:
    marks: list[pytest.MarkDecorator] = [] if isinstance(row.probe, Tool) else [pytest.mark.slow]
    if row.xfail:
        marks.append(pytest.mark.xfail(strict=True, reason=row.xfail))
    return pytest.param(row, id=row.key, marks=marks)


class TestBadInputs:
    def test_the_table_has_forty_rows_or_more_with_unique_keys(self) -> None:
        assert len(ROWS) >= 40
        assert len({row.key for row in ROWS}) == len(ROWS)
        assert {row.where for row in ROWS} >= {"stdio", "CLI", "database", "HTTP", "frs_record"}

    def test_docs_bad_inputs_md_is_the_rendering_of_the_table(self) -> None:
        assert DOC.read_text(encoding="utf-8") == render(), (
            "docs/bad-inputs.md is stale: run python -m tests.robust.bad_inputs"
        )

    @pytest.mark.parametrize("row", [_param(row) for row in ROWS])
    async def test_the_sender_sees_exactly_the_text_in_the_table(
        self, row: Row, tmp_path: Path, request: pytest.FixtureRequest
    ) -> None:
        port = request.getfixturevalue("http_port") if isinstance(row.probe, Http) else None
        seen, context = await observe(row, tmp_path, port)
        assert seen == expected(row, context)


class TestWire:
    """The harness recognises the answer to a line the server cannot read (issue 23: the
    invalid-UTF-8 row waited a minute for an id the answer could never carry)."""

    NOT_UTF8 = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "caf\xe9"}}'

    def test_a_line_that_is_not_utf8_has_no_id_the_server_can_read(self) -> None:
        assert _line_id(self.NOT_UTF8) is None
        assert _line_id(self.NOT_UTF8.replace(b"\xe9", b"e")) == 7

    async def test_request_line_returns_the_id_null_refusal_of_its_line(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Short, so that a harness that does not recognise the refusal fails soon.
        monkeypatch.setattr(wire_module, "EXCHANGE_TIMEOUT", 15.0)
        async with Wire.spawn(["--db", str(tmp_path / "frs.db")], tmp_path) as wire:
            await wire.initialize()
            refused = await wire.request_line(self.NOT_UTF8, 7)
            pong = await wire.request("ping")
        assert refused["id"] is None
        assert refused["error"]["code"] == -32700
        assert "not valid UTF-8" in refused["error"]["message"]
        assert pong.get("result") == {}
