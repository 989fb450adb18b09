"""The Gemini API (generativelanguage, as the @google/genai SDK calls it with
GOOGLE_GEMINI_BASE_URL): POST /{version}/models/{model}:generateContent (JSON),
:streamGenerateContent?alt=sse (SSE of GenerateContentResponse chunks) and :countTokens.

A request is `contents` (turns of role "user" or "model", each a list of parts: `text`,
`functionCall` {name, args, id?}, `functionResponse` {name, response, id?}), an optional
`systemInstruction` and `tools` ([{functionDeclarations: [{name, description,
parametersJsonSchema or parameters}]}]). The tool results the model is shown are the
functionResponse parts of the last user turn. The API wants an object as `response`: a host
that forwards text wraps it as {"output": TEXT} or {"error": TEXT} (Gemini CLI does), and that
TEXT is the result's text, as a tool_result's text is on the other wires; any other object is
the result's text as compact JSON. `raw` keeps the part as sent.

A streamed answer: one chunk per text piece, then one chunk holding every functionCall part,
the last chunk carrying finishReason STOP and usageMetadata (the Gemini API ends a turn with
STOP whether or not it calls functions).
"""

from __future__ import annotations

import json
import re
from typing import Any

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
)

DEFAULT_MODEL = "gemini-2.5-pro"
_PATH = re.compile(
    r"/v1(?:alpha|beta)?\d*/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)"
)


def _texts(parts: Any) -> str:
    return "\n".join(p["text"] for p in parts or () if isinstance(p.get("text"), str))


def _wrapped(response: Any) -> tuple[str | None, str | None]:
    """("output" or "error", TEXT) for a response that only wraps a text, else (None, None)."""
    if isinstance(response, dict) and len(response) == 1:
        [(key, value)] = response.items()
        if key in ("output", "error") and isinstance(value, str):
            return key, value
    return None, None


def parse(body: Any) -> Seen:
    system = _texts((body.get("systemInstruction") or {}).get("parts"))
    tools = tuple(
        Tool(
            declaration.get("name", ""),
            declaration.get("description", ""),
            declaration.get("parametersJsonSchema", declaration.get("parameters")),
            declaration,
        )
        for group in body.get("tools") or ()
        for declaration in group.get("functionDeclarations") or ()
    )
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    results: list[ToolResult] = []
    user_text = ""
    if last.get("role", "user") == "user":
        for part in last.get("parts") or ():
            answer = part.get("functionResponse")
            if answer is None:
                continue
            response = answer.get("response")
            key, text = _wrapped(response)
            if text is None:
                text = json.dumps(response, ensure_ascii=False, separators=(",", ":"))
            results.append(
                ToolResult(answer.get("id") or answer.get("name", ""), text, key == "error", answer)
            )
        user_text = _texts(last.get("parts"))
    return Seen(system, tuple(tools), tuple(results), user_text, body)


def _usage(exchange: Exchange, turn: Turn) -> dict[str, int]:
    source, output = input_tokens(turn, exchange.body), output_tokens(turn)
    return {
        "promptTokenCount": source,
        "candidatesTokenCount": output,
        "totalTokenCount": source + output,
    }


class Gemini:
    name = "gemini"

    def route(self, exchange: Exchange) -> str | None:
        found = _PATH.fullmatch(exchange.path)
        if exchange.method != "POST" or found is None:
            return None
        return found.group(2)

    def handle(self, route: str, exchange: Exchange, script: Script) -> Reply:
        if route == "countTokens":
            exchange.kind = "count"
            return json_reply(200, {"totalTokens": estimate_tokens(exchange.body)})
        found = _PATH.fullmatch(exchange.path)
        model = found.group(1) if found else DEFAULT_MODEL

        def refuse(message: str) -> Reply:
            # 400 INVALID_ARGUMENT: the SDK and the host do not retry it.
            error = {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
            return json_reply(400, {"error": error})

        def render(turn: Turn) -> Reply:
            calls = [
                {"functionCall": {"name": call.name, "args": call.arguments}} for call in turn.calls
            ]
            base = {"modelVersion": model, "responseId": new_id("", 22)}

            def chunk(parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
                candidate: dict[str, Any] = {
                    "content": {"role": "model", "parts": parts},
                    "index": 0,
                }
                payload: dict[str, Any] = {"candidates": [candidate], **base}
                if last:
                    candidate["finishReason"] = "STOP"
                    payload["usageMetadata"] = _usage(exchange, turn)
                return payload

            if route == "generateContent":
                parts = ([{"text": turn.text}] if turn.text else []) + calls
                return json_reply(200, chunk(parts or [{"text": ""}], True))
            pieces: list[list[dict[str, Any]]] = [
                [{"text": piece}] for piece in chunks_of(turn.text) if piece
            ]
            if calls:
                pieces.append(calls)
            if not pieces:
                pieces.append([{"text": ""}])
            events = [
                sse(None, chunk(parts, index == len(pieces) - 1))
                for index, parts in enumerate(pieces)
            ]
            return Reply(200, "text/event-stream", events, True)

        return converse(exchange, script, parse, render, refuse)


WIRE = Gemini()
