"""The OpenAI Chat Completions wire (`/v1/chat/completions`): messages read into `frs.wire` terms.

An assistant message (its text, its `tool_calls`) is an assistant run; the `tool` messages that
answer its calls (by `tool_call_id`) and user messages are user runs; system and developer
messages stand alone, never touched (`server.gateway.runs`). OpenCode (an OpenAI-compatible
provider with a baseURL) and Aider speak this wire. Nothing outside `messages` is ever changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from frs.conversations import from_headers
from frs.wire.compactions import find as find_compaction
from frs.wire.requests import Parsed, RewritePlan, Span, WireBlock, WireMessage, WireRequest
from server.gateway import runs
from server.gateway.spans import array_items, compact, decode, object_members
from server.gateway.wires import WireFormat

CHAT_PATH = "/v1/chat/completions"


class OpenAIChat(WireFormat):
    """The Chat Completions wire (`/v1/chat/completions`): OpenCode's, Aider's."""

    name = "openai-chat"
    path = CHAT_PATH

    def named(self, headers: Mapping[str, str]) -> tuple[str, str] | None:
        found = from_headers(headers)
        return (found.interface, found.id) if found else None

    def parse(
        self, body: str, headers: Mapping[str, str], previous: Parsed | None = None
    ) -> WireRequest:
        """The request's messages grouped into runs, with their spans; raises ValueError (or
        KeyError, TypeError) on a body that is not a Chat Completions request."""
        reader = runs.Reader(runs.kept(body, previous), _item)
        array: Span | None = None

        def read_messages(text: str, at: int) -> tuple[object, int]:
            nonlocal array
            _, array = array_items(text, at, reader)
            return None, array.end

        top, _ = object_members(body, 0, {"messages": read_messages})
        fields = {m.key: m.value for m in top}
        if array is None:
            raise ValueError("no messages")
        tools = fields.get("tools")
        model = fields.get("model")
        messages = runs.grouped(reader.items)
        found = find_compaction(messages)
        return WireRequest(
            messages=messages,
            messages_span=array,
            model=model if isinstance(model, str) else "",
            has_tools=bool(isinstance(tools, list) and tools),
            thinking_signed=False,
            summarise=found.summarise,
            instruction=found.instruction,
            summary=found.summary,
        )

    def answer_of(self, raw: bytes, content_type: str) -> WireMessage | None:
        """The assistant message of a finished answer (a stream of chunks that ended with a
        finish_reason, or a JSON completion), as the next request will carry it; else None."""
        if content_type.startswith("text/event-stream"):
            message = _streamed(raw.decode("utf-8"))
        elif content_type.startswith("application/json"):
            completion = json.loads(raw)
            choices = completion.get("choices") if isinstance(completion, dict) else None
            message = choices[0].get("message") if isinstance(choices, list) and choices else None
        else:
            return None
        if not isinstance(message, dict) or not (
            message.get("content") or message.get("tool_calls")
        ):
            return None
        item, _ = _item(compact({**message, "role": "assistant"}), 0)
        return WireMessage("assistant", Span(0, 0), item.blocks)

    def render(self, body: str, request: WireRequest, plan: RewritePlan) -> str:
        return runs.render(body, request.messages, plan, summary_item)

    def problems(self, payload: object) -> list[str]:
        """What Chat Completions would refuse in this request body (decoded JSON), in words: an
        unknown role, a user message or a result without content, an assistant message with
        neither text nor calls, a call id repeated, a `tool` message that does not answer a call
        of the assistant message just before its run, a call not answered by the run of `tool`
        messages right after it."""
        if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
            return ["the body is not an object with a messages array"]
        found: list[str] = []
        messages: list[Any] = payload["messages"]
        seen: set[str] = set()
        open_calls: dict[str, int] = {}  # the calls the current run of tool messages may answer
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("system", "developer", "user", "assistant", "tool"):
                found.append(f"{where} has role {role!r}")
                continue
            if role != "tool":
                found.extend(
                    f"messages[{at}] calls {call}, not answered before {where}"
                    for call, at in open_calls.items()
                )
                open_calls = {}
            if role == "tool":
                call = str(message.get("tool_call_id"))
                if call not in open_calls:
                    found.append(f"{where} answers {call}, not a call of the assistant just before")
                open_calls.pop(call, None)
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                if not calls and not message.get("content"):
                    found.append(f"{where} is an assistant message with neither content nor calls")
                for call in calls:
                    ident = str(call.get("id") if isinstance(call, dict) else None)
                    if ident in seen:
                        found.append(f"{where} repeats tool call id {ident}")
                    seen.add(ident)
                    open_calls[ident] = i
            elif role == "user" and not message.get("content"):
                found.append(f"{where} has no content")
        found.extend(
            f"messages[{at}] calls {call}, not answered" for call, at in open_calls.items()
        )
        return found


WIRE = OpenAIChat()


def _item(body: str, at: int) -> tuple[runs.Item, int]:
    value, end = decode(body, at)
    span = Span(at, end)
    if not isinstance(value, dict):
        raise ValueError("a message that is not an object")
    role = value.get("role")
    text = _text(value.get("content"))
    if role == "user":
        return runs.Item(
            "user", span, (WireBlock("text", span, text, digest=_hash("t", text)),)
        ), end
    if role == "tool":
        call = str(value.get("tool_call_id", ""))
        block = WireBlock("tool_result", span, text, tool_id=call, digest=_hash("r", call))
        return runs.Item("user", span, (block,)), end
    if role == "assistant":
        blocks: list[WireBlock] = []
        if text:
            blocks.append(WireBlock("text", span, text, digest=_hash("a", text)))
        for call in value.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments", "")
            blocks.append(
                WireBlock(
                    "tool_use",
                    span,
                    arguments if isinstance(arguments, str) else compact(arguments),
                    tool_id=str(call.get("id", "")),
                    name=str(function.get("name", "")),
                    digest=_hash("u", str(call.get("id", ""))),
                )
            )
        if not blocks:
            blocks.append(WireBlock("text", span, "", digest=_hash("a", "")))
        return runs.Item("assistant", span, tuple(blocks)), end
    # system, developer, anything else: stands alone, never touched.
    return runs.Item(
        "system", span, (WireBlock("other", span, text, digest=_hash("s", text)),)
    ), end


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if part.get("type") == "text" else f"[{part.get('type')}]"
            for part in content
            if isinstance(part, dict)
        )
    return ""


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _streamed(text: str) -> dict[str, Any] | None:
    """The message the chunks built (choice 0), or None unless a finish_reason came."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finished = False
    for event in text.split("\n\n"):
        data = "".join(line[5:].lstrip() for line in event.splitlines() if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        chunk = json.loads(data)
        if not isinstance(chunk, dict) or "error" in chunk:
            return None
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                kept = calls.setdefault(
                    int(call.get("index", 0)), {"type": "function", "function": {}}
                )
                if call.get("id"):
                    kept["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    kept["function"]["name"] = function["name"]
                pieces = kept["function"].get("arguments", "") + function.get("arguments", "")
                kept["function"]["arguments"] = pieces
            finished = finished or bool(choice.get("finish_reason"))
    if not finished:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def summary_item(role: str, texts: tuple[str, ...]) -> str:
    """A message holding the summaries as one string: every OpenAI-compatible server takes it."""
    return compact({"role": role, "content": "\n\n".join(texts)})
