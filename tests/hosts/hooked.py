"""What the hook tests read back: the digest a request carried, the alias it names for a fact,
and the thread the hooks recorded (the database every README snippet names, under the run's
HOME)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio

from frs.hooks import find_recorded
from frs.text import message_body
from tests.frs.conftest import open_env

#: How the digest introduces itself (`server.cli.hooks.command`).
DIGEST_START = "FRS (frs-mcp) recorded this conversation"
#: A command that fails the same way on every machine, and the line its error says (a line
#: `frs.mentions` reads as an error even where a host shows no exit status: OpenCode).
FAILING = "git -C /nonexistent-dir-frs status"
ERROR_LINE = "fatal: cannot change to '/nonexistent-dir-frs': No such file or directory"


def database(home: Path) -> Path:
    return home / ".local" / "share" / "frs-mcp" / "frs.db"


def digest_in(text: str) -> str:
    """The digest inside `text` (a request's message), from its first line to the end."""
    at = text.find(DIGEST_START)
    if at < 0:
        raise AssertionError(f"no digest in: {text[:2000]}")
    return text[at:]


def alias_for(digest: str, needle: str) -> str:
    """The alias (`M.n`) the digest names on a line that mentions `needle`."""
    for line in digest.splitlines():
        found = re.search(r"\bM\.\d+\b", line)
        if needle in line and found:
            return found.group(0)
    raise AssertionError(f"no alias named beside {needle!r} in the digest:\n{digest}")


def session_of(digest: str) -> str:
    found = re.search(r'session_id="([0-9a-f]+)"', digest)
    if found is None:
        raise AssertionError(f"the digest names no session:\n{digest}")
    return found.group(1)


def recorded(home: Path, interface: str, conversation: str) -> list[str]:
    """What the conversation's session holds, in order: each live entry's text and calls (as
    `get_alias` returns them)."""

    async def read() -> list[str]:
        async with open_env(database(home)) as env:
            found = await find_recorded(env, interface, conversation)
        if found is None:
            return []
        return [message_body(entry.content, entry.tool_calls) for entry in found.entries]

    return anyio.run(read)
