"""The OpenAI Responses API: POST /v1/responses (SSE when "stream" is true, else JSON), and
GET /v1/models. The path prefix before /responses is free (a host's base_url may or may not end
in /v1).

The stream follows the documented events, each with a rising sequence_number:
response.created, response.in_progress, then per output item response.output_item.added, for a
message response.content_part.added / response.output_text.delta / response.output_text.done /
response.content_part.done, for a function call response.function_call_arguments.delta /
.done, for a reasoning item's summary (when asked) response.reasoning_summary_part.added /
response.reasoning_summary_text.delta / .done / response.reasoning_summary_part.done, then
response.output_item.done (a reasoning item's encrypted content comes whole only there); last
response.completed with the whole response and its usage.

A turn that thinks answers with a reasoning item first, and the reasoning items a request
sends back are checked as the API checks them (`tests.hosts.model.reasoning`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.hosts.model import reasoning
from tests.hosts.model.script import Exchange, Script, Seen, Tool, ToolResult, Turn
from tests.hosts.model.wire import (
    Reply,
    chunks_of,
    converse,
    input_tokens,
    json_reply,
    new_id,
    now,
    output_tokens,
    sse,
    text_of,
)

DEFAULT_MODEL = "gpt-5"


def parse(body: Any) -> Seen:
    tools = tuple(
        Tool(t.get("name") or t.get("type", ""), t.get("description", ""), t.get("parameters"), t)
        for t in body.get("tools") or ()
    )
    items = body.get("input") or []
    if isinstance(items, str):
        return Seen(text_of(body.get("instructions")), tools, (), items, body)
    # The last turn's results: the run of result items at the end of the input, past any
    # developer message the host appended after them (Codex announces tools that way).
    tail: list[dict[str, Any]] = []
    for item in reversed(items):
        if item.get("type") in RESULTS:
            tail.insert(0, item)
        elif item.get("type", "message") == "message" and item.get("role") != "user" and not tail:
            continue
        else:
            break
    results = tuple(
        ToolResult(item.get("call_id", ""), _output_text(item), False, item) for item in tail
    )
    user_text = ""
    if items and items[-1].get("type", "message") == "message" and items[-1].get("role") == "user":
        user_text = text_of(items[-1].get("content"))
    return Seen(text_of(body.get("instructions")), tools, results, user_text, body)


RESULTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")


def _output_text(item: dict[str, Any]) -> str:
    """What a result item shows the model: a function output's text (a string, or content
    parts), or the tools a tool search returned, as JSON."""
    if item.get("type") == "tool_search_output":
        return json.dumps(item.get("tools"), separators=(",", ":"))
    output = item.get("output")
    if isinstance(output, dict) and "content" in output:  # {content, success} in older hosts
        return text_of(output["content"])
    return text_of(output)


def _items(turn: Turn, body: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.thinking is not None:
        items.append(reasoning.item(body, turn.thinking))
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": new_id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for call in turn.calls:
        if call.kind == "tool_search":
            items.append(
                {
                    "type": "tool_search_call",
                    "id": new_id("tsc_"),
                    "call_id": new_id("call_"),
                    "execution": "client",
                    "arguments": call.arguments,
                    "status": "completed",
                }
            )
            continue
        item = {
            "type": "function_call",
            "id": new_id("fc_"),
            "call_id": new_id("call_"),
            "name": call.name,
            "arguments": json.dumps(call.arguments),
            "status": "completed",
        }
        if call.namespace is not None:
            item["namespace"] = call.namespace
        items.append(item)
    return items


def _events(response: dict[str, Any], items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "response": opening}
    yield {"type": "response.in_progress", "response": opening}
    for index, item in enumerate(items):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
            part = {"type": "output_text", "text": "", "annotations": []}
            yield {"type": "response.content_part.added", **where, "content_index": 0, "part": part}
            for piece in chunks_of(text):
                yield {
                    "type": "response.output_text.delta",
                    **where,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
            yield {
                "type": "response.output_text.done",
                **where,
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
            yield {
                "type": "response.content_part.done",
                **where,
                "content_index": 0,
                "part": item["content"][0],
            }
        elif item["type"] == "reasoning":
            opening = {k: v for k, v in item.items() if k != "encrypted_content"}
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**opening, "summary": []},
            }
            for number, part in enumerate(item["summary"]):
                at = {**where, "summary_index": number}
                empty = {"type": "summary_text", "text": ""}
                yield {"type": "response.reasoning_summary_part.added", **at, "part": empty}
                for piece in chunks_of(part["text"]):
                    yield {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
                text = part["text"]
                yield {"type": "response.reasoning_summary_text.done", **at, "text": text}
                yield {"type": "response.reasoning_summary_part.done", **at, "part": part}
        elif item["type"] == "tool_search_call":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress"},
            }
        else:
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "arguments": ""},
            }
            for piece in chunks_of(item["arguments"]):
                yield {"type": "response.function_call_arguments.delta", **where, "delta": piece}
            yield {
                "type": "response.function_call_arguments.done",
                **where,
                "name": item["name"],
                "arguments": item["arguments"],
            }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    yield {"type": "response.completed", "response": response}


class Responses:
    name = "responses"

    def route(self, exchange: Exchange) -> str | None:
        if exchange.method == "POST" and exchange.path.endswith("/responses"):
            return "responses"
        if exchange.method == "GET" and exchange.path.endswith("/models"):
            return "models"
        return None

    def handle(self, route: str, exchange: Exchange, script: Script) -> Reply:
        headers = {"x-request-id": new_id("req_")}
        if route == "models":
            exchange.kind = "other"
            model = {"id": DEFAULT_MODEL, "object": "model", "created": now(), "owned_by": "test"}
            return json_reply(200, {"object": "list", "data": [model]}, headers)
        body = exchange.json or {}

        def refuse(message: str, code: str | None = None, param: str | None = None) -> Reply:
            error = {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": code,
            }
            return json_reply(400, {"error": error}, headers)

        refused = reasoning.check(body)
        if refused is not None:
            exchange.error = refused.message
            return refuse(refused.message, refused.code, refused.param)

        def render(turn: Turn) -> Reply:
            items = _items(turn, body)
            source = input_tokens(turn, exchange.body)
            # Reasoning tokens are output tokens too.
            thought = len(turn.thinking or "") // 4
            output = output_tokens(turn) + thought
            response: dict[str, Any] = {
                "id": new_id("resp_"),
                "object": "response",
                "created_at": now(),
                "status": "completed",
                "error": None,
                "incomplete_details": None,
                "instructions": body.get("instructions"),
                "model": body.get("model") or DEFAULT_MODEL,
                "output": items,
                "parallel_tool_calls": body.get("parallel_tool_calls", True),
                "tool_choice": body.get("tool_choice", "auto"),
                "tools": body.get("tools") or [],
                "usage": {
                    "input_tokens": source,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": output,
                    "output_tokens_details": {"reasoning_tokens": thought},
                    "total_tokens": source + output,
                },
            }
            if not body.get("stream"):
                return json_reply(200, response, headers)
            chunks = [
                sse(event["type"], {**event, "sequence_number": number})
                for number, event in enumerate(_events(response, items))
            ]
            return Reply(200, "text/event-stream", chunks, True, headers)

        return converse(exchange, script, parse, render, refuse)


WIRE = Responses()
