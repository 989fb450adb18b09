"""The README's install section and host snippets (issue 10), as a reader on the package index
meets them: install first, isolated installs first, links that work there, snippets that work
when pasted.

Each stdio snippet is run the way its host would start it, with the local `frs-mcp` standing in
for `uvx frs-mcp` (which would fetch the package from PyPI): it must answer `initialize` and
open the database the snippet names, `~` included.
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


def stdio_entries() -> list[dict[str, Any]]:
    """Every server entry with a `command` in the README's JSON snippets."""
    entries = []
    for block in json_blocks():
        for servers in (block.get("mcpServers", {}), block.get("servers", {})):
            entries += [entry for entry in servers.values() if "command" in entry]
    return entries


class TestInstallSection:
    def test_install_comes_right_after_the_two_commands(self) -> None:
        after_commands = README.split("```bash\n", 1)[1].split("```", 1)[1]
        assert after_commands.lstrip().startswith("## Install\n")

    def test_it_leads_with_isolated_installs_then_the_source_checkout_then_a_host(self) -> None:
        install = section("Install")
        order = [install.index(s) for s in ("uvx frs-mcp", "pipx install frs-mcp")]
        order += [install.index("source checkout"), install.index("### Connect a host")]
        assert order == sorted(order)

    def test_the_claude_desktop_snippet_is_mcp_json_and_names_the_database(self) -> None:
        (desktop,) = json_blocks(section("Install"))
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
        assert len(json_blocks()) >= 4

    def test_every_stdio_snippet_runs_frs_mcp_with_uvx_and_gives_a_database(self) -> None:
        entries = stdio_entries()
        assert len(entries) == 4  # Claude Desktop, Claude Code, VS Code, Cursor
        for entry in entries:
            assert (entry["command"], entry["args"][0]) == ("uvx", "frs-mcp"), entry
            assert "--db" in entry["args"] or "FRS_DB" in entry.get("env", {}), entry

    @pytest.mark.slow
    @pytest.mark.parametrize("index", range(4), ids=["desktop", "code", "vscode", "cursor"])
    def test_a_pasted_snippet_starts_the_server_on_the_database_it_names(
        self, index: int, tmp_path: Path
    ) -> None:
        entry = stdio_entries()[index]
        home = tmp_path / "home"
        env = {"HOME": str(home), "PATH": str(Path(FRS_MCP).parent), **entry.get("env", {})}
        done = subprocess.run(
            [FRS_MCP, *entry["args"][1:]],
            input=INIT,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout.splitlines()[0])
        assert answer["result"]["serverInfo"]["name"], answer
        assert (home / ".local" / "share" / "frs-mcp" / "frs.db").is_file(), done.stderr
