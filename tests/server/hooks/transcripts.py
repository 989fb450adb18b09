"""Host transcripts written the way the pinned hosts write them (the shapes recorded from
Claude Code 2.1.332, Codex CLI 0.171.0, Gemini CLI 0.61.0 and OpenCode 1.18.33), small and
made up, for the hook's readers and command.

Each writer keeps lines as compact JSON, as the hosts do, so the readers' byte markers see
them as they would see the real files; each also writes the bookkeeping the import must skip.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass
class ClaudeTranscript:
    """A Claude Code session file: ~/.claude/projects/<project>/<session id>.jsonl."""

    home: Path
    session: str = field(default_factory=lambda: str(uuid.uuid4()))
    lines: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.home / ".claude" / "projects" / "-work-project" / f"{self.session}.jsonl"

    def _line(self, kind: str, **fields: Any) -> dict[str, Any]:
        row: dict[str, Any] = {"parentUuid": None, "isSidechain": False, "type": kind}
        row.update(uuid=str(uuid.uuid4()), sessionId=self.session, **fields)
        self.lines.append(dumps(row))
        return row

    def bookkeeping(self) -> None:
        """What Claude Code writes besides the conversation: an attachment quoting a user
        line's JSON, an API request record, a queue operation."""
        self.lines.append(dumps({"type": "queue-operation", "operation": "enqueue"}))
        self._line("attachment", attachment={"type": "note", "raw": '{"type":"user","x":1}'})
        self.lines.append(dumps({"type": "api-request", "id": "req_1", "querySource": "x"}))

    def prompt(self, text: str) -> None:
        self._line("user", message={"role": "user", "content": text}, promptId="p1")

    def answer(self, message_id: str, *blocks: dict[str, Any]) -> None:
        """An assistant message, one line per content block, as Claude Code writes it."""
        for block in blocks:
            message: dict[str, Any] = {"id": message_id, "type": "message", "role": "assistant"}
            message.update(model="claude-opus-5-5", content=[block])
            self._line("assistant", message=message, requestId="req_1")

    def result(self, call: str, content: Any, error: bool = False) -> None:
        block = {"tool_use_id": call, "type": "tool_result", "content": content, "is_error": error}
        self._line("user", message={"role": "user", "content": [block]}, toolUseResult={})

    def compaction(self, summary: str) -> None:
        """A compaction: its boundary, then its summary as a user line marked as one."""
        self._line("system", subtype="compact_boundary", content="Conversation compacted")
        text = (
            "This session is being continued from a previous conversation that ran out of "
            f"context.\n\nSummary:\n{summary}"
        )
        self._line(
            "user",
            message={"role": "user", "content": text},
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )

    def write(self, torn: str = "") -> Path:
        """The file as written so far; `torn` is a last line still being written."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(line + "\n" for line in self.lines) + torn, "utf-8")
        return self.path

    def hook(self, event: str, **more: Any) -> dict[str, Any]:
        """The hook's input for `event`, as Claude Code gives it."""
        given = {
            "session_id": self.session,
            "transcript_path": str(self.path),
            "cwd": "/work/project",
            "hook_event_name": event,
        }
        return {**given, **more}


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def tool_use(call: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": arguments}


def thinking(words: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": words, "signature": signature}


@dataclass
class CodexRollout:
    """A Codex rollout: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl."""

    home: Path
    thread: str = field(default_factory=lambda: str(uuid.uuid4()))
    lines: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        name = f"rollout-2026-11-29T07-38-54-{self.thread}.jsonl"
        return self.home / ".codex" / "sessions" / "2026" / "11" / "29" / name

    def _row(self, kind: str, payload: dict[str, Any]) -> None:
        ordinal = len(self.lines)
        row: dict[str, Any] = {"timestamp": "2026-11-29T07:38:54Z", "ordinal": ordinal}
        row["type"] = kind
        self.lines.append(dumps({**row, "payload": payload}))

    def item(self, payload: dict[str, Any]) -> None:
        self._row("response_item", payload)

    def start(self, prompt: str) -> None:
        """What a turn starts with: Codex's own developer and user messages, then the prompt."""
        self._row("session_meta", {"id": self.thread, "cwd": "/work/project"})
        self.item(message("developer", "<skills_instructions>\nskills\n</skills_instructions>"))
        self.item(
            message("user", "<environment_context>\n  <cwd>/work</cwd>\n</environment_context>")
        )
        self._row("event_msg", {"type": "task_started"})
        self.item(message("user", prompt))

    def call(self, call: str, command: str, output: str, reasoning: str = "") -> None:
        if reasoning:
            self.item(reasoning_item(reasoning))
        self.item(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": dumps({"cmd": command}),
                "call_id": call,
            }
        )
        self._row("token_usage_record", {"input_tokens": 100})
        self.item({"type": "function_call_output", "call_id": call, "output": output})

    def say(self, words: str, reasoning: str = "") -> None:
        if reasoning:
            self.item(reasoning_item(reasoning))
        self.item(message("assistant", words))
        self._row("token_usage_record", {"input_tokens": 100})

    def compacted(self, summary: str, local: bool = True) -> None:
        """A compaction: locally, the compaction's own answer is written first, as ordinary
        items; then the `compacted` line (a remote compaction writes no answer)."""
        if local:
            self.say(summary, reasoning="summarising")
        prefix = "Another language model started to solve this problem ... summary:\n"
        self._row("compacted", {"message": prefix + summary if local else "", "window_number": 1})

    def write(self, torn: str = "") -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(line + "\n" for line in self.lines) + torn, "utf-8")
        return self.path

    def hook(self, event: str, **more: Any) -> dict[str, Any]:
        given = {
            "session_id": self.thread,
            "transcript_path": str(self.path),
            "cwd": "/work/project",
            "hook_event_name": event,
            "model": "gpt-5.5",
        }
        return {**given, **more}


