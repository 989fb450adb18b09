"""Requests as Codex CLI sends them over the Responses API (the whole input each call, a
`session-id` header, reasoning items with encrypted content, namespaced calls) and as OpenCode
sends them over Chat Completions."""

from __future__ import annotations

import json
from typing import Any

INSTRUCTIONS = "You are Codex, a coding agent."
TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
SESSION = [("session-id", "codex-session-1")]


def developer(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": text}],
    }


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def reasoning(name: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": f"thinking {name}"}],
        "encrypted_content": f"gAAAA-{name}-opaque==",
    }


def call(call_id: str, command: str, namespace: str | None = None) -> dict[str, Any]:
    item = {
        "type": "function_call",
        "name": "shell",
        "arguments": json.dumps({"command": command}),
        "call_id": call_id,
    }
    if namespace:
        item["namespace"] = namespace
    return item


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def body(items: list[dict[str, Any]], **extra: Any) -> bytes:
    """The request Codex would send: instructions, tools, the whole input, store off."""
    payload = {
        "model": "gpt-test",
        "instructions": INSTRUCTIONS,
        "input": items,
        "tools": TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        **extra,
    }
    return json.dumps(payload).encode()


#: Two tool exchanges with reasoning, an answer, a second user turn.
TASK = [
    developer("<permissions instructions>sandboxed</permissions instructions>"),
    user("The test test_sync fails one run in five."),
    reasoning("r1"),
    call("call_1", "pytest -k test_sync --count 20"),
    output("call_1", "FAILED tests/test_sync.py::test_sync - AssertionError: 3 != 4\n" * 40),
    reasoning("r2"),
    call("call_2", "grep -n flush syncer.py"),
    output("call_2", "12: def flush(self):\n" * 30),
    reasoning("r3"),
    said("The race is in Syncer.flush: the lock is missing."),
    user("Add the lock."),
    reasoning("r4"),
    call("call_3", "apply patch"),
    output("call_3", "patched"),
    said("Done: the lock is in."),
    user("Run the tests again."),
]


def chat_user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def chat_call(call_id: str, command: str, text: str | None = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
        ],
    }


def chat_result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def chat_said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def chat_body(messages: list[dict[str, Any]], **extra: Any) -> bytes:
    payload = {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "You are OpenCode."}, *messages],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "stream": True,
        **extra,
    }
    return json.dumps(payload).encode()


CHAT_TASK = [
    chat_user("The test test_sync fails one run in five."),
    chat_call("call_1", "pytest -k test_sync --count 20", text="Let me run it."),
    chat_result("call_1", "FAILED tests/test_sync.py::test_sync - AssertionError: 3 != 4\n" * 40),
    chat_call("call_2", "grep -n flush syncer.py"),
    chat_result("call_2", "12: def flush(self):\n" * 30),
    chat_said("The race is in Syncer.flush: the lock is missing."),
    chat_user("Add the lock."),
    chat_call("call_3", "apply patch"),
    chat_result("call_3", "patched"),
    chat_said("Done: the lock is in."),
    chat_user("Run the tests again."),
]
