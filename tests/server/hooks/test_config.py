"""The hook configurations: the README's, pasted as is, are what `frs-mcp hook --print-config`
prints, and each runs this frs-mcp's hook command for its host on the README's database."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli.hooks import config
from tests.snippets import COMMAND, HOOK_HOSTS, README, host_snippet

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(("name", "host"), HOOK_HOSTS.items())
def test_the_readme_snippet_is_the_printed_configuration(name: str, host: str) -> None:
    snippet = host_snippet(name)
    assert snippet.language == "json"
    assert snippet.text.rstrip("\n") == config.text(host, COMMAND)


@pytest.mark.parametrize(("name", "host"), HOOK_HOSTS.items())
def test_every_command_runs_the_hook_for_its_event_on_the_readmes_database(
    name: str, host: str
) -> None:
    hooks = host_snippet(name).parsed()["hooks"]
    for event, groups in hooks.items():
        [group] = groups
        for handler in group["hooks"]:
            argv = shlex.split(handler["command"])
            head = [COMMAND, "hook", host, event, "--db", "~/.local/share/frs-mcp/frs.db"]
            assert argv[:6] == head
            assert argv[6:] in ([], ["--part", "1/2"], ["--part", "2/2"])
            assert handler["type"] == "command"
    mcp = host_snippet({"claude-code": "Claude Code", "codex": "Codex CLI"}.get(host, "Gemini CLI"))
    assert "~/.local/share/frs-mcp/frs.db" in mcp.server().args


def test_the_digests_events_are_the_compaction_ones() -> None:
    claude = host_snippet("Claude Code hooks").parsed()["hooks"]
    codex = host_snippet("Codex CLI hooks").parsed()["hooks"]
    assert claude["SessionStart"][0]["matcher"] == "compact"
    assert codex["SessionStart"][0]["matcher"] == "compact"
    assert set(claude) == {"Stop", "SubagentStop", "PreCompact", "SessionStart"}
    assert set(codex) == {"Stop", "PreCompact", "SessionStart"}
    # Claude Code shows 10,000 characters of one hook's answer: the digest comes in two parts.
    parts = [h["command"].split()[-1] for h in claude["SessionStart"][0]["hooks"]]
    assert parts == ["1/2", "2/2"]


@pytest.mark.slow
@pytest.mark.parametrize("host", ["claude-code", "codex", "gemini-cli", "opencode"])
def test_print_config_names_the_frs_mcp_that_ran(host: str, tmp_path: Path) -> None:
    """`frs-mcp hook --print-config HOST`, run by the installed command, prints the README's
    configuration with that command's absolute path."""
    command = Path(sys.executable).with_name("frs-mcp")
    done = subprocess.run(
        [str(command), "hook", "--print-config", host],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == config.text(host, str(command.resolve())).rstrip("\n") + "\n"
    if host == "opencode":
        assert f"const FRS = {json.dumps([str(command.resolve()), '--db', config.DATABASE])};" in (
            done.stdout
        )
        assert "print-config opencode >" in README


def test_a_digest_size_and_a_database_of_ones_own_go_on_the_commands() -> None:
    printed = json.loads(config.text("codex", "/opt/frs mcp/frs-mcp", 3000, "/data/my frs.db"))
    start = shlex.split(printed["hooks"]["SessionStart"][0]["hooks"][0]["command"])
    stop = shlex.split(printed["hooks"]["Stop"][0]["hooks"][0]["command"])
    assert start == [
        "/opt/frs mcp/frs-mcp",
        "hook",
        "codex",
        "SessionStart",
        "--db",
        "/data/my frs.db",
        "--tokens",
        "3000",
    ]
    assert "--tokens" not in stop
    plugin = config.plugin("/opt/frs-mcp", "/data/frs.db", 3000)
    assert 'const FRS = ["/opt/frs-mcp", "--db", "/data/frs.db"];' in plugin
    assert 'const TOKENS = ["--tokens", "3000"];' in plugin
