"""frs-mcp inside real Codex CLI (pinned in tests/hosts/package.json), run headless against the
scripted model, configured by the README's Codex snippet. Assertions are on what the model
received: the tools as Codex presents them, each result as it forwards it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.hosts import codex
from tests.hosts.codex import Codex, call
from tests.hosts.model import ModelServer, Script, Turn
from tests.hosts.scenario import LABELS, STRUCTURED, Scenario

pytestmark = [pytest.mark.hosts, pytest.mark.slow]


@pytest.fixture
def host(hosts_root: Path, tmp_path: Path) -> Codex:
    return Codex(hosts_root, tmp_path / "home", tmp_path / "project")


def test_the_readme_snippet_is_what_codex_is_given(tmp_path: Path) -> None:
    written = codex.config_toml("http://127.0.0.1:1", codex.snippet())
    assert written.endswith(codex.snippet())
    entry = tomllib.loads(written)["mcp_servers"]["frs"]
    assert Path(entry["command"]).name == "frs-mcp"
    assert Path(entry["command"]).is_absolute()


def test_the_scenario_in_codex(host: Codex, model_server: ModelServer) -> None:
    scenario = Scenario(call, load=codex.FIND_TOOLS)
    script = model_server.play(scenario.script())
    run = host.run(model_server.url, "Find the flaky test's cause; keep your thread in frs.")
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    scenario.check(script)
    # Codex CLI forwards a tool's structured content, as JSON, when it has one.
    assert scenario.forms(script) == {
        label: "json" if label in STRUCTURED else "text" for label in LABELS
    }

    # Deferred: the first request names the frs namespace (with the server's instructions)
    # and carries no frs tool; tool_search "squash" brings the namespace with its tools.
    first = script.seen_at(0)
    assert "Deferred tool namespaces:\n- mcp__frs: FRS is your working memory" in json.dumps(
        first.body["input"]
    ).replace("\\n", "\n")
    assert not [name for name in first.tool_names() if name.startswith("frs")]
    [namespace] = json.loads(script.seen_at(1).result.text)
    assert namespace["name"] == codex.NAMESPACE
    assert "frs_compress_range" in {tool["name"] for tool in namespace["tools"]}


def conversation(note: str) -> Script:
    """Find the frs tools, record `note`, view the thread, stop."""
    return Script(
        [
            *codex.FIND_TOOLS,
            Turn("", (call("frs_record", {"messages": [{"role": "user", "content": note}]}),)),
            Turn("", (call("frs_view_thread", {}),)),
            Turn("Noted."),
        ]
    )


def view_of(script: Script) -> str:
    script.check_done()
    return script.seen_at(3).result.text


def test_two_conversations_keep_two_threads_and_a_resumed_one_continues_its_own(
    host: Codex, model_server: ModelServer
) -> None:
    first = model_server.play(conversation("alpha: the first conversation"))
    run_a = host.run(model_server.url, "First task.")
    assert run_a.returncode == 0, run_a.describe()
    assert "[1] User: alpha: the first conversation" in view_of(first)

    second = model_server.play(conversation("beta: the second conversation"))
    run_b = host.run(model_server.url, "Second task.")
    assert run_b.returncode == 0, run_b.describe()
    assert run_b.thread_id != run_a.thread_id
    view_b = view_of(second)
    assert "[1] User: beta: the second conversation" in view_b, view_b
    assert "alpha" not in view_b, view_b

    resumed = model_server.play(conversation("alpha again, resumed"))
    run_c = host.run(model_server.url, "Back to the first task.", resume=run_a.thread_id)
    assert run_c.returncode == 0, run_c.describe()
    view_c = view_of(resumed)
    assert "[1] User: alpha: the first conversation" in view_c, view_c
    assert "[2] User: alpha again, resumed" in view_c, view_c
    assert "beta" not in view_c, view_c
