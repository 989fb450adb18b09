"""Transcripts in the corpus JSONL shape: one message per line, turned into `NewMessage`s.

Each line is an object with `role`, `content` and optionally `tool_calls` ([{id, name,
arguments}]), `tool_call_id`, `run_id`, `created_at`, `name`, `kind`. The whole file is checked
before anything is recorded, so a bad line changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from frs.checks import check_new_messages
from frs.errors import FrsError, InvalidContent
from frs.model import ROLES, Limits, NewMessage, ToolCall


def parse_transcript(lines: Iterable[str], limits: Limits | None = None) -> list[NewMessage]:
    """Every message of a JSONL transcript, each checked as `frs_record` would check it; raise
    InvalidContent naming the first bad line."""
    messages = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidContent(f"line {number}: not JSON ({exc.msg}).") from None
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            raise InvalidContent(f"line {number}: not usable JSON ({exc}).") from None
        except RecursionError:
            raise InvalidContent(f"line {number}: JSON nested too deeply to read.") from None
        message = _message(row, number)
        try:
            check_new_messages([message], limits or Limits())
        except FrsError as exc:
            detail = str(exc).replace("messages[0]", "message")
            raise InvalidContent(f"line {number}: {detail}") from None
        messages.append(message)
    if not messages:
        raise InvalidContent("the file holds no messages (one JSON object per line).")
    return messages


def _message(row: Any, number: int) -> NewMessage:
    where = f"line {number}"
    if not isinstance(row, dict):
        raise InvalidContent(f"{where}: expected a JSON object, got {type(row).__name__}.")
    role = row.get("role")
    if role not in ROLES:
        raise InvalidContent(f"{where}: role is {role!r}; use one of {', '.join(ROLES)}.")
    content = row.get("content") or ""
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    kind = row.get("kind") or "message"
    if kind not in ("message", "thinking"):
        raise InvalidContent(f"{where}: kind is {kind!r}; use message or thinking.")
    calls = []
    for index, call in enumerate(row.get("tool_calls") or ()):
        if not isinstance(call, dict) or not call.get("id") or not call.get("name"):
            raise InvalidContent(f"{where}: tool_calls[{index}] needs an id and a name.")
        arguments = call.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(str(call["id"]), str(call["name"]), arguments))
    return NewMessage(
        role=role,
        content=content,
        kind="thinking" if kind == "thinking" else "message",
        name=_text(row.get("name")),
        tool_calls=tuple(calls),
        tool_call_id=_text(row.get("tool_call_id")),
        run_id=_text(row.get("run_id")),
        interface_message_id=_text(row.get("interface_message_id")),
        created_at=_text(row.get("created_at")),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
