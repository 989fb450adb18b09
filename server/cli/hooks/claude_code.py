"""Claude Code's hooks and its transcript (`transcript_path`, JSON Lines under
~/.claude/projects/, named by the session's id).

Events: `Stop`, `SubagentStop` and `PreCompact` record what is new; `SessionStart` with source
`compact` records, then answers with the digest as the next request's context
(`hookSpecificOutput.additionalContext`). Claude Code writes its transcript from a queue it
flushes every 100 ms, and flushes it before `Stop` and `SubagentStop` only: at SessionStart
the hook waits until the file stops growing, and at SessionStart and PreCompact a last
assistant message is left for the next event, since its last blocks may not be written yet.
A `SubagentStop` records the subagent's own transcript as a conversation of its own,
`<session>/<agent id>`, the gateway's name for it; the compaction's fork stops as a subagent
whose transcript is never written, and is passed over.

The transcript holds one line per content block of an assistant message, sharing its
`message.id`: they are put back together, as Claude Code does for each request, and read by the
gateway's Anthropic wire (`server.gateway.anthropic.AnthropicMessages.parse`), so each message
gets the key the gateway gives it. Bookkeeping lines (attachments, api-request records, queue
operations) are skipped, and so are the compaction's summary (`isCompactSummary`), meta lines,
synthetic assistant lines (errors Claude Code writes itself) and the local-command echoes of
`/compact`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from frs.wire.matching import Unit, units_of
from server.cli.hooks.hosts import Job, conversation_id
from server.cli.hooks.transcripts import (
    Deadline,
    home,
    kept_file,
    objects,
    settled,
    whole_lines,
)
from server.gateway import anthropic

NAME = "claude-code"
#: The lines worth decoding: every conversation line says one of these, bookkeeping lines not.
_MARKERS = (b'"type":"user"', b'"type":"assistant"')
#: What Claude Code writes as a user's words when it ran a local command (`/compact`).
_LOCAL = ("<command-name>", "<local-command-stdout>", "<local-command-caveat>", "<command-message>")
_RECORD = frozenset({"Stop", "SubagentStop", "PreCompact"})
#: Claude Code shows hook context of up to 10,000 characters as it is; a longer one goes to a
#: file, the model seeing its first 2 KB and the file's path (2.1.332, checked).
MAX_CHARS = 9_900
#: Lines Claude Code writes for itself: the compaction's summary, meta lines (a command's caveat).
_OWN_FLAGS = ("isCompactSummary", "isMeta", "isVisibleInTranscriptOnly")


def projects(environ: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its transcripts: $CLAUDE_CONFIG_DIR/projects or ~/.claude/."""
    config = environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config) if config else home(environ) / ".claude") / "projects"


class ClaudeCode:
    name = NAME

    def job(self, event: str, given: Mapping[str, Any], environ: Mapping[str, str]) -> Job | None:
        if event == "SessionStart" and given.get("source") == "compact":
            session = conversation_id(given)
            path = kept_file(given.get("transcript_path"), projects(environ), session)

            def read_settled(deadline: Deadline) -> list[Unit]:
                settled(path, deadline)
                return units(whole_lines(path, _MARKERS, deadline), flushed=False)

            return Job(session, read_settled, answer, MAX_CHARS)
        if event not in _RECORD:
            return None
        session = conversation_id(given)
        if event == "SubagentStop":
            return _subagent(session, given, environ)
        path = kept_file(given.get("transcript_path"), projects(environ), session)
        flushed = event == "Stop"  # PreCompact does not wait for the transcript's queue
        return Job(
            session, lambda deadline: units(whole_lines(path, _MARKERS, deadline), flushed=flushed)
        )


def _subagent(session: str, given: Mapping[str, Any], environ: Mapping[str, str]) -> Job | None:
    agent = conversation_id(given, "agent_id")
    transcript = given.get("agent_transcript_path")
    if not isinstance(transcript, str) or not Path(transcript).is_file():
        return None  # the compaction's fork: it stops as a subagent and writes no transcript
    folder = projects(environ)
    path = kept_file(transcript, folder, agent, "subagent transcript")
    return Job(
        f"{session}/{agent}",
        lambda deadline: units(whole_lines(path, _MARKERS, deadline), main=False),
    )


def answer(digest: str) -> str:
    """SessionStart's answer: the digest as context for the first request after compaction."""
    output = {"hookEventName": "SessionStart", "additionalContext": digest}
    return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)


def units(lines: Iterable[str], main: bool = True, flushed: bool = True) -> list[Unit]:
    """The transcript's messages as the gateway's units, in order; the `main` transcript's
    sidechain lines are a subagent's, left to that subagent's own transcript. Unless the host
    `flushed` the transcript for the event, a last assistant message may still lack its last
    blocks' lines: it waits for the next event (recorded now, it would be recorded again, whole,
    under another key)."""
    found = messages(lines, main)
    if not flushed and found and found[-1]["role"] == "assistant":
        found.pop()
    body = json.dumps({"messages": found}, ensure_ascii=False)
    return units_of(anthropic.WIRE.parse(body, {}))


def messages(lines: Iterable[str], main: bool = True) -> list[dict[str, Any]]:
    """The conversation as Messages API messages: an assistant message's blocks gathered from
    their lines by `message.id`, consecutive user lines (parallel calls' results) in one."""
    out: list[dict[str, Any]] = []
    answers: dict[str, dict[str, Any]] = {}
    for row in objects(iter(lines)):
        kind = row.get("type")
        message = row.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            continue
        if (main and row.get("isSidechain")) or _skipped(row):
            continue
        blocks = _blocks(message.get("content"))
        if kind == "assistant":
            if message.get("model") == "<synthetic>":
                continue
            key = str(message.get("id") or row.get("uuid") or len(out))
            found = answers.get(key)
            if found is None:
                found = answers[key] = {"role": "assistant", "content": []}
                out.append(found)
            found["content"].extend(blocks)
            continue
        blocks = [b for b in blocks if not _local(b)]
        if not blocks:
            continue
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": "user", "content": blocks})
    return out


def _skipped(row: Mapping[str, Any]) -> bool:
    """Lines that are Claude Code's own, not the conversation's."""
    return any(
        row.get(flag) for flag in ("isCompactSummary", "isMeta", "isVisibleInTranscriptOnly")
    )


def _blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict) and "type" in block]
    return []


def _local(block: Mapping[str, Any]) -> bool:
    text = block.get("text")
    return block.get("type") == "text" and isinstance(text, str) and text.startswith(_LOCAL)


HOST = ClaudeCode()
