"""The OpenAI Chat Completions API: POST /v1/chat/completions (SSE of chat.completion.chunk
objects ending in `data: [DONE]` when "stream" is true, else JSON). The path prefix before
/chat/completions is free.

A streamed answer: a first chunk with the role, content deltas, one chunk per tool call (id,
type, name, then argument pieces by `index`), a last chunk with finish_reason, a usage chunk
(empty choices) when stream_options.include_usage asks for one, then [DONE].
"""

from __future__ import annotations

import json
from typing import Any

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

DEFAULT_MODEL = "gpt-4.1"


def parse(body: Any) -> Seen:
    tools = tuple(
        Tool(
            (t.get("function") or {}).get("name", t.get("type", "")),
            (t.get("function") or {}).get("description", ""),
            (t.get("function") or {}).get("parameters"),
            t,
        )
        for t in body.get("tools") or ()
    )
    messages = body.get("messages") or []
    system = "\n".join(
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    tail: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        tail.insert(0, message)
    results = tuple(
        ToolResult(m.get("tool_call_id", ""), text_of(m.get("content")), False, m) for m in tail
    )
    user_text = ""
    if messages and messages[-1].get("role") == "user":
        user_text = text_of(messages[-1].get("content"))
    return Seen(system, tools, results, user_text, body)


class Chat:
    name = "chat"

    def route(self, exchange: Exchange) -> str | None:
        if exchange.method == "POST" and exchange.path.endswith("/chat/completions"):
            return "completions"
        return None

    def handle(self, route: str, exchange: Exchange, script: Script) -> Reply:
        body = exchange.json or {}

        def refuse(message: str) -> Reply:
            error = {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
            return json_reply(400, {"error": error})

        def render(turn: Turn) -> Reply:
            calls: list[dict[str, Any]] = [
                {
                    "id": new_id("call_"),
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in turn.calls
            ]
            finish = "tool_calls" if calls else "stop"
            source, output = input_tokens(turn, exchange.body), output_tokens(turn)
            usage = {
                "prompt_tokens": source,
                "completion_tokens": output,
                "total_tokens": source + output,
            }
            base: dict[str, Any] = {
                "id": new_id("chatcmpl-"),
                "created": now(),
                "model": body.get("model") or DEFAULT_MODEL,
                "system_fingerprint": "fp_scripted",
            }
            if not body.get("stream"):
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": turn.text or None,
                    "refusal": None,
                }
                if calls:
                    message["tool_calls"] = calls
                choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                return json_reply(
                    200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
                )

            def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
                choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
                return sse(None, {**base, "object": "chat.completion.chunk", "choices": [choice]})

            chunks = [chunk({"role": "assistant", "content": ""})]
            if turn.text:
                chunks += [chunk({"content": piece}) for piece in chunks_of(turn.text)]
            for index, call in enumerate(calls):
                head = {"index": index, "id": call["id"], "type": "function"}
                function = {"name": call["function"]["name"], "arguments": ""}
                chunks.append(chunk({"tool_calls": [{**head, "function": function}]}))
                chunks += [
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                    for piece in chunks_of(call["function"]["arguments"])
                ]
            chunks.append(chunk({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                payload: dict[str, Any] = {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": usage,
                }
                chunks.append(sse(None, payload))
            chunks.append(sse(None, "[DONE]"))
            return Reply(200, "text/event-stream", chunks, True)

        return converse(exchange, script, parse, render, refuse)


WIRE = Chat()
