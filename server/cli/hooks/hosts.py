"""What a hook event asks of frs-mcp, whatever the host: a `Job`, from each host's module.

A job names the conversation (the host's own id for it, the key of its session), how to read
what the transcript holds (`read`, the gateway's units; None records nothing) and how to answer
with the digest (`answer`: the digest's text to the bytes the host reads on stdout; None
answers nothing), and the most characters of digest the host shows the model as it is
(`max_chars`; None: no such limit). An event a host's module does not know is no job at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from frs.conversations import MAX_ID_CHARS
from frs.wire.matching import Unit
from server.cli.hooks.transcripts import Deadline, HookRefused

Reader = Callable[[Deadline], list[Unit]]
Answer = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Job:
    conversation: str
    read: Reader | None = None
    answer: Answer | None = None
    max_chars: int | None = None


class Host(Protocol):
    #: The HOST of `frs-mcp hook HOST EVENT`, and the interface its sessions are kept under
    #: (`frs.conversations.HOST_KEYS`: the gateway and the MCP server name it so too).
    name: str

    def job(self, event: str, given: Mapping[str, Any], environ: Mapping[str, str]) -> Job | None:
        """What `event` asks, from the hook's input `given` and the hook's environment; None
        for nothing; raises HookRefused for input it will not act on."""
        ...


def conversation_id(given: Mapping[str, Any], key: str = "session_id") -> str:
    """The conversation's id from the hook's input: 1-200 printable characters, no slash (it
    names a file too)."""
    value = given.get(key)
    if not isinstance(value, str):
        raise HookRefused(f"no {key} in the hook's input")
    value = value.strip()
    if not 1 <= len(value) <= MAX_ID_CHARS or not value.isprintable() or "/" in value:
        raise HookRefused(f"{key} {value[:40]!r} is not 1-200 printable characters")
    return value
