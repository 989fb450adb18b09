"""A `frs-mcp` subprocess spoken to with raw JSON-RPC lines over its stdin and stdout.

Raw lines, not the SDK client, so a test knows exactly which responses reached it (a write is
acknowledged when its response line has been read), can send malformed or oversized lines, and
can SIGKILL the server between any two bytes.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

PROTOCOL = "2025-11-25"
#: Generous bound on any one exchange, so a hung server fails the test instead of hanging it.
EXCHANGE_TIMEOUT = 60.0
_MAX_LINE = 256 * 1024 * 1024


def frs_mcp_command() -> list[str]:
    """The installed `frs-mcp` script beside this interpreter, else `python -m server`."""
    script = Path(sys.executable).with_name("frs-mcp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "server"]


def server_env(home: Path) -> dict[str, str]:
    """The parent's environment without database, token or scope overrides, its data directory
    under `home`."""
    env = {k: v for k, v in os.environ.items() if k not in ("FRS_DB", "FRS_TOKEN", "FRS_SCOPE")}
    env["XDG_DATA_HOME"] = str(home / "xdg-data")
    return env


WIRE_CLIENT = "frs-robustness"  # the name the wire client gives itself


class ServerGone(Exception):
    """The server's stdout ended before the response arrived (it exited or was killed)."""


class Wire:
    """One server process; `request` sends a line and waits for the response with its id."""

    def __init__(self, process: anyio.abc.Process, stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self.unsolicited: list[dict[str, Any]] = []  # lines that answer no pending request
        self.notifications: list[dict[str, Any]] = []  # e.g. a new session's list change
        self.closed = False
        self._ids = itertools.count(1)
        self._pending: dict[int | str, anyio.Event] = {}
        self._answers: dict[int | str, dict[str, Any]] = {}
        # The id of the line `request_line` is waiting on: an error with id null that arrives
        # meanwhile is the server's answer to it (a line it could not read carries no id it
        # could echo: invalid UTF-8, invalid JSON), not a reason to wait out EXCHANGE_TIMEOUT.
        self._exchange: int | str | None = None
        # Lines sent by `send_line` whose answers nobody waits for: until the next exchange is
        # answered (by then the server has read them), an id-null error may be theirs.
        self._loose = False

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls,
        args: Sequence[str],
        home: Path,
        prefix: Sequence[str] = (),
        stderr_name: str = "server.err",
    ) -> AsyncIterator[Wire]:
        """Start `prefix... frs-mcp args...`; on exit the process is killed if still running."""
        stderr_path = home / stderr_name
        with stderr_path.open("ab") as stderr:
            process = await anyio.open_process(
                [*prefix, *frs_mcp_command(), *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=server_env(home),
            )
        wire = cls(process, stderr_path)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire._read_loop)
                try:
                    yield wire
                finally:
                    wire.kill()
                    with anyio.CancelScope(shield=True):
                        await process.wait()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await process.aclose()

    def kill(self) -> None:
        """SIGKILL, unless the process has already exited."""
        if self.process.returncode is None:
            with suppress(ProcessLookupError):
                self.process.kill()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def _read_loop(self) -> None:
        assert self.process.stdout is not None
        lines = BufferedByteReceiveStream(self.process.stdout)
        try:
            while True:
                line = await lines.receive_until(b"\n", _MAX_LINE)
                message = json.loads(line)
                key = message.get("id") if isinstance(message, dict) else None
                if (
                    key is None
                    and _refusal(message)
                    and not self._loose
                    and self._exchange in self._pending
                ):
                    key = self._exchange  # the answer to the line it could not read
                if key is not None and key in self._pending:
                    self._answers[key] = message
                    self._pending.pop(key).set()
                elif isinstance(message, dict) and "method" in message and "id" not in message:
                    self.notifications.append(message)  # the server's news, not an answer
                else:
                    self.unsolicited.append(message)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
            pass
        finally:
            self.closed = True
            for event in self._pending.values():
                event.set()

    async def send_line(self, line: bytes) -> None:
        """Write one line (a newline is added) to the server's stdin; its answer, if any, is
        waited for with `expect` and `wait_answer`, or found in `unsolicited`."""
        self._loose = True
        await self._write(line)

    async def _write(self, line: bytes) -> None:
        assert self.process.stdin is not None
        try:
            await self.process.stdin.send(line + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ServerGone("the server's stdin is closed") from exc

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._write(json.dumps(message).encode())

    def expect(self, key: int | str) -> None:
        """Watch for a response with this id (see `answer`) to a line sent with `send_line`."""
        self._pending[key] = anyio.Event()

    def answer(self, key: int | str) -> dict[str, Any] | None:
        """The response with this id, if it has arrived."""
        return self._answers.get(key)

    async def wait_answer(self, key: int | str) -> dict[str, Any]:
        event = self._pending.get(key)
        if event is not None:
            with anyio.fail_after(EXCHANGE_TIMEOUT):
                await event.wait()
        if key not in self._answers:
            raise ServerGone("the server closed its stdout before answering")
        return self._answers[key]

    async def request_line(self, line: bytes, key: int | str) -> dict[str, Any]:
        """Send a prepared line and wait for the response carrying `key` as its id, or for the
        error with id null the server sends for a line whose id it cannot read."""
        if self.closed:
            raise ServerGone("the server's stdout is closed")
        event = self._pending[key] = anyio.Event()
        self._exchange = key
        try:
            await self._write(line)
            with anyio.fail_after(EXCHANGE_TIMEOUT):
                await event.wait()
        finally:
            self._exchange = None
        if key not in self._answers:
            raise ServerGone("the server closed its stdout before answering")
        self._loose = False  # the server has read every line before this one
        return self._answers.pop(key)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        key = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": key, "method": method}
        if params is not None:
            message["params"] = params
        return await self.request_line(json.dumps(message).encode(), key)

    async def initialize(self) -> dict[str, Any]:
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": WIRE_CLIENT, "version": "1"},
            },
        )
        await self.notify("notifications/initialized")
        return answer

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The `result` of tools/call (with `isError`); a JSON-RPC error raises AssertionError."""
        answer = await self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in answer, f"{name} answered a protocol error: {answer}"
        result: dict[str, Any] = answer["result"]
        return result


def _refusal(message: object) -> bool:
    """A JSON-RPC error with id null: the server's answer to a line it could not read."""
    return isinstance(message, dict) and message.get("id", 0) is None and "error" in message


