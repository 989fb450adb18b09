"""Codex CLI's hooks and its rollout (`transcript_path`, JSON Lines under $CODEX_HOME/sessions/,
named by the thread's id).

Events: `Stop` and `PreCompact` record what is new; `SessionStart` with source `compact`
records, then answers with the digest as the next request's context (a developer message right
after the compaction's summary, in the first request after it, mid-turn too). Codex runs a
hook it has not been told to trust only with `--dangerously-bypass-hook-trust`; the README
says how to trust it.

The rollout's `response_item` lines are the Responses API items Codex sends the model; they are
read by the gateway's Responses wire (`server.gateway.responses.OpenAIResponses.parse`), so each
message gets the key the gateway gives it. Developer messages, and the user messages Codex
writes itself (`<environment_context>`, `<user_instructions>`), are not the conversation: they
are read as developer messages, which the wire never records. A local compaction writes its own
answer (reasoning, then an assistant message holding the summary) as ordinary items just before
its `compacted` line, whose message ends with that summary: those items are the host's summary,
not a turn, and one developer message stands in their place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from frs.wire.matching import Unit, units_of
from server.cli.hooks.hosts import Job, conversation_id
from server.cli.hooks.transcripts import home, kept_file, objects, whole_lines
from server.gateway import responses

NAME = "codex"
_MARKERS = (b'"type":"response_item"', b'"type":"compacted"')
#: User messages Codex writes itself, before the user's first words.
_OWN = ("<environment_context>", "<user_instructions>")
_RECORD = frozenset({"Stop", "PreCompact"})
#: What stands for an item that is not the conversation: a developer message, which the wire
#: reads as the host's and never records, and which parts the items before and after it as the
#: host's own item did (two answers either side of it are two messages, not one).
_AS_SYSTEM = {"type": "message", "role": "developer"}


def sessions_folder(environ: Mapping[str, str]) -> Path:
    """Where Codex keeps its rollouts: $CODEX_HOME/sessions, or ~/.codex/sessions."""
    codex_home = environ.get("CODEX_HOME")
    return (Path(codex_home) if codex_home else home(environ) / ".codex") / "sessions"


class Codex:
    name = NAME

    def job(self, event: str, given: Mapping[str, Any], environ: Mapping[str, str]) -> Job | None:
        compacted = event == "SessionStart" and given.get("source") == "compact"
        if not compacted and event not in _RECORD:
            return None
        thread = conversation_id(given)
        path = kept_file(given.get("transcript_path"), sessions_folder(environ), thread)
        read = lambda deadline: units(whole_lines(path, _MARKERS, deadline))  # noqa: E731
        return Job(thread, read, answer if compacted else None)


def answer(digest: str) -> str:
    """SessionStart's answer: the digest as context after the compaction."""
    output = {"hookEventName": "SessionStart", "additionalContext": digest}
    return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)


def units(lines: Iterable[str]) -> list[Unit]:
    """The rollout's conversation as the gateway's units, in order."""
    body = json.dumps({"input": items(lines)}, ensure_ascii=False)
    return units_of(responses.WIRE.parse(body, {}))


def items(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The rollout's input items as Codex sent them, its own messages and the compactions'
    answers left out."""
    out: list[dict[str, Any]] = []
    for row in objects(iter(lines)):
        payload = row.get("payload")
        if not isinstance(payload, dict):
            continue
        if row.get("type") == "compacted":
            _drop_summary(out, payload.get("message"))
        elif row.get("type") == "response_item":
            out.append(
                _AS_SYSTEM | {"content": payload.get("content")} if _own(payload) else payload
            )
    return out


def _own(item: Mapping[str, Any]) -> bool:
    """A user message Codex wrote itself."""
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return False
    return _text(item).lstrip().startswith(_OWN)


def _drop_summary(items: list[dict[str, Any]], message: object) -> None:
    """Take out the compaction's answer: the newest assistant message, when the compaction's
    message ends with its text, and the reasoning just before it. A remote compaction (an
    empty message) wrote none."""
    if not isinstance(message, str) or not message.strip():
        return
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("type", "message") == "message" and item.get("role") == "assistant":
            text = _text(item).strip()
            if not text or not message.rstrip().endswith(text):
                return
            start = index
            while start > 0 and items[start - 1].get("type") == "reasoning":
                start -= 1
            items[start : index + 1] = [_AS_SYSTEM | {"content": "(compaction)"}]
            return
        if item.get("type") != "reasoning":
            return


def _text(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part
    )


HOST = Codex()
