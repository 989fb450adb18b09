"""frs-mcp inside real OpenCode (pinned in tests/hosts/package.json), run headless against the
scripted model, configured by the README's OpenCode snippet. Assertions are on what the model
received: the tools as OpenCode presents them, each result as it forwards it."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.mcp.app import INSTRUCTIONS
from tests.hosts import opencode
from tests.hosts.listed import server_tools
from tests.hosts.model import ModelServer, Script, Turn
from tests.hosts.opencode import OpenCode, call, name
from tests.hosts.scenario import Scenario, content, form

pytestmark = [pytest.mark.hosts, pytest.mark.slow]


@pytest.fixture
def host(hosts_root: Path, tmp_path: Path) -> OpenCode:
    return OpenCode(hosts_root, tmp_path / "home", tmp_path / "project")


def test_the_readme_snippet_is_what_opencode_is_given() -> None:
    entry = opencode.config()["mcp"]["frs"]
    assert entry["type"] == "local"
    assert Path(entry["command"][0]).name == "frs-mcp"


def test_the_scenario_in_opencode(
    host: OpenCode, model_server: ModelServer, tmp_path: Path
) -> None:
    scenario = Scenario(call)
    script = model_server.play(scenario.script())
    run = host.run(model_server.url, "Find the flaky test's cause; keep your thread in frs.")
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    scenario.check(script)
    said = [e["part"]["text"] for e in run.events if e["type"] == "text"]
    assert said[-1].startswith("The thread is back as it was"), run.describe()
    # Chat Completions, streamed; the one request that is not a step asks for the title.
    assert {e.path for e in script.log} == {"/v1/chat/completions"}
    assert [e.kind for e in script.log].count("side") == 1, script.describe()
    assert all(e.json["stream"] for e in script.log)

    # Shown at once: every frs tool in the first request, with the server's description and
    # input schema, closed to other properties by OpenCode.
    first = script.seen_at(0)
    listed = server_tools(tmp_path / "listed.db")
    for tool, served in listed.items():
        shown = first.tool(name(tool))
        assert shown.description == served["description"], tool
        assert shown.schema == {**served["inputSchema"], "additionalProperties": False}, tool

    # The server's instructions go in the system prompt, under <mcp_instructions>.
    assert '<server name="frs">' in first.system, first.system[-3000:]
    assert " ".join(INSTRUCTIONS.split()) in " ".join(first.system.split()), first.system[-3000:]

    # Forwarded as the tool's text, never its structured content; an error as its text alone.
    received = scenario.received(script)
    assert set(scenario.forms(script).values()) == {"text"}, scenario.forms(script)
    for result in received.values():
        assert result.raw["role"] == "tool", result.raw
        assert isinstance(result.raw["content"], str), result.raw
        assert form(result) == "text", result.text
    stale = received["stale"].text
    assert stale.startswith("Error executing tool frs_compress_range: Stale revision"), stale


def test_two_conversations_in_one_project_share_its_thread(
    host: OpenCode, model_server: ModelServer
) -> None:
    # OpenCode tells its MCP servers nothing of the conversation (OPENCODE_PID names the
    # process, which may hold many sessions): its scope is the client and project, whose
    # current session both conversations continue, as the README's "Whose session" says.
    def conversation(note: str) -> Script:
        return Script(
            [
                Turn.call(name("frs_record"), messages=[{"role": "user", "content": note}]),
                Turn.call(name("frs_view_thread")),
                Turn("Noted."),
            ]
        )

    first = model_server.play(conversation("alpha: the first conversation"))
    run_a = host.run(model_server.url, "First task.")
    assert run_a.returncode == 0, run_a.describe() + "\n" + first.describe()
    second = model_server.play(conversation("beta: the second conversation"))
    run_b = host.run(model_server.url, "Second task.")
    assert run_b.returncode == 0, run_b.describe() + "\n" + second.describe()
    sessions = {e["sessionID"] for run in (run_a, run_b) for e in run.events}
    assert len(sessions) == 2, sessions
    second.check_done()
    view = content(second.seen_at(2).result)
    assert "[1] User: alpha: the first conversation" in view, view
    assert "[2] User: beta: the second conversation" in view, view
