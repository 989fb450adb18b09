"""frs-mcp inside real Claude Code (pinned in tests/hosts/package.json), run headless against
the scripted model, configured by the README's Claude Code snippet. Assertions are on what the
model received: the tools as Claude Code presents them, each result as it forwards it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts import claude_code
from tests.hosts.claude_code import ClaudeCode, call, name
from tests.hosts.model import ModelServer, Seen, Turn
from tests.hosts.scenario import Scenario

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

FRS_TOOLS = (
    "frs_session",
    "frs_record",
    "frs_view_thread",
    "frs_compress_range",
    "frs_compress_last",
    "frs_restore",
    "get_alias",
    "frs_focus",
    "frs_plan",
    "frs_source",
)


@pytest.fixture
def claude(hosts_root: Path, tmp_path: Path) -> ClaudeCode:
    return ClaudeCode(hosts_root, tmp_path / "home", tmp_path / "project")


def loads_by_keyword(seen: Seen) -> Turn:
    """After the keyword search: load by name the frs tools "squash" did not bring."""
    found = {block["tool_name"] for block in seen.result.raw["content"]}
    missing = [name(tool) for tool in ("frs_session", "frs_record", "get_alias")]
    assert name("frs_compress_range") in found, found
    return Turn.call("ToolSearch", query="select:" + ",".join(t for t in missing if t not in found))


def test_the_readme_snippet_is_what_claude_code_is_given() -> None:
    entry = json.loads(claude_code.config())["mcpServers"]["frs"]
    assert Path(entry["command"]).name == "frs-mcp"
    assert Path(entry["command"]).is_absolute()
    assert entry["type"] == "stdio"


def test_the_scenario_in_claude_code(claude: ClaudeCode, model_server: ModelServer) -> None:
    keyword = Turn.call("ToolSearch", query="squash")
    scenario = Scenario(call, load=[keyword, loads_by_keyword])
    script = model_server.play(scenario.script())
    run = claude.run(model_server.url, "Find the flaky test's cause; keep your thread in frs.")
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    scenario.check(script)

    # Deferred: the first request names every frs tool but carries none of their schemas.
    first = script.seen_at(0)
    listed = first.body["messages"]
    shown = json.dumps(listed)
    assert all(name(tool) in shown for tool in FRS_TOOLS), shown[:2000]
    assert not [t for t in first.tool_names() if t.startswith(claude_code.PREFIX)]
    # ToolSearch "squash" finds the squash tool by keyword; its schema arrives deferred.
    after_keyword = script.seen_at(1)
    loaded = after_keyword.tool(name("frs_compress_range"))
    assert loaded.raw.get("defer_loading") is True
    assert "from" in loaded.schema["properties"]
    assert after_keyword.tool(name("frs_restore"))
