"""The README's install section and host snippets (issues 10 and 19), as a newcomer who has only
this repository meets them: install from the checkout into an environment of its own, then
paste a host's snippet with the absolute path of the installed command.

Each stdio snippet is run the way its host would start it, with this environment's `frs-mcp` in
the place of the path the README writes (`tests.snippets.COMMAND`): it must answer `initialize`
and open the database the snippet names, `~` included. The package-index route is named only
as what it will be once published.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.dists import REPO
from tests.snippets import COMMAND, HOSTS, host_snippet

README = (REPO / "README.md").read_text(encoding="utf-8")
FRS_MCP = str(Path(sys.executable).with_name("frs-mcp"))
INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    '"capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}\n'
)


def section(title: str) -> str:
    """The README's `## title` section, up to the next `## ` heading."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def json_blocks(text: str = README) -> list[Any]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]


class TestInstallSection:
    def test_install_comes_right_after_the_two_commands(self) -> None:
        after_commands = README.split("```bash\n", 1)[1].split("```", 1)[1]
        assert after_commands.lstrip().startswith("## Install\n")

    def test_it_installs_the_checkout_in_an_environment_of_its_own_then_connects_a_host(
        self,
    ) -> None:
        install = section("Install")
        steps = ("uv tool install .", "pipx install .", "pip install .", "### Connect a host")
        order = [install.index(step) for step in steps]
        assert order == sorted(order)
        assert "**not on the package index yet**" in install

    def test_the_package_index_route_is_only_what_it_will_be_once_published(self) -> None:
        published = README.index("**Once frs-mcp is published**")
        for by_name in ("uvx frs-mcp", "pipx install frs-mcp"):
            assert README.index(by_name) > published, by_name
        assert not re.search(r'"command": "uvx", "args": \["frs-mcp"', README)

    def test_the_claude_desktop_snippet_is_mcp_json_and_names_the_database(self) -> None:
        desktop = host_snippet("Claude Desktop").parsed()
        assert desktop == json.loads((REPO / "mcp.json").read_text(encoding="utf-8"))
        assert "FRS_DB" in desktop["mcpServers"]["frs"]["env"]

    def test_every_link_works_on_the_package_index(self) -> None:
        # PyPI shows README.md without the repository around it: no relative links or anchors.
        # The one exception is the viewer's screenshot: the package index shows its alt text.
        relative = re.findall(r"\]\((?!https?://)([^)]*)\)", README)
        assert [link for link in relative if not link.startswith("docs/screenshots/")] == []

    def test_it_names_the_registry_entry_for_the_ownership_check(self) -> None:
        name = json.loads((REPO / "server.json").read_text(encoding="utf-8"))["name"]
        assert f"mcp-name: {name}" in README


class TestHostSnippets:
    def test_every_json_snippet_parses(self) -> None:
        assert len(json_blocks()) >= 6

    def test_each_host_has_one_snippet_that_parses_in_its_own_format(self) -> None:
        languages = {host: host_snippet(host).language for host in HOSTS}
        assert languages == dict.fromkeys(HOSTS, "json") | {"Codex CLI": "toml"}
        codex = host_snippet("Codex CLI").parsed()
        assert set(codex["mcp_servers"]["frs"]) == {"command", "args"}
        opencode = host_snippet("OpenCode").parsed()["mcp"]["frs"]
        assert (opencode["type"], opencode["enabled"]) == ("local", True)

    def test_every_stdio_entry_starts_the_installed_command_and_names_a_database(self) -> None:
        for host in HOSTS:
            server = host_snippet(host).server()
            assert server.command == COMMAND, host
            assert "--db" in server.args or "FRS_DB" in server.env, host
        # A hook configuration's commands are not MCP servers (tests/server/hooks/test_config.py).
        in_blocks = re.findall(r"```json\n(?!\{\"hooks\")[^`]*\"command\"", README)
        json_hosts = [host for host in HOSTS if host_snippet(host).language == "json"]
        assert len(in_blocks) == len(json_hosts), "every stdio entry is a host's snippet"

    def test_the_claude_code_command_line_writes_the_same_entry(self) -> None:
        server = host_snippet("Claude Code").server()
        command = f"claude mcp add frs -- {server.command} {' '.join(server.args)}"
        assert f"`{command}`" in README.replace("\n", " ")

    @pytest.mark.slow
    @pytest.mark.parametrize("host", HOSTS)
    def test_a_pasted_snippet_starts_the_server_on_the_database_it_names(
        self, host: str, tmp_path: Path
    ) -> None:
        name, server = host, host_snippet(host).server(FRS_MCP)
        home = tmp_path / "home"
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin", **server.env}
        done = subprocess.run(
            [server.command, *server.args],
            input=INIT,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 0, (name, done.stderr)
        answer = json.loads(done.stdout.splitlines()[0])
        assert answer["result"]["serverInfo"]["name"] == "frs-mcp", answer
        assert (home / ".local" / "share" / "frs-mcp" / "frs.db").is_file(), (name, done.stderr)
