"""The live thread as chat messages a runtime can send to a model (OpenAI or Anthropic shape).

Summaries become plain assistant text marked as summaries; thinking is left out. Every tool call
is answered by the result that follows it; a call not followed by its result gets a short
placeholder result, and a result with no call right before it becomes plain text, so the output
always satisfies the providers' pairing rules.

Both shapes send the same call ids, made unique by one rule (`export_call_id`): every character
outside `[a-zA-Z0-9_-]` becomes `_` (an empty id becomes `call`), and an id already sent earlier
in the same payload gets the first free suffix `_2`, `_3`, … (`c1`, `c1` → `c1`, `c1_2`). A result
carries the id sent for the call it answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from frs.model import Message
from frs.views.render import summary_prefix

# True also when the result was recorded later (after a user turn, say): it then follows as
# text, since the providers want every result right after its call.
NO_RESULT = "(no result followed this call directly)"
_NOT_ID = re.compile(r"[^a-zA-Z0-9_-]")  # what the Messages API refuses in a tool_use id


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
    calls = _Calls()

    def close_pending() -> None:
        for sent in calls.close():
            out.append({"role": "tool", "tool_call_id": sent, "content": NO_RESULT})

    for message in entries:
        if message.kind == "thinking":
            continue
        if message.role == "tool" and message.kind == "message":
            sent = calls.answer(message.tool_call_id)
            if sent is not None:
                out.append({"role": "tool", "tool_call_id": sent, "content": message.content})
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
                            "id": calls.make(call.id),
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments or "{}"},
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    close_pending()
    return out


def to_anthropic(entries: Sequence[Message]) -> dict[str, Any]:
    """Messages API payload: a `system` string and alternating user/assistant `messages`,
    tool_use blocks answered by tool_result blocks in the next user message."""
    system: list[str] = []
    turns = _Turns()
    calls = _Calls()
    for message in entries:
        if message.kind == "thinking":
            continue
        if message.role == "system" and message.kind == "message" and not turns.turns:
            system.append(message.content)
            continue
        answered = message.role == "tool" and message.kind == "message"
        sent = calls.answer(message.tool_call_id) if answered else None
        if sent is not None:
            result = {"type": "tool_result", "tool_use_id": sent}
            turns.add("user", {**result, "content": _nonblank(message.content)})
            continue
        turns.close(calls)
        for role, block in _blocks(message, calls, answered):
            turns.add(role, block)
    turns.close(calls)
    if turns.turns and turns.turns[0]["role"] != "user":
        # The Messages API starts with a user turn.
        first = {"role": "user", "content": [{"type": "text", "text": "(continued)"}]}
        turns.turns.insert(0, first)
    return {"system": "\n\n".join(system), "messages": turns.turns}


class _Turns:
    """Alternating turns: a block of the role of the last turn joins that turn."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []

    def add(self, role: str, block: dict[str, Any]) -> None:
        if self.turns and self.turns[-1]["role"] == role:
            self.turns[-1]["content"].append(block)
        else:
            self.turns.append({"role": role, "content": [block]})

    def close(self, calls: _Calls) -> None:
        """Answer every call still waiting for its result with the placeholder."""
        for sent in calls.close():
            self.add("user", {"type": "tool_result", "tool_use_id": sent, "content": NO_RESULT})


def _blocks(message: Message, calls: _Calls, orphan: bool) -> list[tuple[str, dict[str, Any]]]:
    """The blocks an entry other than an answering result becomes, with their roles."""
    if orphan:
        return [("user", {"type": "text", "text": _orphan_text(message)})]
    if message.kind == "summary":
        return [("assistant", {"type": "text", "text": _summary_text(message)})]
    if message.role != "assistant":
        prefix = "[system] " if message.role == "system" else ""
        return [("user", {"type": "text", "text": prefix + _nonblank(message.content)})]
    blocks: list[tuple[str, dict[str, Any]]] = []
    if message.content.strip():
        blocks.append(("assistant", {"type": "text", "text": message.content}))
    for call in message.tool_calls:
        use = {"type": "tool_use", "id": calls.make(call.id), "name": call.name}
        blocks.append(("assistant", {**use, "input": _input(call.arguments)}))
    return blocks or [("assistant", {"type": "text", "text": "(empty)"})]


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


def export_call_id(recorded: str, sent: set[str]) -> str:
    """The id an export sends for a call recorded as `recorded`, given the ids `sent` before it
    in the payload: the allowed alphabet, then the first free `_2`, `_3`, … suffix (module
    docstring). Recorded transcripts reuse ids (a call id per turn) and use other characters
    (`run/call-1`); the Messages API refuses both, and a Chat Completions pair by a repeated id
    is ambiguous."""
    base = _NOT_ID.sub("_", recorded) or "call"
    candidate, n = base, 1
    while candidate in sent:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


class _Calls:
    """The calls of one payload: the ids sent so far, and the calls of the last assistant
    message still awaiting their results, as (recorded id, sent id)."""

    def __init__(self) -> None:
        self.sent: set[str] = set()
        self.pending: list[tuple[str, str]] = []

    def make(self, recorded: str) -> str:
        """A new call: the id to send for it; it now awaits its result."""
        sent = export_call_id(recorded, self.sent)
        self.sent.add(sent)
        self.pending.append((recorded, sent))
        return sent

    def answer(self, recorded: str | None) -> str | None:
        """The sent id of the first pending call recorded as `recorded` (now answered), or None
        when no pending call has that id: the result is then sent as plain text."""
        for index, (call_id, sent) in enumerate(self.pending):
            if call_id == recorded:
                del self.pending[index]
                return sent
        return None

    def close(self) -> list[str]:
        """The sent ids of the calls left unanswered (each gets a placeholder); none wait now."""
        unanswered = [sent for _, sent in self.pending]
        self.pending.clear()
        return unanswered
