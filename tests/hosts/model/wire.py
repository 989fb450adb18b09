"""What a wire (one provider's HTTP API) gives the server, and the pieces wires share.

A wire claims routes (`route` returns a name for a request it serves, or None) and answers
them (`handle`). Adding a wire is one module with a `WIRE` object and one line in
server.WIRES.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from tests.hosts.model.script import Exchange, Script, ScriptOverrun, Seen, Turn


@dataclass
class Reply:
    """An HTTP answer. A streamed reply goes out in chunked encoding, one chunk per item of
    `chunks`, flushed as it is produced (SSE events reach the host one by one)."""

    status: int
    content_type: str
    chunks: Iterable[bytes]
    stream: bool = False
    headers: dict[str, str] = field(default_factory=dict)


class Wire(Protocol):
    name: str

    def route(self, exchange: Exchange) -> str | None:
        """The name of this wire's route for the request (its method, path and headers are
        set; its body is not parsed yet), or None."""
        ...

    def handle(self, route: str, exchange: Exchange, script: Script) -> Reply: ...


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, "application/json", [json.dumps(payload).encode()], False, headers or {})


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event; `event` None writes a data-only event (Chat Completions)."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {text}\n\n".encode()


def new_id(prefix: str, size: int = 24) -> str:
    """A provider-looking id: the prefix and random base62-ish characters."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(size))


def now() -> int:
    return int(time.time())


def estimate_tokens(body: bytes) -> int:
    """A plausible input token count for a usage block (about four bytes a token)."""
    return max(1, len(body) // 4)


def input_tokens(turn: Turn, body: bytes) -> int:
    """The input tokens an answer reports: the turn's own figure, or the estimate."""
    return estimate_tokens(body) if turn.input_tokens is None else turn.input_tokens


def output_tokens(turn: Turn) -> int:
    size = len(turn.text) + sum(len(json.dumps(call.arguments)) + 20 for call in turn.calls)
    return max(1, size // 4)


def converse(
    exchange: Exchange,
    script: Script,
    parse: Callable[[Any], Seen],
    render: Callable[[Turn], Reply],
    refuse: Callable[[str], Reply],
) -> Reply:
    """The conversation route every wire shares: parse the body into what the model sees, get
    the script's turn, write it out; a failed step or an overrun is refused with the wire's
    own non-retryable error, so the host stops at once instead of retrying."""
    try:
        exchange.seen = parse(exchange.json)
    except Exception as exc:
        exchange.error = f"unparsed {exchange.wire} request: {type(exc).__name__}: {exc}"
        return refuse(exchange.error)
    try:
        turn = script.answer(exchange, exchange.seen)
    except ScriptOverrun as exc:
        return refuse(str(exc))
    except Exception as exc:
        return refuse(exchange.error or f"{type(exc).__name__}: {exc}")
    return render(turn)


def chunks_of(text: str, size: int = 24) -> Iterator[str]:
    """`text` in pieces, as a model streams it (at least one piece, possibly empty)."""
    if not text:
        yield ""
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


def text_of(content: Any) -> str:
    """The text of a content value: a string, or a list of parts with "text" joined by new
    lines (any other part, such as an image or a tool reference, as its compact JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(json.dumps(part, separators=(",", ":")))
        return "\n".join(parts)
    return json.dumps(content)
