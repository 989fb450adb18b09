"""The MCP conformance suite (`@modelcontextprotocol/conformance`, server mode, on Node 22) runs
its generic server scenarios against frs-mcp's Streamable HTTP endpoint, and every one passes.

Most of the suite's scenarios call its own fixture tools, resources and prompts (`test_*`,
`test://...`), which only its reference server has; those are out of scope, each with its reason
below. The suite sends no headers of its own, so the server runs on 127.0.0.1 without a token.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.conftest import NodeClients
from tests.clients.frs_process import FrsProcess, frs_http

pytestmark = [pytest.mark.clients, pytest.mark.slow]

CLI = ("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")

IN_SCOPE = (
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "http-header-validation",
    "caching",
    "sep-2164-resource-not-found",
    "server-sse-multiple-streams",
    "resources-subscribe",
    "resources-unsubscribe",
)

_FIXTURE_TOOLS = "calls the suite's fixture tools (test_*), which only its reference server has"
_FIXTURE_RESOURCES = "reads the suite's fixture resources (test://...)"
_FIXTURE_PROMPTS = "gets the suite's fixture prompts (test_*_prompt)"
_INPUT_REQUIRED = (
    "needs fixture tools and prompts that answer with input_required (multi-round-trip); "
    "frs-mcp never asks the client for input"
)
_FALSE_PASS = (
    "calls a fixture tool and accepts the 'Unknown tool' isError result as a pass, so it "
    "proves nothing about frs-mcp"
)
OUT_OF_SCOPE: dict[str, str] = {
    "server-stateless": "26 of 28 checks pass; the other 2 need the fixture tool "
    "test_missing_capability (frs-mcp never needs a client capability)",
    "logging-set-level": "frs-mcp logs to stderr, not as protocol notifications (the logging "
    "capability is deprecated in 2026-07-28)",
    "completion-complete": "frs-mcp offers no argument completion",
    "tools-call-simple-text": _FALSE_PASS,
    "tools-call-error": _FALSE_PASS,
    "tools-call-image": _FIXTURE_TOOLS,
    "tools-call-audio": _FIXTURE_TOOLS,
    "tools-call-embedded-resource": _FIXTURE_TOOLS,
    "tools-call-mixed-content": _FIXTURE_TOOLS,
    "tools-call-with-logging": _FIXTURE_TOOLS,
    "tools-call-with-progress": _FIXTURE_TOOLS,
    "tools-call-sampling": _FIXTURE_TOOLS + "; frs-mcp never samples",
    "tools-call-elicitation": _FIXTURE_TOOLS + "; frs-mcp never elicits",
    "elicitation-sep1034-defaults": _FIXTURE_TOOLS + "; frs-mcp never elicits",
    "elicitation-sep1330-enums": _FIXTURE_TOOLS + "; frs-mcp never elicits",
    "json-schema-2020-12": _FIXTURE_TOOLS,
    "server-sse-polling": _FIXTURE_TOOLS,
    "http-custom-header-server-validation": "needs a tool annotated with x-mcp-header; "
    "frs-mcp has none",
    "resources-read-text": _FIXTURE_RESOURCES,
    "resources-read-binary": _FIXTURE_RESOURCES,
    "resources-templates-read": _FIXTURE_RESOURCES,
    "prompts-get-simple": _FIXTURE_PROMPTS,
    "prompts-get-with-args": _FIXTURE_PROMPTS,
    "prompts-get-embedded-resource": _FIXTURE_PROMPTS,
    "prompts-get-with-image": _FIXTURE_PROMPTS,
    **{
        f"tasks-{name}": "the tasks extension (not scored by the suite); frs-mcp has no tasks"
        for name in (
            "lifecycle",
            "capability-negotiation",
            "wire-fields",
            "request-state-removal",
            "mrtr-input",
            "request-headers",
            "dispatch-and-envelope",
            "status-notifications",
            "required-task-error",
            "mrtr-composition",
        )
    },
    **{
        f"input-required-result-{name}": _INPUT_REQUIRED
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "missing-input-response",
            "non-tool-request",
            "result-type",
            "unsupported-methods",
            "tampered-state",
            "capability-check",
            "ignore-extra-params",
            "validate-input",
        )
    },
}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrsProcess]:
    db = tmp_path_factory.mktemp("conformance") / "frs.db"
    with frs_http(db, "--transport", "streamable-http") as server:
        yield server


def conformance(
    node_clients: NodeClients, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    cli = str(node_clients.root.joinpath(*CLI))
    return subprocess.run(
        [node_clients.node, cli, *args],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
        env=node_clients.env(home),
    )


class TestConformanceSuite:
    @pytest.mark.parametrize("scenario", IN_SCOPE)
    def test_generic_server_scenario_passes(
        self, node_clients: NodeClients, plain: FrsProcess, tmp_path: Path, scenario: str
    ) -> None:
        out = tmp_path / "results"
        done = conformance(
            node_clients,
            tmp_path,
            "server",
            "--url",
            plain.mcp_url,
            "--scenario",
            scenario,
            "-o",
            str(out),
        )
        found = list(out.glob("*/checks.json"))
        assert len(found) == 1, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        checks = json.loads(found[0].read_text())
        failed = {c["id"]: c.get("errorMessage") for c in checks if c["status"] != "SUCCESS"}
        assert checks
        assert not failed, failed
        assert done.returncode == 0, done.stdout[-3000:]

    def test_every_server_scenario_is_either_run_or_out_of_scope_with_a_reason(
        self, node_clients: NodeClients, tmp_path: Path
    ) -> None:
        done = conformance(node_clients, tmp_path, "list", "--server")
        assert done.returncode == 0, done.stderr
        listed = set(re.findall(r"^\s+- (\S+)", done.stdout, flags=re.MULTILINE))
        assert listed
        assert not set(IN_SCOPE) & set(OUT_OF_SCOPE)
        assert listed == set(IN_SCOPE) | set(OUT_OF_SCOPE)
