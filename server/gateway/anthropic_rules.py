"""The rules the Anthropic Messages API enforces on a request body, in words: what the gateway
checks a rewrite against before sending it (`server.gateway.wires.refusal_of`), and what the
tests check every request with."""

from __future__ import annotations

from typing import Any

from frs.wire.anchors import broken, lifetime, markers


def problems(payload: object) -> list[str]:
    """What the Messages API would refuse in this request body (decoded JSON), in words; empty
    when it keeps the rules the gateway must never break: user and assistant messages
    alternate from a user message (system messages between them aside), no message is empty,
    every tool call is answered first thing in the next message and every result answers a
    call of the message just before, call ids are unique, thinking blocks carry their
    signatures, a deferred tool (`defer_loading`) is called only after a `tool_reference`
    loaded it (else the model could not have called it, and would not see it now), at most
    four prompt-cache breakpoints, none of 1 hour after one of 5 minutes."""
    if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
        return ["the body is not an object with a messages array"]
    found: list[str] = []
    messages: list[Any] = payload["messages"]
    tools = payload.get("tools")
    deferred = {
        str(t.get("name"))
        for t in (tools if isinstance(tools, list) else [])
        if isinstance(t, dict) and t.get("defer_loading") is True
    }
    loaded: set[str] = set()
    seen_ids: set[str] = set()
    turn = 0  # user and assistant messages so far
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant", "system"):
            found.append(f"{where} is not a user, assistant or system message")
            continue
        if role != "system":
            expected = "user" if turn % 2 == 0 else "assistant"
            turn += 1
            if role != expected:
                found.append(f"{where} is {role}, roles must alternate from user")
        blocks = _blocks(message.get("content"))
        if not blocks:
            found.append(f"{where} has no content")
        for j, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "tool_use":
                call = str(block.get("id"))
                if call in seen_ids:
                    found.append(f"{where}.content[{j}] repeats tool_use id {call}")
                seen_ids.add(call)
                tool = str(block.get("name"))
                if tool in deferred and tool not in loaded:
                    found.append(
                        f"{where}.content[{j}] calls deferred tool {tool}, which no "
                        "tool_reference before it loads"
                    )
            loaded.update(_references(block))
            if kind == "thinking" and not (
                isinstance(block.get("signature"), str) and isinstance(block.get("thinking"), str)
            ):
                found.append(f"{where}.content[{j}] is a thinking block without its signature")
            if kind == "redacted_thinking" and not isinstance(block.get("data"), str):
                found.append(f"{where}.content[{j}] is redacted thinking without its data")
        found.extend(_pairing(messages, i, blocks))
    found.extend(_breakpoints(payload))
    return found


def _breakpoints(payload: dict[str, Any]) -> list[str]:
    """The request's prompt-cache breakpoints, over the limit or out of lifetime order
    (`frs.wire.anchors.broken`, after the prompt caching page); a top-level one (automatic
    caching) takes a slot too."""
    found = markers([payload.get(part) for part in ("tools", "system", "messages")])
    automatic = lifetime(payload.get("cache_control"))
    return broken([*found, *([automatic] if automatic else [])])


def _references(block: dict[str, Any]) -> set[str]:
    """The tools a block loads: the tool_references of a tool result (a client-side tool
    search) or of the server-side tool search's result."""
    content = block.get("content")
    if block.get("type") == "tool_search_tool_result" and isinstance(content, dict):
        content = content.get("tool_references")
    if block.get("type") not in ("tool_result", "tool_search_tool_result"):
        return set()
    return {
        str(part.get("tool_name"))
        for part in (content if isinstance(content, list) else [])
        if isinstance(part, dict) and part.get("type") == "tool_reference"
    }


def _blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": None} for b in content]
    return []


def _pairing(messages: list[Any], i: int, blocks: list[dict[str, Any]]) -> list[str]:
    """Results of message i answer the calls of message i-1, first thing; calls of an
    assistant message i are all answered by message i+1 (when there is one)."""
    found: list[str] = []
    where = f"messages[{i}]"
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        kinds = [b.get("type") for b in blocks]
        if kinds[: len(results)] != ["tool_result"] * len(results):
            found.append(f"{where} has content before its tool_result blocks")
        previous = _blocks(messages[i - 1].get("content")) if i > 0 else []
        called = {str(b.get("id")) for b in previous if b.get("type") == "tool_use"}
        found.extend(
            f"{where} answers tool_use {b.get('tool_use_id')}, not called in messages[{i - 1}]"
            for b in results
            if str(b.get("tool_use_id")) not in called
        )
    calls = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
    if calls and i + 1 < len(messages) and isinstance(messages[i + 1], dict):
        answered = {
            str(b.get("tool_use_id"))
            for b in _blocks(messages[i + 1].get("content"))
            if b.get("type") == "tool_result"
        }
        found.extend(
            f"{where} calls tool_use {call}, not answered in messages[{i + 1}]"
            for call in calls
            if call not in answered
        )
    return found