def message(role: str, words: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": words}]}


def reasoning_item(words: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": f"rs_{uuid.uuid4().hex[:12]}",
        "summary": [{"type": "summary_text", "text": words}],
        "encrypted_content": f"ENCRYPTED-{words}",
    }


@dataclass
class GeminiChat:
    """A Gemini CLI chat file: ~/.gemini/tmp/<project>/chats/session-<time>-<id[:8]>.jsonl."""

    home: Path
    session: str = field(default_factory=lambda: str(uuid.uuid4()))
    lines: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        name = f"session-2026-11-29T07-59-{self.session[:8]}.jsonl"
        return self.home / ".gemini" / "tmp" / "project" / "chats" / name

    def header(self) -> None:
        self.lines.append(dumps({"sessionId": self.session, "kind": "main"}))
        context = {"id": "ctx", "type": "user", "content": [{"text": "<session_context>x"}]}
        self.lines.append(dumps({"$set": {"messages": [context]}}))

    def record(self, record_id: str, kind: str, content: Any, **more: Any) -> None:
        self.lines.append(dumps({"id": record_id, "type": kind, "content": content, **more}))
        self.lines.append(dumps({"$set": {"lastUpdated": "2026-11-29T07:59:08Z"}}))

    def write(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(line + "\n" for line in self.lines), "utf-8")
        return self.path

    def hook(self, event: str, **more: Any) -> dict[str, Any]:
        given = {
            "session_id": self.session,
            "transcript_path": str(self.path),
            "cwd": "/work/project",
            "hook_event_name": event,
        }
        return {**given, **more}


class OpenCodeStore:
    """OpenCode's SQLite store ($XDG_DATA_HOME/opencode/opencode.db), the tables the hook
    reads: `message` and `part`, each row's `data` as JSON."""

    def __init__(self, home: Path, session: str = "ses_dd9b112a5ffeH8YhoD6k0QwYmq") -> None:
        self.path = home / ".local" / "share" / "opencode" / "opencode.db"
        self.session = session
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._count = 0
        with sqlite3.connect(self.path) as db:
            db.execute("pragma journal_mode = wal")
            db.execute("create table if not exists session (id text primary key, directory text)")
            db.execute(
                "create table if not exists message"
                " (id text primary key, session_id text, data text)"
            )
            db.execute(
                "create table if not exists part"
                " (id text primary key, message_id text, session_id text, data text)"
            )
            db.execute("insert into session values (?, ?)", (session, "/work/project"))
        db.close()

    def message(self, info: dict[str, Any], *parts: dict[str, Any]) -> None:
        self._count += 1
        message_id = f"msg_{self._count:08d}"
        with sqlite3.connect(self.path) as db:
            db.execute(
                "insert into message values (?, ?, ?)", (message_id, self.session, dumps(info))
            )
            for index, part in enumerate(parts):
                part_id = f"prt_{self._count:08d}{index:03d}"
                db.execute(
                    "insert into part values (?, ?, ?, ?)",
                    (part_id, message_id, self.session, dumps(part)),
                )
        db.close()

    def user(self, words: str) -> None:
        self.message({"role": "user", "summary": {"diffs": []}}, {"type": "text", "text": words})

    def step(self, words: str = "", *tools: tuple[str, str, dict[str, Any], str]) -> None:
        """An assistant step: its text and its tool calls (call id, tool, input, output)."""
        parts: list[dict[str, Any]] = [{"type": "step-start"}]
        if words:
            parts.append({"type": "text", "text": words})
        for call, tool, arguments, output in tools:
            state = {"status": "completed", "input": arguments, "output": output}
            parts.append({"type": "tool", "tool": tool, "callID": call, "state": state})
        parts.append({"type": "step-finish", "reason": "stop"})
        self.message({"role": "assistant", "mode": "build"}, *parts)

    def compaction(self, summary: str) -> None:
        self.message({"role": "user"}, {"type": "compaction", "auto": True})
        self.message(
            {"role": "assistant", "mode": "compaction", "summary": True},
            {"type": "text", "text": summary},
        )
        self.message(
            {"role": "user"},
            {
                "type": "text",
                "text": "Continue if you have next steps.",
                "synthetic": True,
                "metadata": {"compaction_continue": True},
            },
        )
