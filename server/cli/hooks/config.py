"""Each host's hook configuration, as `frs-mcp hook --print-config HOST` prints it and the
README shows it: the hooks that record after the model's work and the one that answers a
compaction with the digest, each running this frs-mcp by its absolute path.

Claude Code and Codex CLI read the same shape (`{"hooks": {EVENT: [{"matcher", "hooks":
[{"type": "command", "command", "timeout"}]}]}}`; timeouts in seconds), Gemini CLI a close one
(timeouts in milliseconds, a `name` per hook). OpenCode runs plugins instead: its configuration
is the plugin file (`opencode_plugin.js` beside this module) with this frs-mcp's path in it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

#: The database every README snippet names: the default one, written as a user would, named so
#: that the hooks and the MCP server agree even where $XDG_DATA_HOME moves the default.
DATABASE = "~/.local/share/frs-mcp/frs.db"
CLAUDE_CODE_PARTS = 2  # the default digest (4,000 tokens) takes 11,000-13,000 characters
CODEX_CONTEXT_TOKENS = 6_000  # room for the default digest (4,000 of ours) and then some
TIMEOUT = 30  # seconds a host gives the hook; its own deadline is `command.DEFAULT_TIMEOUT`
PLUGIN = Path(__file__).with_name("opencode_plugin.js")

#: Per host: (event, matcher or None, whether the command asks for the digest).
_EVENTS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "claude-code": (
        ("Stop", None),
        ("SubagentStop", None),
        ("PreCompact", None),
        ("SessionStart", "compact"),
    ),
    "codex": (("Stop", None), ("PreCompact", None), ("SessionStart", "compact")),
    "gemini-cli": (("AfterAgent", "*"), ("BeforeModel", "*")),
}


def command_path() -> str:
    """The absolute path of the running frs-mcp (what a host's hook runs)."""
    script = Path(sys.argv[0])
    if script.name == "frs-mcp" and script.is_file():
        return str(script.resolve())
    found = shutil.which("frs-mcp")
    if found:
        return str(Path(found).resolve())
    return str(Path(sys.executable).with_name("frs-mcp"))


def text(host: str, command: str, tokens: int | None = None, database: str = DATABASE) -> str:
    """The configuration for `host` with `command` as frs-mcp's path, one event a line, each
    command naming `database`; `tokens` (a digest size other than the default) goes on the
    command that answers with the digest."""
    if host == "opencode":
        return plugin(command, database, tokens)
    lines = []
    for event, matcher in _EVENTS[host]:
        line = f"{shlex.quote(command)} hook {host} {event} --db {_shell(database)}"
        if tokens is not None and event in ("SessionStart", "BeforeModel"):
            line += f" --tokens {tokens}"
        # Claude Code shows 10,000 characters of one hook's answer as they are, and runs every
        # hook of an event: the digest comes in parts, one hook each.
        parts = CLAUDE_CODE_PARTS if (host, event) == ("claude-code", "SessionStart") else 1
        handlers = [
            _handler(host, event, line if parts == 1 else f"{line} --part {k}/{parts}")
            for k in range(1, parts + 1)
        ]
        group: dict[str, Any] = {"hooks": handlers}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        lines.append(f"  {json.dumps(event)}: {json.dumps([group])}")
    return '{"hooks": {\n' + ",\n".join(lines) + "\n}}"


def _handler(host: str, event: str, line: str) -> dict[str, Any]:
    handler: dict[str, Any] = {"type": "command", "command": line}
    if host == "codex" and event == "SessionStart":
        # Codex cuts hook context to 2,500 tokens unless the handler allows more.
        handler["additionalContextLimit"] = CODEX_CONTEXT_TOKENS
    if host == "gemini-cli":
        return {"name": f"frs-{event}", **handler, "timeout": TIMEOUT * 1000}
    handler["timeout"] = TIMEOUT
    return handler


def plugin(command: str, database: str = DATABASE, tokens: int | None = None) -> str:
    """The OpenCode plugin, with frs-mcp's command and database filled in (frs-mcp expands
    the `~` itself: the plugin runs it without a shell)."""
    argv = [command, "--db", database]
    source = PLUGIN.read_text(encoding="utf-8")
    filled = source.replace('["frs-mcp"]', json.dumps(argv))
    if tokens is not None:
        filled = filled.replace("const TOKENS = [];", f'const TOKENS = ["--tokens", "{tokens}"];')
    return filled


def _shell(database: str) -> str:
    """The database for a shell's command line: `~/...` left for the shell to expand."""
    if database.startswith("~/") and shlex.quote(database[2:]) == database[2:]:
        return database
    return shlex.quote(database)
