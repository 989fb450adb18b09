"""The Anthropic Messages API: POST /v1/messages (JSON, or SSE when "stream" is true),
POST /v1/messages/count_tokens, GET /v1/models.

The stream follows the documented event flow: message_start (a Message with empty content),
ping, then per content block content_block_start / content_block_delta (text_delta or
input_json_delta) / content_block_stop, then message_delta (stop_reason, output usage) and
message_stop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.hosts.model import binding, caching
from tests.hosts.model.script import Exchange, Script, Seen, Tool, ToolResult, Turn
from tests.hosts.model.wire import (
    Reply,
    chunks_of,
    converse,
    estimate_tokens,
    input_tokens,
    json_reply,
    new_id,
    output_tokens,
    sse,
    text_of,
)

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"


def parse(body: Any) -> Seen:
    system = body.get("system") or ""
    tools = tuple(
        Tool(t.get("name", t.get("type", "")), t.get("description", ""), t.get("input_schema"), t)
        for t in body.get("tools") or ()
    )
    messages = body.get("messages") or []
    # The last turn is the last user message; system messages may follow it (Claude Code sends
    # mid-conversation reminders as role "system").
    talk = [m for m in messages if m.get("role") != "system"]
    last = talk[-1] if talk else {}
    results: list[ToolResult] = []
    user_text = ""
    if last.get("role") == "user":
        content = last.get("content")
        if isinstance(content, str):
            user_text = content
        else:
            texts = []
            for block in content or ():
                if block.get("type") == "tool_result":
                    results.append(
                        ToolResult(
                            block.get("tool_use_id", ""),
                            text_of(block.get("content")),
                            bool(block.get("is_error")),
                            block,
                        )
                    )
                elif block.get("type") == "text":
                    texts.append(block.get("text", ""))
            user_text = "\n".join(texts)
    return Seen(text_of(system), tools, tuple(results), user_text, body)


def _blocks(turn: Turn, thinking: dict[str, str] | None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [thinking] if thinking is not None else []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": new_id("toolu_01"),
                "name": call.name,
                "input": call.arguments,
            }
        )
    return blocks


def _usage(exchange: Exchange, turn: Turn, output: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens(turn, exchange.body),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
        "service_tier": "standard",
    }


def _events(message: dict[str, Any], blocks: list[dict[str, Any]]) -> Iterator[bytes]:
    yield sse("message_start", {"type": "message_start", "message": message})
    yield sse("ping", {"type": "ping"})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": part} for part in chunks_of(block["text"])]
        elif block["type"] == "thinking":
            # As the API streams it: the text in thinking deltas, then its signature.
            start = {"type": "thinking", "thinking": "", "signature": ""}
            # An omitted block's text never comes: it opens, gets its signature, closes.
            shown = chunks_of(block["thinking"]) if block["thinking"] else ()
            deltas = [
                *({"type": "thinking_delta", "thinking": part} for part in shown),
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:
            start = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in ["", *chunks_of(arguments)]
            ]
        yield sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for delta in deltas:
            yield sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})


class Anthropic:
    name = "anthropic"

    def route(self, exchange: Exchange) -> str | None:
        routes = {
            ("POST", "/v1/messages"): "messages",
            ("POST", "/v1/messages/count_tokens"): "count",
        }
        # GET /v1/models is also the OpenAI route: an Anthropic client says its API version.
        if exchange.header("anthropic-version") is not None:
            routes["GET", "/v1/models"] = "models"
        return routes.get((exchange.method, exchange.path))

    def handle(self, route: str, exchange: Exchange, script: Script) -> Reply:
        headers = {"request-id": new_id("req_011")}
        # Thinking sent back is checked as the API documents it, on counts too.
        checked = binding.check(exchange.json or {}, exchange.headers)
        # ... and so are its prompt-cache breakpoints.
        wrong = checked.error or caching.check(exchange.json or {})
        if wrong is not None and route in ("count", "messages"):
            exchange.error = wrong
            error = {"type": "invalid_request_error", "message": wrong}
            return json_reply(400, {"type": "error", "error": error}, headers)
        exchange.dropped = checked.dropped
        if route == "count":
            exchange.kind = "count"
            return json_reply(200, {"input_tokens": estimate_tokens(exchange.body)}, headers)
        if route == "models":
            exchange.kind = "other"
            model = {
                "type": "model",
                "id": DEFAULT_MODEL,
                "display_name": "Scripted",
                "created_at": "2025-09-29T00:00:00Z",
            }
            return json_reply(
                200,
                {
                    "data": [model],
                    "has_more": False,
                    "first_id": model["id"],
                    "last_id": model["id"],
                },
                headers,
            )
        body = exchange.json or {}

        def refuse(message: str) -> Reply:
            error = {"type": "invalid_request_error", "message": message}
            return json_reply(400, {"type": "error", "error": error}, headers)

        def render(turn: Turn) -> Reply:
            thinking = None
            if turn.thinking is not None:
                thinking = binding.answer_thinking(body, checked, turn.thinking)
            blocks = _blocks(turn, thinking)
            stop = "tool_use" if turn.calls else "end_turn"
            output = output_tokens(turn)
            message: dict[str, Any] = {
                "id": new_id("msg_01"),
                "type": "message",
                "role": "assistant",
                "model": body.get("model") or DEFAULT_MODEL,
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": _usage(exchange, turn, output),
            }
            if checked.transformations is not None:
                message["input_transformations"] = list(checked.transformations)
            if not body.get("stream"):
                return json_reply(200, message, headers)
            opening: dict[str, Any] = {"content": [], "stop_reason": None}
            opening["usage"] = _usage(exchange, turn, 1)
            start = {**message, **opening}
            tail = [
                sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": output},
                    },
                ),
                sse("message_stop", {"type": "message_stop"}),
            ]
            chunks = [*_events(start, blocks), *tail]
            return Reply(200, "text/event-stream", chunks, True, headers)

        return converse(exchange, script, parse, render, refuse)


WIRE = Anthropic()
