"""The live thread as chat messages a runtime can send to a model (OpenAI or Anthropic shape).

Summaries become plain assistant text marked as summaries; thinking is left out. Every tool call
is answered by the result that follows it; a call not followed by its result gets a short
placeholder result, and a result with no call right before it becomes plain text, so the output
always satisfies the providers' pairing rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from frs.model import Message
from frs.render import summary_prefix

# True also when the result was recorded later (after a user turn, say): it then follows as
# text, since the providers want every result right after its call.
NO_RESULT = "(no result followed this call directly)"


def _summary_text(message: Message) -> str:
    alias = f"SQ.{message.squash_n}@{(message.squash_sha256 or '')[:8]}"
    return f"[{summary_prefix(message)} ({alias})] {message.content}"


def _orphan_text(message: Message) -> str:
    return f"[tool result {message.name or ''} {message.tool_call_id or ''}]".replace("  ", " ") + (
        f" {message.content}"
    )


def to_openai(entries: Sequence[Message]) -> list[dict[str, Any]]:
    """Chat Completions messages: system/user/assistant/tool, tool results right after calls."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # call ids of the last assistant message still awaiting results

    def close_pending() -> None:
        for call_id in pending:
            out.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT})
        pending.clear()

    for message in entries:
        if message.kind == "thinking":
            continue
        if message.role == "tool" and message.kind == "message":
            if message.tool_call_id in pending:
                pending.remove(message.tool_call_id)
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.tool_call_id,
                        "content": message.content,
                    }
                )
            else:
                close_pending()
                out.append({"role": "user", "content": _orphan_text(message)})
            continue
        close_pending()
        if message.kind == "summary":
            out.append({"role": "assistant", "content": _summary_text(message)})
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments or "{}"},
                        }
                        for call in message.tool_calls
                    ],
                }
            )
            pending.extend(call.id for call in message.tool_calls)
        else:
            out.append({"role": message.role, "content": message.content})
    close_pending()
    return out


def to_anthropic(entries: Sequence[Message]) -> dict[str, Any]:
    """Messages API payload: a `system` string and alternating user/assistant `messages`,
    tool_use blocks answered by tool_result blocks in the next user message."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (recorded call id, id sent) awaiting a result
    ids = _ToolUseIds()

    def add(role: str, block: dict[str, Any]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})

    def close_pending() -> None:
        for _, sent in pending:
            add("user", {"type": "tool_result", "tool_use_id": sent, "content": NO_RESULT})
        pending.clear()

    def answer(call_id: str | None) -> str | None:
        for index, (recorded, sent) in enumerate(pending):
            if recorded == call_id:
                del pending[index]
                return sent
        return None

    for message in entries:
        if message.kind == "thinking":
            continue
        if message.role == "system" and message.kind == "message" and not turns:
            system.append(message.content)
            continue
        if message.role == "tool" and message.kind == "message":
            sent = answer(message.tool_call_id)
            if sent is not None:
                add(
                    "user",
                    {
                        "type": "tool_result",
                        "tool_use_id": sent,
                        "content": _nonblank(message.content),
                    },
                )
            else:
                close_pending()
                add("user", {"type": "text", "text": _orphan_text(message)})
            continue
        close_pending()
        if message.kind == "summary":
            add("assistant", {"type": "text", "text": _summary_text(message)})
        elif message.role == "assistant":
            if message.content.strip():
                add("assistant", {"type": "text", "text": message.content})
            for call in message.tool_calls:
                sent = ids.new(call.id)
                add(
                    "assistant",
                    {
                        "type": "tool_use",
                        "id": sent,
                        "name": call.name,
                        "input": _input(call.arguments),
                    },
                )
                pending.append((call.id, sent))
            if not message.content.strip() and not message.tool_calls:
                add("assistant", {"type": "text", "text": "(empty)"})
        else:
            prefix = "[system] " if message.role == "system" else ""
            add("user", {"type": "text", "text": prefix + _nonblank(message.content)})
    close_pending()
    if turns and turns[0]["role"] != "user":
        # The Messages API starts with a user turn.
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continued)"}]})
    return {"system": "\n\n".join(system), "messages": turns}


def _input(arguments: str) -> dict[str, Any]:
    """tool_use input must be an object: parse the JSON arguments, else wrap them."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _nonblank(text: str) -> str:
    """The Messages API refuses blank text blocks."""
    return text if text.strip() else "(empty)"


class _ToolUseIds:
    """tool_use ids the Messages API accepts: `[a-zA-Z0-9_-]+`, unique in one payload. Recorded
    transcripts reuse ids (a call id per turn) and use other characters (`run/call-1`)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def new(self, recorded: str) -> str:
        base = re.sub(r"[^a-zA-Z0-9_-]", "_", recorded) or "call"
        sent, n = base, 1
        while sent in self.used:
            n += 1
            sent = f"{base}_{n}"
        self.used.add(sent)
        return sent
