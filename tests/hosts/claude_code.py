"""Claude Code, run headless (`claude -p`) against the scripted model, with frs-mcp configured
by the README's Claude Code snippet.

Each run gets a HOME of its own (Claude Code keeps its settings, transcripts and --resume state
under ~/.claude), no telemetry, error reports, auto-update or other non-essential traffic, the
model at ANTHROPIC_BASE_URL and a made-up API key. The pinned version keeps its MCP tool search
on with that base URL (a loopback one) and no ENABLE_TOOL_SEARCH (`test_claude_code`); the runs
set ENABLE_TOOL_SEARCH=true or false all the same, so that a test says which it means: on, the
model sees the frs tools' names only, until ToolSearch loads them; off, every schema up front.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts import pinned, readme
from tests.hosts.model import Seen, Step, ToolCall, Turn
from tests.hosts.runs import HostRun

TIMEOUT = 120  # a scenario takes seconds; this only stops a hung host
PREFIX = "mcp__frs__"
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    # A loaded CI machine may take seconds to start frs-mcp; wait for it rather than run
    # the conversation without its tools.
    "MCP_TIMEOUT": "60000",
}


def name(tool: str) -> str:
    """The name Claude Code gives an frs tool: mcp__<server>__<tool>."""
    return PREFIX + tool


def call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(name(tool), arguments)


def _load_the_rest(seen: Seen) -> Turn:
    """After the keyword search: load by name the frs tools "squash" did not bring."""
    found = {block["tool_name"] for block in seen.result.raw["content"]}
    assert name("frs_compress_range") in found, found
    wanted = [name(tool) for tool in ("frs_session", "frs_record", "get_alias")]
    return Turn.call("ToolSearch", query="select:" + ",".join(t for t in wanted if t not in found))


#: How the scripted model finds the frs tools in Claude Code: ToolSearch by keyword ("squash"
#: finds the squash tool by its words), then by name for the ones the keyword did not bring.
FIND_TOOLS: list[Step] = [Turn.call("ToolSearch", query="squash"), _load_the_rest]


def config() -> str:
    """The README's Claude Code entry (`.mcp.json`) as pasted, with this checkout's frs-mcp."""
    return readme.pasted("Claude Code")


class Run(HostRun):
    """A finished `claude -p`: its exit code, output and the JSON result it printed."""

    @property
    def result(self) -> dict[str, Any]:
        return self.json_output("claude")

    @property
    def session_id(self) -> str:
        return str(self.result["session_id"])


@dataclass(frozen=True)
class ClaudeCode:
    """Claude Code installed under `root`, with its HOME at `home`, run in `workspace`."""

    root: Path
    home: Path
    workspace: Path

    def env(self, model_url: str, tool_search: bool | None = True) -> dict[str, str]:
        """The run's environment; `tool_search` None leaves ENABLE_TOOL_SEARCH unset (Claude
        Code's own default), else sets it to true or false."""
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        chosen = {} if tool_search is None else {"ENABLE_TOOL_SEARCH": str(tool_search).lower()}
        return {
            **env,
            **QUIET,
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-model",
            **chosen,
        }

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`claude ARGS` (say `mcp add ...`) in the workspace, with the run's HOME, no model."""
        self.home.mkdir(parents=True, exist_ok=True)
        return subprocess.run(
            [*pinned.claude(self.root), *args],
            env=self.env("http://127.0.0.1:9"),  # a port nothing listens on: no model is asked
            cwd=self.workspace,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def run(
        self,
        model_url: str,
        prompt: str,
        *extra: str,
        mcp: str | None = None,
        tool_search: bool | None = True,
        env: Mapping[str, str] | None = None,
        timeout: float = TIMEOUT,
        hooks: str | None = None,
    ) -> Run:
        """`claude -p PROMPT` with the README's frs entry (or the JSON text `mcp`) as its only
        MCP config, the frs tools allowed without asking; `extra` adds arguments (--resume),
        `env` variables (CLAUDE_CODE_AUTO_COMPACT_WINDOW); `hooks` is the user settings
        (~/.claude/settings.json) holding a hook configuration."""
        self.home.mkdir(parents=True, exist_ok=True)
        if hooks is not None:
            (self.home / ".claude").mkdir(exist_ok=True)
            (self.home / ".claude" / "settings.json").write_text(hooks, encoding="utf-8")
        self.workspace.mkdir(parents=True, exist_ok=True)
        config_file = self.home / "mcp.json"
        config_file.write_text(config() if mcp is None else mcp, encoding="utf-8")
        command = [
            *pinned.claude(self.root),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--mcp-config",
            str(config_file),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__frs",
            *extra,
        ]
        try:
            done = subprocess.run(
                command,
                env={**self.env(model_url, tool_search), **(env or {})},
                cwd=self.workspace,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"claude -p did not finish in {timeout} s: {exc}") from None
        return Run(done.returncode, done.stdout, done.stderr)