def text_of(result: dict[str, Any]) -> str:
    """The text of a tool result's first content block."""
    return str(result["content"][0]["text"])


_LISTENING = re.compile(rb"http://127\.0\.0\.1:(\d+)/")


@asynccontextmanager
async def http_server(
    args: Sequence[str], home: Path, stderr_name: str = "http.err"
) -> AsyncIterator[int]:
    """Start `frs-mcp --port 0 args...` (an HTTP transport); yields the port it announced, and
    stops it with SIGTERM (SIGKILL if it lingers) on exit."""
    async with http_process(args, home, stderr_name) as (port, _):
        yield port


@asynccontextmanager
async def http_process(
    args: Sequence[str], home: Path, stderr_name: str = "http.err"
) -> AsyncIterator[tuple[int, anyio.abc.Process]]:
    """`http_server`, yielding the process too (to kill it)."""
    stderr_path = home / stderr_name
    with stderr_path.open("ab") as stderr:
        seen = stderr.tell()  # an earlier server may have written here; read only what is new
        process = await anyio.open_process(
            [*frs_mcp_command(), "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=server_env(home),
        )
    try:
        with anyio.fail_after(EXCHANGE_TIMEOUT):
            while not (found := _LISTENING.search(stderr_path.read_bytes()[seen:])):
                if process.returncode is not None:
                    raise ServerGone(stderr_path.read_text(errors="replace"))
                await anyio.sleep(0.05)
        yield int(found.group(1)), process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(15):
                    await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()
