"""Gemini CLI's hooks and its chat file (`transcript_path`, JSON Lines under ~/.gemini/tmp/,
named by the first 8 characters of the session's id).

Gemini CLI 0.61.0 has no event after a compression (its `SessionStart` has no `compact` source,
and `PreCompress` fires before every check, its answer ignored). What it has is `BeforeModel`,
whose answer may rewrite the text of the request's messages: after a compression the first
message holds the `<state_snapshot>` that stands for the history, and the hook appends the
digest to that message (only that one; the messages after it are left as they are). Every
later request carries the snapshot, so every later request gets the digest; a request without
one is answered with nothing at once. `AfterAgent` (the end of a turn) records what is new.

The chat file holds one record per message, appended as it comes (`{"id", "type":
"user"|"gemini", "content", ...}`; a model record is written again once its tool calls are
known), and patches (`{"$set": {...}}`). A `$set` of `messages` (on resume, after a
compression) is the history as the model will be sent it, in the API's shape, with ids of its
own: the import reads only the appended records, each once by id, in the order first seen, the
newest version of each, so a compression loses nothing of it. Tool results are the user records
holding `functionResponse` parts. Each record is one Messages API message, read by the
gateway's Anthropic wire for its units (Gemini CLI names no conversation to a gateway, so no key
is shared with one; that wire keeps two answers in a row two messages).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from frs.wire.matching import Unit, units_of
from server.cli.hooks.hosts import Job, conversation_id
from server.cli.hooks.transcripts import HookRefused, home, kept_file, objects, whole_lines
from server.gateway import anthropic

NAME = "gemini-cli"
SNAPSHOT = "<state_snapshot>"
#: What Gemini CLI writes into the history itself: the session context it opens with, the
#: compression's snapshot and the model's acknowledgement of it.
_OWN_USER = ("<session_context>", SNAPSHOT)
_OWN_MODEL = "Got it. Thanks for the additional context!"
_MARKERS = (b'"type":"user"', b'"type":"gemini"')


def chats_folder(environ: Mapping[str, str]) -> Path:
    """Where Gemini CLI keeps its chat files: $GEMINI_CLI_HOME/.gemini/tmp, or ~/.gemini/tmp."""
    base = environ.get("GEMINI_CLI_HOME")
    return (Path(base) if base else home(environ)) / ".gemini" / "tmp"


class GeminiCli:
    name = NAME

    def job(self, event: str, given: Mapping[str, Any], environ: Mapping[str, str]) -> Job | None:
        if event == "BeforeModel":
            return _before_model(given)
        if event not in ("AfterAgent", "PreCompress"):
            return None
        session = conversation_id(given)
        path = kept_file(given.get("transcript_path"), chats_folder(environ), session[:8])
        return Job(session, lambda deadline: units(whole_lines(path, _MARKERS, deadline)))


def _before_model(given: Mapping[str, Any]) -> Job | None:
    request = given.get("llm_request")
    listed = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(listed, list):
        raise HookRefused("no llm_request.messages in the hook's input")
    at = next(
        (
            index
            for index, message in enumerate(listed)
            if isinstance(message, dict) and SNAPSHOT in str(message.get("content", ""))
        ),
        None,
    )
    if at is None:
        return None  # no compression yet: nothing to add, and nothing read
    head = [dict(message) for message in listed[: at + 1]]

    def rewrite(digest: str) -> str:
        head[at]["content"] = f"{head[at].get('content', '')}\n\n{digest}"
        output = {"hookEventName": "BeforeModel", "llm_request": {"messages": head}}
        return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)

    return Job(conversation_id(given), None, rewrite)


def units(lines: Iterable[str]) -> list[Unit]:
    """The chat file's conversation as units, in order."""
    body = json.dumps({"messages": messages(lines)}, ensure_ascii=False)
    return units_of(anthropic.WIRE.parse(body, {}))


def messages(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The chat file's conversation as Messages API messages, one a record."""
    records: dict[str, dict[str, Any]] = {}
    for row in objects(iter(lines)):
        if "$set" not in row and isinstance(row.get("id"), str):
            # A record written again keeps its place (a dict keeps its first insertion).
            records[row["id"]] = row
    out: list[dict[str, Any]] = []
    for record in records.values():
        blocks = _blocks(record)
        if blocks:
            out.append(
                {
                    "role": "assistant" if record.get("type") == "gemini" else "user",
                    "content": blocks,
                }
            )
    return out


def _blocks(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = record.get("type")
    if kind == "gemini":
        said = _said(record.get("content"))
        blocks: list[dict[str, Any]] = [{"type": "text", "text": said}] if said else []
        blocks.extend(
            {
                "type": "tool_use",
                "id": str(call["id"]),
                "name": str(call.get("name", "")),
                "input": call.get("args", {}),
            }
            for call in record.get("toolCalls") or ()
            if isinstance(call, dict) and call.get("id")
        )
        return blocks
    if kind != "user":
        return []
    parts = record.get("content")
    parts = parts if isinstance(parts, list) else [{"text": parts}] if parts else []
    blocks = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            result = response.get("response")
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(response.get("id", "")),
                    "content": _output(result),
                    "is_error": isinstance(result, dict) and "error" in result,
                }
            )
        elif isinstance(part.get("text"), str) and not part["text"].lstrip().startswith(_OWN_USER):
            blocks.append({"type": "text", "text": part["text"]})
    return blocks


def _said(content: object) -> str:
    """A model record's words, its acknowledgement of a snapshot left out: after a compression
    Gemini CLI 0.61.0 writes the model's next answer into the acknowledgement's record."""
    parts = content if isinstance(content, list) else [{"text": content}]
    texts = [
        str(part["text"])
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    ]
    said = "".join(texts)
    return said.removeprefix(_OWN_MODEL) if said.startswith(_OWN_MODEL) else said


def _output(response: object) -> str:
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return json.dumps(response, ensure_ascii=False)


HOST = GeminiCli()
