"""Codex CLI, run headless (`codex exec`) against the scripted model, with frs-mcp configured by
the README's Codex snippet.

Each run gets its own HOME and CODEX_HOME. The config.toml written there is the harness's part
(a `model_providers` entry whose base_url is the scripted model, wire_api "responses"; no update
check, analytics, OpenTelemetry export or plugin sync, so nothing leaves the machine) followed
by the README's `[mcp_servers.frs]` table. Two overrides are passed on the command line:
`mcp_servers.frs.required=true` makes `codex exec` wait for frs-mcp's tool list before the
first model request (without it Codex asks the model before a just-started server has
answered, and announces the frs tools a turn or two later, as they arrive), and a startup
timeout long enough for a loaded machine.

Codex 0.171 defers MCP tools for models that support tool search (gpt-5.5 here): the model
sees "Deferred tool namespaces: mcp__frs: <the server's instructions>", finds the tools with a
tool_search call, and calls them in the namespace "mcp__frs".
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts import pinned, readme
from tests.hosts.model import Step, ToolCall, Turn
from tests.hosts.runs import HostRun

TIMEOUT = 120  # a scenario takes seconds; this only stops a hung host
STARTUP = 60  # seconds Codex waits for frs-mcp to list its tools (a loaded CI machine is slow)
NAMESPACE = "mcp__frs"
MODEL = "gpt-5.5"  # a model Codex knows: its tool search is on, as for a real user


def call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    """An frs tool as Codex exposes it: in the namespace mcp__frs."""
    return ToolCall(tool, arguments, namespace=NAMESPACE)


def tool_search(query: str, limit: int = 8) -> ToolCall:
    return ToolCall("tool_search", {"query": query, "limit": limit}, kind="tool_search")


#: How the scripted model finds the frs tools in Codex: one tool_search by keyword, which
#: answers with the whole mcp__frs namespace.
FIND_TOOLS: list[Step] = [Turn("", (tool_search("squash"),))]


def snippet() -> str:
    """The README's Codex CLI snippet as pasted, with this checkout's frs-mcp."""
    return readme.pasted("Codex CLI")


def config_toml(model_url: str, mcp: str, settings: str = "") -> str:
    """The harness's settings, then `settings` (top-level TOML lines: a test's own, such as
    `model_auto_compact_token_limit`), then `mcp` (TOML: the README's snippet) as it is."""
    lines = [
        f'model = "{MODEL}"',
        'model_provider = "scripted"',
        "check_for_update_on_startup = false",
        *settings.splitlines(),
        "",
        "[model_providers.scripted]",
        'name = "Scripted model"',
        f'base_url = "{model_url}/v1"',
        'wire_api = "responses"',
        'env_key = "SCRIPTED_MODEL_KEY"',
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[otel]",
        'exporter = "none"',
        'trace_exporter = "none"',
        'metrics_exporter = "none"',
        "",
        "[features]",
        "plugins = false",
    ]
    return "\n".join(lines) + "\n\n" + mcp


class Run(HostRun):
    def events(self) -> list[dict[str, Any]]:
        """The JSON lines `codex exec --json` printed."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    @property
    def thread_id(self) -> str:
        """The conversation's id (`codex exec resume ID` continues it)."""
        started = [e for e in self.events() if e.get("type") == "thread.started"]
        if not started:
            raise AssertionError(f"codex exec printed no thread.started: {self.describe()}")
        return str(started[0]["thread_id"])


@dataclass(frozen=True)
class Codex:
    """Codex CLI installed under `root`, with its HOME at `home`, run in `workspace`."""

    root: Path
    home: Path
    workspace: Path

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        return {
            **env,
            "HOME": str(self.home),
            "CODEX_HOME": str(self.home / ".codex"),
            "SCRIPTED_MODEL_KEY": "sk-scripted-model",
        }

    def run(
        self,
        model_url: str,
        prompt: str,
        mcp: str | None = None,
        resume: str | None = None,
        settings: str = "",
        timeout: float = TIMEOUT,
        hooks: str | None = None,
    ) -> Run:
        """`codex exec PROMPT` with the README's frs table (or the TOML text `mcp`) in its
        config; `resume` continues that conversation (`codex exec resume ID PROMPT`);
        `settings` adds top-level config lines; `hooks` is hooks.json, run without being
        trusted first (`--dangerously-bypass-hook-trust`, as the README says for exec)."""
        codex_home = self.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        self.workspace.mkdir(parents=True, exist_ok=True)
        text = snippet() if mcp is None else mcp
        config = config_toml(model_url, text, settings)
        (codex_home / "config.toml").write_text(config, encoding="utf-8")
        if hooks is not None:
            (codex_home / "hooks.json").write_text(hooks, encoding="utf-8")
        tables = tomllib.loads(text).get("mcp_servers", {})
        wait = [
            part
            for name in tables
            for setting in ("required=true", f"startup_timeout_sec={STARTUP}")
            for part in ("-c", f"mcp_servers.{name}.{setting}")
        ]
        command = [
            *pinned.codex(self.root),
            "exec",
            *(["--dangerously-bypass-hook-trust"] if hooks is not None else []),
            *(["resume", resume] if resume else []),
            "--skip-git-repo-check",
            "--json",
            *wait,
            prompt,
        ]
        try:
            done = subprocess.run(
                command,
                env=self.env(),
                cwd=self.workspace,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"codex exec did not finish in {timeout} s: {exc}") from None
        return Run(done.returncode, done.stdout, done.stderr)
