"""The host snippets of README.md, read the way the install-doc and real-host tests read them.

Each host's snippet is the one fenced block (json or toml) right after the line that starts
with the host's name and a colon (`Codex CLI: ~/.codex/config.toml …`). `COMMAND` stands in
every snippet for the absolute path of the installed `frs-mcp`: `Snippet.installed(path)` is the
snippet with the real path, as a user pastes it. A test that configures a host with anything
but its snippet tests something else than what users are told.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from tests.dists import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
COMMAND = "/home/you/.local/bin/frs-mcp"
#: Every host the README gives a stdio snippet for, in its order there.
HOSTS = (
    "Claude Desktop",
    "Claude Code",
    "Codex CLI",
    "Gemini CLI",
    "OpenCode",
    "VS Code",
    "Cursor",
)

#: Every host the README gives a hook configuration for (`frs-mcp hook`), by the name its line
#: starts with, and the HOST that `frs-mcp hook` calls it.
HOOK_HOSTS = {
    "Claude Code hooks": "claude-code",
    "Codex CLI hooks": "codex",
    "Gemini CLI hooks": "gemini-cli",
}


@dataclass(frozen=True, slots=True)
class Server:
    """The frs entry of a snippet, whatever the host's format."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True, slots=True)
class Snippet:
    host: str
    language: str  # "json" or "toml"
    text: str

    def installed(self, command: str) -> str:
        """The snippet as pasted by a user whose `frs-mcp` is at `command`."""
        return self.text.replace(COMMAND, command)

    def parsed(self, command: str = COMMAND) -> dict[str, Any]:
        text = self.installed(command)
        loaded = tomllib.loads(text) if self.language == "toml" else json.loads(text)
        assert isinstance(loaded, dict)
        return loaded

    def server(self, command: str = COMMAND) -> Server:
        """The frs server the snippet configures: `mcpServers` (Claude, Gemini CLI, Cursor),
        `servers` (VS Code), `mcp_servers` (Codex CLI) or OpenCode's `mcp`, whose command is
        a list."""
        config = self.parsed(command)
        if "mcp" in config:
            local = config["mcp"]["frs"]
            argv = local["command"]
            return Server(argv[0], tuple(argv[1:]), local.get("environment", {}))
        for key in ("mcpServers", "servers", "mcp_servers"):
            if key in config:
                entry = config[key]["frs"]
                return Server(entry["command"], tuple(entry.get("args", ())), entry.get("env", {}))
        raise AssertionError(f"{self.host}: no frs server in {config}")


def host_snippet(host: str, readme: str = README) -> Snippet:
    """The snippet for `host`: the one fenced block right after the line naming it."""
    found = re.findall(
        rf"^{re.escape(host)}: [^\n]*\n\n```(json|toml)\n(.*?)```", readme, re.MULTILINE | re.S
    )
    assert len(found) == 1, f"README.md: {len(found)} snippets for {host}, one expected"
    language, text = found[0]
    return Snippet(host, language, text)
