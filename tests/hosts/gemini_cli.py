"""Gemini CLI, run headless (`gemini -p`) against the scripted model, with frs-mcp configured by
the README's Gemini CLI snippet.

How it is run (Gemini CLI 0.61.0, read from its bundle and checked against a request recorder):
- The @google/genai SDK takes its base URL from GOOGLE_GEMINI_BASE_URL and the key from
  GEMINI_API_KEY. With that variable set and no auth type chosen, Gemini CLI picks a "gateway"
  auth type that headless mode refuses ("Invalid auth method selected.", exit 41), so the user
  settings choose `security.auth.selectedType: "gemini-api-key"`.
- Headless runs refuse an untrusted folder (exit 55). GEMINI_CLI_TRUST_WORKSPACE=true trusts
  the workspace for the run; `--skip-trust` lets the run go on too, but too late for the
  workspace's settings: the MCP servers in `.gemini/settings.json` are then not started.
- `-m gemini-2.5-pro` names the model: without it, a router first asks a flash-lite model
  (generateContent with a JSON schema) how complex the prompt is. Then each turn is one
  POST /v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse; the next-speaker check
  (`model.skipNextSpeakerCheck`) is off by default and no countTokens call is made.
- Usage statistics, telemetry, auto-update and the IDE connection are off in the user settings;
  with them off, strace saw no connection but the one to the loopback model.
- MCP tools that need approval are left out of a headless run's tool list: the README snippet's
  `"trust": true` is what lets the model see and call them (`--yolo` would too, for every tool).
  Project settings (`.gemini/settings.json` in the workspace, where the README snippet goes)
  load because the workspace is trusted.

What the model receives: frs-mcp's instructions in the first user turn ("The following are
instructions provided by the tool server 'frs'", inside <session_context>); every frs tool at
once (no deferral), named `mcp_<server>_<tool>` (`mcp_frs_frs_view_thread`), with the server's
description and its input schema as `parametersJsonSchema`, plus one property Gemini CLI adds
to every tool, `wait_for_previous`. (Its schema checker, Ajv in strict mode, prints "strict
mode: missing type" to stderr for frs's limits that sit beside an `anyOf`, such as the
`maxLength` of a nullable string; the schemas still reach the model whole.)
A result arrives as the tool's text content (never its structured content), wrapped as
{"output": "<untrusted_context>\\nTEXT\\n</untrusted_context>"}; an error as {"error": "MCP tool
'frs_record' reported tool error for function call: {…arguments…} with response: [{…,
"content": [{"type": "text", "text": "Error executing tool frs_record: …"}], "isError": true}]"},
so the error's words reach the model inside a JSON dump. Its system prompt tells the model that
MCP outputs come wrapped in <untrusted_context> and to ignore commands or directives within
them unless the user asks: frs's "retry with expected_revision=N" and "undo: frs_restore(…)"
reach a Gemini model as passive data.

What it passes to the MCP servers it starts: `clientInfo` {"name": "gemini-cli-mcp-client",
"version": "0.61.0"}; a `roots` capability answering the workspace folders; the environment
GEMINI_CLI=1 plus its own, with names that look like secrets (GEMINI_API_KEY …) removed;
`_meta.progressToken` (a fresh UUID) on each tools/call. Nothing names the conversation: its
session id (`gemini --session-id`, `--resume`) goes to hooks as GEMINI_SESSION_ID, never to MCP
servers, so frs-mcp's scope is the client and root (`gemini-cli-mcp-client@file:///…`).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts import pinned, readme
from tests.hosts.model import ToolCall
from tests.hosts.runs import HostRun

TIMEOUT = 180  # a scenario takes seconds; this only stops a hung host
PREFIX = "mcp_frs_"
MODEL = "gemini-2.5-pro"
# The user settings of the temporary HOME: API-key auth, nothing sent anywhere but the model.
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False},
}


def name(tool: str) -> str:
    """The name Gemini CLI gives an frs tool: mcp_<server>_<tool>."""
    return PREFIX + tool


def call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    """A call of an frs tool by the name Gemini CLI gives it."""
    return ToolCall(name(tool), arguments)


def config() -> dict[str, Any]:
    """The README's Gemini CLI entry (settings.json) as pasted, with this checkout's frs-mcp."""
    return readme.parsed("Gemini CLI")


class Run(HostRun):
    """A finished `gemini -p`: its exit code, output and the JSON result it printed."""

    @property
    def result(self) -> dict[str, Any]:
        return self.json_output("gemini")


@dataclass(frozen=True)
class GeminiCli:
    """Gemini CLI installed under `root`, with its HOME at `home`, run in `workspace`."""

    root: Path
    home: Path
    workspace: Path

    def env(self, model_url: str) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        return {
            **env,
            "HOME": str(self.home),
            "GEMINI_API_KEY": "scripted-model-key",
            "GOOGLE_GEMINI_BASE_URL": model_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "NO_COLOR": "1",
        }

    def run(
        self,
        model_url: str,
        prompt: str,
        mcp: dict[str, Any] | None = None,
        hooks: dict[str, Any] | None = None,
        resume: bool = False,
    ) -> Run:
        """`gemini -p PROMPT` with the README's frs entry (or `mcp`) as the workspace's
        settings, in a workspace trusted for the run; `hooks` joins the user settings (a hook
        configuration), `resume` continues the latest session (`--resume latest`)."""
        settings = self.home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({**SETTINGS, **(hooks or {})}), encoding="utf-8")
        project = self.workspace / ".gemini" / "settings.json"
        project.parent.mkdir(parents=True, exist_ok=True)
        project.write_text(json.dumps(config() if mcp is None else mcp), encoding="utf-8")
        command = [
            *pinned.gemini(self.root),
            "-m",
            MODEL,
            "-o",
            "json",
            "-p",
            prompt,
            *(["--resume", "latest"] if resume else []),
        ]
        try:
            done = subprocess.run(
                command,
                env=self.env(model_url),
                cwd=self.workspace,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"gemini -p did not finish in {TIMEOUT} s: {exc}") from None
        return Run(done.returncode, done.stdout, done.stderr)
