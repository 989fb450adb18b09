"""frs-mcp inside real Claude Code (pinned in tests/hosts/package.json), run headless against
the scripted model, configured by the README's Claude Code snippet. Assertions are on what the
model received: the tools as Claude Code presents them, each result as it forwards it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts import claude_code
from tests.hosts.claude_code import ClaudeCode, call, name
from tests.hosts.model import ModelServer, Script, Turn
from tests.hosts.scenario import LABELS, STRUCTURED, Scenario

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


def test_the_readme_snippet_is_what_claude_code_is_given() -> None:
    entry = json.loads(claude_code.config())["mcpServers"]["frs"]
    assert Path(entry["command"]).name == "frs-mcp"
    assert Path(entry["command"]).is_absolute()
    assert entry["type"] == "stdio"


def test_the_scenario_in_claude_code(claude: ClaudeCode, model_server: ModelServer) -> None:
    scenario = Scenario(call, load=claude_code.FIND_TOOLS)
    script = model_server.play(scenario.script())
    run = claude.run(model_server.url, "Find the flaky test's cause; keep your thread in frs.")
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    scenario.check(script)
    # Claude Code forwards a tool's structured content, as JSON, when it has one.
    assert scenario.forms(script) == {
        label: "json" if label in STRUCTURED else "text" for label in LABELS
    }

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


def test_the_scenario_with_tool_search_off_shows_every_frs_tool_upfront(
    claude: ClaudeCode, model_server: ModelServer
) -> None:
    """ENABLE_TOOL_SEARCH=false turns Claude Code's tool search off: the model then gets every
    frs tool's schema in the first request."""
    scenario = Scenario(call)
    script = model_server.play(scenario.script())
    run = claude.run(model_server.url, "Find the flaky test's cause.", tool_search=False)
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    scenario.check(script)
    first = script.seen_at(0)
    frs = [tool for tool in first.tools if tool.name.startswith(claude_code.PREFIX)]
    assert sorted(tool.name for tool in frs) == sorted(name(tool) for tool in FRS_TOOLS)
    assert not [tool for tool in frs if tool.raw.get("defer_loading")]


def test_tool_search_is_on_by_default_with_a_loopback_base_url(
    claude: ClaudeCode, model_server: ModelServer
) -> None:
    """The README's claim: the pinned Claude Code, pointed at a model on 127.0.0.1 (as at the
    gateway) with no ENABLE_TOOL_SEARCH, offers ToolSearch and defers the frs tools."""
    script = model_server.play(Script([Turn("Done.")]))
    run = claude.run(model_server.url, "Hello.", tool_search=None)
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    assert model_server.url.startswith("http://127.0.0.1:")
    first = script.seen_at(0)
    assert "ToolSearch" in first.tool_names()
    assert not [t for t in first.tool_names() if t.startswith(claude_code.PREFIX)]
    shown = json.dumps(first.body["messages"])
    assert all(name(tool) in shown for tool in FRS_TOOLS), shown[:2000]


def test_claude_mcp_add_writes_the_entry_to_claude_json_not_mcp_json(claude: ClaudeCode) -> None:
    """The README: `claude mcp add` (scope local) writes ~/.claude.json, under the project."""
    entry = json.loads(claude_code.config())["mcpServers"]["frs"]
    claude.workspace.mkdir(parents=True)
    done = claude.command("mcp", "add", "frs", "--", entry["command"], *entry["args"])
    assert done.returncode == 0, done.stderr
    assert not (claude.workspace / ".mcp.json").exists()
    written = json.loads((claude.home / ".claude.json").read_text(encoding="utf-8"))
    added = written["projects"][str(claude.workspace.resolve())]["mcpServers"]["frs"]
    assert {key: added[key] for key in entry} == entry
    assert "frs" not in written.get("mcpServers", {}), "user scope only with --scope user"


KEYWORDS = {
    "squash": "frs_compress_range",
    "compress": "frs_compress_range",
    "summarize": "frs_compress_range",
    "expand": "get_alias",
    "undo": "frs_restore",
    "restore": "frs_restore",
}


def test_tool_search_finds_the_right_frs_tool_by_keyword(
    claude: ClaudeCode, model_server: ModelServer
) -> None:
    searches = [Turn.call("ToolSearch", query=word, max_results=3) for word in KEYWORDS]
    script = model_server.play(Script([*searches, Turn("Found them.")]))
    run = claude.run(model_server.url, "Which frs tools squash, expand and undo?")
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    script.check_done()
    for step, (word, tool) in enumerate(KEYWORDS.items(), start=1):
        found = [block["tool_name"] for block in script.seen_at(step).result.raw["content"]]
        assert name(tool) in found, (word, found)


def conversation(note: str) -> Script:
    """Load the frs tools, record `note`, view the thread, stop."""
    tools = ",".join(name(tool) for tool in ("frs_record", "frs_view_thread"))
    return Script(
        [
            Turn.call("ToolSearch", query=f"select:{tools}"),
            Turn.call(name("frs_record"), messages=[{"role": "user", "content": note}]),
            Turn.call(name("frs_view_thread")),
            Turn("Noted."),
        ]
    )


def view_of(script: Script) -> str:
    """The view the model received at the end of a conversation()."""
    script.check_done()
    return script.seen_at(3).result.text


def test_two_conversations_keep_two_threads_and_a_resumed_one_continues_its_own(
    claude: ClaudeCode, model_server: ModelServer
) -> None:
    first = model_server.play(conversation("alpha: the first conversation"))
    run_a = claude.run(model_server.url, "First task.")
    assert run_a.returncode == 0, run_a.describe()
    view_a = view_of(first)
    assert "[1] User: alpha: the first conversation" in view_a, view_a

    second = model_server.play(conversation("beta: the second conversation"))
    run_b = claude.run(model_server.url, "Second task.")
    assert run_b.returncode == 0, run_b.describe()
    assert run_b.session_id != run_a.session_id
    view_b = view_of(second)
    assert "[1] User: beta: the second conversation" in view_b, view_b
    assert "alpha" not in view_b, view_b

    resumed = model_server.play(conversation("alpha again, resumed"))
    run_c = claude.run(model_server.url, "Back to the first task.", "--resume", run_a.session_id)
    assert run_c.returncode == 0, run_c.describe()
    view_c = view_of(resumed)
    assert "[1] User: alpha: the first conversation" in view_c, view_c
    assert "[2] User: alpha again, resumed" in view_c, view_c
    assert "beta" not in view_c, view_c
    # The model server saw which conversation each request came from, as frs-mcp did.
    ids = {e.header("X-Claude-Code-Session-Id") for e in resumed.log if e.kind == "step"}
    assert ids == {run_a.session_id}
