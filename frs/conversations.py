"""Host conversation keys: where each host says which of its conversations a call belongs to.

A host that names its conversations gets one thread per conversation with nothing typed: the
scope narrowed to the conversation (`Scope.in_conversation`) uses the conversation's session,
get-or-create by (interface, id). Hosts say it in different places, so each is written here
once, for every edge that reads it:

- the environment of the MCP server process the host starts (stdio: one conversation per
  process; Claude Code's `CLAUDE_CODE_SESSION_ID`, the same id `claude --resume` keeps);
- a header on the host's requests to its model API (the gateway; Claude Code's
  `X-Claude-Code-Session-Id`, Codex's `session-id`);
- a path into each `tools/call` request's `_meta` (Codex CLI's `x-codex-turn-metadata`, an
  object, or its JSON text, with the `session_id` its model requests carry too).

A value that is not 1-200 printable characters is not a key: it is ignored (`None`), and the
caller keeps the scope it had.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from frs.model import Conversation

MAX_ID_CHARS = 200  # a UUID is 36; the id becomes part of a stored scope key


@dataclass(frozen=True, slots=True)
class HostKey:
    """Where one host names its conversation; each place is optional."""

    interface: str  # the session's interface, e.g. "claude-code"
    env: str | None = None  # a variable in the environment of the MCP server it starts
    header: str | None = None  # a header on its model API requests (lowercase)
    meta: tuple[str, ...] = ()  # a path into a tools/call request's `_meta`


#: Every host known to name its conversations, first match wins. OpenCode names it only on its
#: model requests (`x-session-affinity`, its `ses_…` id, for an OpenAI-compatible provider),
#: never to the MCP servers it starts; Gemini CLI nowhere.
HOST_KEYS: tuple[HostKey, ...] = (
    HostKey("claude-code", env="CLAUDE_CODE_SESSION_ID", header="x-claude-code-session-id"),
    HostKey("codex", header="session-id", meta=("x-codex-turn-metadata", "session_id")),
    HostKey("opencode", header="x-session-affinity"),
)


def from_env(environ: Mapping[str, str]) -> Conversation | None:
    """The conversation a host started this process for, from its environment."""
    for key in HOST_KEYS:
        if key.env is not None and key.env in environ:
            return _conversation(key, environ[key.env])
    return None


def from_headers(headers: Mapping[str, str]) -> Conversation | None:
    """The conversation of a model API request, from its headers (names in any case)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    for key in HOST_KEYS:
        if key.header is not None and key.header in lowered:
            return _conversation(key, lowered[key.header])
    return None


def from_meta(meta: Mapping[str, Any] | None) -> Conversation | None:
    """The conversation of a tool call, from its request's `_meta`."""
    if not meta:
        return None
    for key in HOST_KEYS:
        if key.meta:
            value = _dig(meta, key.meta)
            if value is not None:
                return _conversation(key, value)
    return None


def env_names() -> tuple[str, ...]:
    """The environment variables some host names its conversation with."""
    return tuple(key.env for key in HOST_KEYS if key.env is not None)


def _dig(meta: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path`, entering objects and the JSON text of objects; None if absent."""
    value: Any = meta
    for name in path:
        if isinstance(value, str):  # a header's value carried as it is: JSON text
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


def _conversation(key: HostKey, value: Any) -> Conversation | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not 1 <= len(value) <= MAX_ID_CHARS or not value.isprintable():
        return None
    return Conversation(key.interface, value)
