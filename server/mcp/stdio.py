"""stdio that answers every line: the SDK's reader drops a line it cannot parse without a word,
so a client waits for its own timeout. Here a line that is not JSON (or not UTF-8) gets -32700,
JSON that is not a JSON-RPC 2.0 message gets -32600 (with its id when it has one), as does a
request whose id is neither a string nor an integer, and a line over the size cap is skipped
without being held in memory and refused the same way.

At the end of stdin, requests already read are answered before the server stops: a client
that writes its requests and closes its end (`printf ... | frs-mcp`, or the spec's shutdown
order) gets every answer rather than "Connection closed" for the ones still running.

stdout stays the SDK's (it also points fd 1 at stderr while serving, so a stray print cannot
corrupt the wire); we only watch the answers go by.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
_DRAIN_CHUNK = 1024 * 1024
_ANSWER_WAIT = 60.0  # seconds, after stdin ends, for the requests still running


class _InFlight:
    """Ids of the requests read from stdin and not yet answered."""

    def __init__(self) -> None:
        self._ids: set[Any] = set()
        self._changed = anyio.Event()

    def add(self, id_: Any) -> None:
        self._ids.add(id_)

    def done(self, id_: Any) -> None:
        self._ids.discard(id_)
        self._changed.set()
        self._changed = anyio.Event()

    async def drained(self) -> None:
        while self._ids:
            await self._changed.wait()


class _NoInput:
    """The stdin handed to the SDK's transport: it ends at once, because we read stdin."""

    def __aiter__(self) -> _NoInput:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


def _error(id_: Any, code: int, message: str) -> SessionMessage:
    request_id = id_ if _valid_id(id_) else None
    return SessionMessage(
        types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )
    )


def _valid_id(id_: Any) -> bool:
    return isinstance(id_, str | int) and not isinstance(id_, bool)


class Oversized:
    """A line longer than the cap: read past and dropped, never held whole."""


OVERSIZED = Oversized()


@dataclass(frozen=True, slots=True)
class Refusal:
    """The answer to a line that is not a request."""

    answer: SessionMessage


def read_line(source: BinaryIO, limit: int) -> bytes | Oversized | None:
    """The next line, OVERSIZED for one over `limit` bytes, None at EOF."""
    line = source.readline(limit + 1)
    if not line:
        return None
    if len(line) > limit and not line.endswith(b"\n"):
        while True:
            rest = source.readline(_DRAIN_CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        return OVERSIZED
    return line


def parse_line(line: bytes | Oversized, limit: int) -> SessionMessage | Refusal:
    """The message a line carries, or the answer to a line that carries none."""
    if isinstance(line, Oversized):
        too_large = (
            f"Request too large: a line over {limit:,} bytes. Send smaller requests "
            "(record a long thread in batches)."
        )
        return Refusal(_error(None, types.INVALID_REQUEST, too_large))
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Replacing the bytes would store text the client never sent; JSON is UTF-8 (RFC 8259).
        not_utf8 = (
            f"Parse error: the line is not valid UTF-8 (byte 0x{line[exc.start]:02x} at offset "
            f"{exc.start:,}). Send JSON encoded as UTF-8."
        )
        return Refusal(_error(None, types.PARSE_ERROR, not_utf8))
    try:
        value = json.loads(text)
    except ValueError as exc:
        return Refusal(_error(None, types.PARSE_ERROR, f"Parse error: not JSON ({exc})."))
    except RecursionError:
        too_deep = "Parse error: JSON nested too deeply to read."
        return Refusal(_error(None, types.PARSE_ERROR, too_deep))
    if (
        isinstance(value, dict)
        and "method" in value
        and "id" in value
        and not _valid_id(value["id"])
    ):
        # The SDK would take it for a notification and never answer; MCP ids are strings or
        # integers, never null.
        bad_id = (
            f"Invalid Request: the id is {json.dumps(value['id'])[:40]}; a request id is a "
            "string or an integer (leave it out for a notification)."
        )
        return Refusal(_error(None, types.INVALID_REQUEST, bad_id))
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except (ValidationError, RecursionError):
        id_ = value.get("id") if isinstance(value, dict) else None
        not_rpc = (
            'Invalid Request: not a JSON-RPC 2.0 message (an object with jsonrpc "2.0", a '
            "method, and params as an object if any)."
        )
        return Refusal(_error(id_, types.INVALID_REQUEST, not_rpc))
    return SessionMessage(message)


async def _pump(
    source: BinaryIO,
    limit: int,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    to_client: MemoryObjectSendStream[SessionMessage],
    in_flight: _InFlight,
) -> None:
    async with to_server, to_client:  # closing the clone lets the SDK's writer finish
        while True:
            line = await anyio.to_thread.run_sync(read_line, source, limit, abandon_on_cancel=True)
            if line is None:
                # Closing the server's input cancels what it is still doing: answer that first.
                with anyio.move_on_after(_ANSWER_WAIT):
                    await in_flight.drained()
                return
            if not isinstance(line, Oversized) and not line.strip():
                continue
            parsed = parse_line(line, limit)
            if isinstance(parsed, Refusal):
                log.info("answered a stdin line that is not a request: %s", parsed.answer.message)
                await to_client.send(parsed.answer)
                continue
            message = parsed.message
            if isinstance(message, types.JSONRPCRequest):
                in_flight.add(message.id)
            elif isinstance(message, types.JSONRPCNotification) and (
                message.method == "notifications/cancelled"
            ):
                # A cancelled request gets no answer.
                in_flight.done((message.params or {}).get("requestId"))
            await to_server.send(parsed)


async def _watch_answers(
    from_server: MemoryObjectReceiveStream[SessionMessage],
    to_client: MemoryObjectSendStream[SessionMessage],
    in_flight: _InFlight,
) -> None:
    async with from_server, to_client:
        async for answer in from_server:
            await to_client.send(answer)
            message = answer.message
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                in_flight.done(message.id)


@asynccontextmanager
async def guarded_stdio(
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, source: BinaryIO | None = None
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """(read, write) streams for `Server.run`, reading stdin (or `source`) ourselves."""
    stdin = source or sys.stdin.buffer
    async with stdio_server(stdin=_NoInput()) as (_, write_stream):  # type: ignore[arg-type]
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        answers, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        in_flight = _InFlight()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump, stdin, max_line_bytes, to_server, write_stream.clone(), in_flight)
            tg.start_soon(_watch_answers, from_server, write_stream, in_flight)
            try:
                yield from_client, answers
            finally:
                tg.cancel_scope.cancel()
