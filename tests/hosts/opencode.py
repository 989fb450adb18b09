"""OpenCode, run headless (`opencode run`) against the scripted model, with frs-mcp configured by
the README's OpenCode snippet.

How it is run (OpenCode 1.18.33, its native binary; read from the JavaScript it embeds and
checked against a request recorder and strace):
- The model is a provider of the user config (`~/.config/opencode/opencode.json`) built on
  @ai-sdk/openai-compatible, which the binary bundles (no provider package is fetched), with
  `options.baseURL` at the scripted model: OpenAI Chat Completions, streamed. The first request
  of a new session asks for its title (no tools offered: a side call of the script).
- OPENCODE_DISABLE_MODELS_FETCH=1 keeps it from fetching models.dev, OPENCODE_DISABLE_AUTOUPDATE=1
  from checking for a release, `"share": "disabled"` from sharing.
- At every start OpenCode installs @opencode-ai/plugin (with @opentui/* and effect) from the npm
  registry into each config folder, for plugins written there, unless the folder already has a
  node_modules and a package-lock.json whose root lists that package (`Npm.install` checks
  only that). The temporary config folder gets both, with no packages in them: this run loads
  no plugin, so nothing is downloaded. Without them, ~/.npm fills from registry.npmjs.org.
  With them, strace saw no connection but the one to the loopback model.
- `opencode.json` in the workspace (the README snippet) is the project config. PWD must name
  the workspace: with a PWD left from another folder, OpenCode still reads the workspace's
  opencode.json, but its MCP servers start for the PWD folder (their root is that folder) from
  the other configs only, and the model is offered no frs tool.
- MCP tools are allowed without asking by default; nothing else is needed in a headless run.

What the model receives: frs-mcp's instructions in the system prompt (<mcp_instructions><server
name="frs">); every frs tool at once (no deferral), named `<server>_<tool>`
(`frs_frs_view_thread`), with the server's description and input schema as `parameters`.
A result arrives as the tool's text content, as it is (never its structured content); an error
as its text ("Error executing tool frs_record: Stale revision: …"), with nothing marking it an
error: Chat Completions has no error flag on a tool message.

What it passes to the MCP servers it starts: `clientInfo` {"name": "opencode", "version":
"1.18.33"}; a `roots` capability answering the project folder; its whole environment plus
OPENCODE=1, AGENT=1 and OPENCODE_PID (the OpenCode process, which may hold many sessions);
`_meta.progressToken` (a number) on each tools/call. Once a step ends it sends
notifications/cancelled ("AbortError: The operation was aborted.") for each call of the step,
after the results came back: frs-mcp ignores a cancel for a finished request.
Nothing names the conversation (OpenCode's `ses_…` id stays inside it), so frs-mcp's scope is
the client and root (`opencode@file:///…`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts import pinned, readme
from tests.hosts.model import ToolCall
from tests.hosts.runs import HostRun

TIMEOUT = 180  # a scenario takes seconds; this only stops a hung host
PREFIX = "frs_"
VERSION = "1.18.33"
MODEL = "scripted/frs-test"
# The plugin package OpenCode would install into each config folder, marked as installed.
PLUGIN_DEPENDENCIES = {"dependencies": {"@opencode-ai/plugin": VERSION}}


def name(tool: str) -> str:
    """The name OpenCode gives an frs tool: <server>_<tool>."""
    return PREFIX + tool


def call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    """A call of an frs tool by the name OpenCode gives it."""
    return ToolCall(name(tool), arguments)


def config() -> dict[str, Any]:
    """The README's OpenCode entry (opencode.json) as pasted, with this checkout's frs-mcp."""
    return readme.parsed("OpenCode")


def provider(model_url: str, limit: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The user config: the scripted model as an OpenAI-compatible provider, nothing shared;
    `limit` is the model's (`context`, `output`: OpenCode compacts by it)."""
    provider_id, model_id = MODEL.split("/")
    model: dict[str, Any] = {"name": "Scripted", "tool_call": True}
    if limit is not None:
        model["limit"] = dict(limit)
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            provider_id: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted model",
                "options": {"baseURL": f"{model_url}/v1", "apiKey": "scripted-model-key"},
                "models": {model_id: model},
            }
        },
        "model": MODEL,
        "small_model": MODEL,
        "autoupdate": False,
        "share": "disabled",
    }


class Run(HostRun):
    """A finished `opencode run`: its exit code, and the JSON events it printed."""

    @property
    def events(self) -> list[dict[str, Any]]:
        try:
            return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]
        except ValueError:
            raise AssertionError(f"opencode printed no JSON events: {self.describe()}") from None


@dataclass(frozen=True)
class OpenCode:
    """OpenCode installed under `root`, with its HOME at `home`, run in `workspace`."""

    root: Path
    home: Path
    workspace: Path

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        return {
            **env,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "PWD": str(self.workspace),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
        }

    def run(
        self,
        model_url: str,
        prompt: str,
        mcp: dict[str, Any] | None = None,
        limit: Mapping[str, int] | None = None,
        timeout: float = TIMEOUT,
        plugin: str | None = None,
    ) -> Run:
        """`opencode run PROMPT` with the README's frs entry (or `mcp`) as the workspace's
        opencode.json and the scripted model as the user config's provider (with `limit`,
        see `provider`); `plugin` is a plugin file's text, put in the user's plugins folder."""
        folder = self.home / ".config" / "opencode"
        if plugin is not None:
            (folder / "plugins").mkdir(parents=True, exist_ok=True)
            (folder / "plugins" / "frs-mcp.js").write_text(plugin, encoding="utf-8")
        (folder / "node_modules").mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text(json.dumps(PLUGIN_DEPENDENCIES), encoding="utf-8")
        lock = {"lockfileVersion": 3, "packages": {"": PLUGIN_DEPENDENCIES}}
        (folder / "package-lock.json").write_text(json.dumps(lock), encoding="utf-8")
        user_config = json.dumps(provider(model_url, limit))
        (folder / "opencode.json").write_text(user_config, encoding="utf-8")
        self.workspace.mkdir(parents=True, exist_ok=True)
        project = self.workspace / "opencode.json"
        project.write_text(json.dumps(config() if mcp is None else mcp), encoding="utf-8")
        command = [*pinned.opencode(self.root), "run", "--format", "json", prompt]
        try:
            done = subprocess.run(
                command,
                env=self.env(),
                cwd=self.workspace,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"opencode run did not finish in {timeout} s: {exc}") from None
        return Run(done.returncode, done.stdout, done.stderr)
