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
from tests.hosts.model import ModelServer
from tests.hosts.scenario import Scenario

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
