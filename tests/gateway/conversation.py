"""Requests as Claude Code sends them: the whole transcript each call, tools, a session
header, cache markers moved to the newest message."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.hosts.model.binding import signed

TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
SYSTEM = [
    {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}
]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(
    call_id: str, command: str, text: str | None = None, thinking: str | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": f"sig-{call_id}"})
    if text is not None:
        content.append({"type": "text", "text": text})
    content.append(
        {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}
    )
    return {"role": "assistant", "content": content}


def result(call_id: str, output: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
    }


def said(text: str, thinking: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": f"sig-{text[:8]}"})
    content.append({"type": "text", "text": text})
    return {"role": "assistant", "content": content}


def body(messages: list[dict[str, Any]], **extra: Any) -> bytes:
    """The request Claude Code would send: the newest message carries the cache marker, and
    each thinking block the signature the API gave it, over the transcript before it as it
    stands here (what a host holds when nothing rewrote the requests that produced it)."""
    sent = signed(copy.deepcopy(messages), SYSTEM, extra.get("tools", TOOLS))
    last = sent[-1]["content"]
    if isinstance(last, list) and last:
        last[-1]["cache_control"] = {"type": "ephemeral"}
    payload = {
        "model": "claude-test",
        "max_tokens": 1000,
        "system": SYSTEM,
        "tools": TOOLS,
        **extra,
        "messages": sent,
    }
    return json.dumps(payload).encode()


#: A task with two tool exchanges, an answer, and a second user turn.
TASK = [
    user("The test test_sync fails one run in five."),
    call("toolu_1", "pytest -k test_sync --count 20", text="Let me run it 20 times."),
    result("toolu_1", "FAILED tests/test_sync.py::test_sync - AssertionError: 3 != 4\n" * 40),
    call("toolu_2", "grep -n flush syncer.py"),
    result("toolu_2", "12: def flush(self):\n" * 30),
    said("The race is in Syncer.flush: the lock is missing."),
    user("Add the lock."),
    call("toolu_3", "apply patch"),
    result("toolu_3", "patched"),
    said("Done: the lock is in."),
    user("Run the tests again."),
]
SESSION = [("X-Claude-Code-Session-Id", "cc-session-1")]
