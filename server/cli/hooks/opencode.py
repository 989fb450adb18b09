"""OpenCode's plugin hooks and its store (the SQLite file $XDG_DATA_HOME/opencode/opencode.db,
read only, never written).

OpenCode has no hook commands; a plugin (`opencode_plugin.js`, installed by
`frs-mcp hook --print-config opencode`) runs this command with `{"session_id": "ses_…"}` on
stdin for three events of its own naming: `idle` (a turn ended: record what is new),
`compacting` (OpenCode is about to summarise: record, and answer the digest as plain text, which
the plugin adds to the summariser's context and, from then on, to the system prompt of every
request of the session) and `system` (a first request of a session in this OpenCode process:
the digest if the session was compacted before, else nothing).

The session's messages and parts are read as OpenCode stores them (`message.data`,
`part.data`, JSON), turned into the Chat Completions messages OpenCode sends (an assistant
step's text and tool calls, then a `tool` message per call), and read by the gateway's Chat
Completions wire, whose keys the gateway gives the same messages (OpenCode names its session
to a gateway: `x-session-affinity`). The compaction's own messages (the request holding a
`compaction` part, the summary, the synthetic "continue") are the host's, not the turns: a
system message stands in their place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frs.errors import StoreError
from frs.wire.matching import Unit, units_of
from server.cli.hooks.hosts import Job
from server.cli.hooks.transcripts import Deadline, HookRefused, home
from server.gateway import chat
from storage.foreign import Rows, opencode_compacted, opencode_session

NAME = "opencode"
_SESSION = re.compile(r"ses_[A-Za-z0-9]{1,64}")
_EVENTS = frozenset({"idle", "compacting", "system"})
#: What stands for a compaction's own messages: a system message, which the wire reads as the
#: host's and never records, and which parts the answers either side of it as they were.
_COMPACTION = {"role": "system", "content": "(compaction)"}


def database(environ: Mapping[str, str]) -> Path:
    """OpenCode's store: $XDG_DATA_HOME/opencode/opencode.db, else ~/.local/share/opencode/."""
    data = environ.get("XDG_DATA_HOME", "")
    base = Path(data) if data and Path(data).is_absolute() else home(environ) / ".local" / "share"
    return base / "opencode" / "opencode.db"


class OpenCode:
    name = NAME

    def job(self, event: str, given: Mapping[str, Any], environ: Mapping[str, str]) -> Job | None:
        if event not in _EVENTS:
            return None
        session = given.get("session_id")
        if not isinstance(session, str) or not _SESSION.fullmatch(session):
            raise HookRefused("no OpenCode session id (ses_…) in the hook's input")
        store = database(environ)
        if not store.is_file():
            raise HookRefused(f"no OpenCode store at {store}")
        if event == "system":
            if not compacted(store, session):
                return None
            return Job(session, None, _plain)
        read = lambda deadline: units(rows(store, session, deadline))  # noqa: E731
        return Job(session, read, _plain if event == "compacting" else None)


def _plain(digest: str) -> str:
    return digest


def compacted(store: Path, session: str) -> bool:
    """Whether the session holds a compaction."""
    try:
        return opencode_compacted(store, session, timeout=5.0)
    except StoreError as exc:
        raise HookRefused(str(exc)) from None


def rows(store: Path, session: str, deadline: Deadline) -> Rows:
    """The session's messages in order, each (its data, its parts' data in order)."""
    try:
        found = opencode_session(store, session, timeout=max(deadline.left, 0.1))
    except StoreError as exc:
        raise HookRefused(str(exc)) from None
    deadline.check()
    return found


def units(rows: Rows) -> list[Unit]:
    body = json.dumps({"messages": messages(rows)}, ensure_ascii=False)
    return units_of(chat.WIRE.parse(body, {}))


def messages(rows: Rows) -> list[dict[str, Any]]:
    """The session as the Chat Completions messages OpenCode sends, its compactions left out."""
    out: list[dict[str, Any]] = []
    for info, parts in rows:
        if not isinstance(info, dict):
            continue
        listed = [part for part in parts if isinstance(part, dict)]
        # A user message's `summary` is its diffs; the compaction's answer has `summary: true`.
        own = info.get("summary") is True or any(
            part.get("type") == "compaction" or _continues(part) for part in listed
        )
        if own:
            out.append(_COMPACTION)
        elif info.get("role") == "user":
            text = "\n".join(str(p.get("text", "")) for p in listed if p.get("type") == "text")
            if text.strip():
                out.append({"role": "user", "content": text})
        elif info.get("role") == "assistant":
            out.extend(_assistant(listed))
    return out


def _assistant(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    text = "".join(str(part.get("text", "")) for part in parts if part.get("type") == "text")
    calls, results = [], []
    for part in parts:
        state = part.get("state")
        if part.get("type") != "tool" or not isinstance(state, dict) or not part.get("callID"):
            continue
        call = str(part["callID"])
        arguments = json.dumps(state.get("input", {}), ensure_ascii=False)
        calls.append(
            {
                "id": call,
                "type": "function",
                "function": {"name": part.get("tool"), "arguments": arguments},
            }
        )
        output = state.get("output") if state.get("status") == "completed" else state.get("error")
        if output is not None:
            results.append({"role": "tool", "tool_call_id": call, "content": str(output)})
    if not (text or calls):
        return []
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return [message, *results]


def _continues(part: Mapping[str, Any]) -> bool:
    """The synthetic "continue" OpenCode adds after an automatic compaction."""
    metadata = part.get("metadata")
    return (
        bool(part.get("synthetic"))
        and isinstance(metadata, dict)
        and bool(metadata.get("compaction_continue"))
    )


HOST = OpenCode()
