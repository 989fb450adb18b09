"""frs-mcp in real OpenCode (pinned, headless, against the scripted model) through the plugin
`frs-mcp hook --print-config opencode` writes: the session is recorded with no frs_record and no
gateway, and when OpenCode compacts, its summariser gets the digest as context and every later
request the model receives carries it in the system prompt; its alias returns the original
through the frs tools.

OpenCode tells the MCP servers it starts nothing of its session, so the model passes the
session the digest names (`session_id`)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.hosts import readme
from tests.hosts.hooked import (
    ERROR_LINE,
    FAILING,
    alias_for,
    digest_in,
    recorded,
    session_of,
)
from tests.hosts.model import ModelServer, Script, Seen, SideRule, ToolCall, Turn
from tests.hosts.model.script import DEFAULT_SIDE
from tests.hosts.opencode import OpenCode, name
from tests.snippets import README

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

#: The model's window: OpenCode compacts after a step whose usage reaches it, less the output.
LIMIT = {"context": 50_000, "output": 4_000}
WAIT = 30  # seconds the plugin's last recording may take after OpenCode exits


@pytest.fixture
def opencode(hosts_root: Path, tmp_path: Path) -> OpenCode:
    return OpenCode(hosts_root, tmp_path / "home", tmp_path / "project")


def summariser(seen: Seen) -> bool:
    return "context summarization agent" in seen.system


def plugin() -> str:
    """The plugin as the README says to make it: printed by this checkout's frs-mcp."""
    assert "frs-mcp hook --print-config opencode >" in README
    done = subprocess.run(
        [readme.frs_mcp(), "hook", "--print-config", "opencode"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_a_session_is_recorded_and_after_a_compaction_the_digest_returns_the_original(
    opencode: OpenCode, model_server: ModelServer
) -> None:
    got: dict[str, str] = {}

    def read_the_digest(seen: Seen) -> Turn:
        got["digest"] = digest_in(seen.system)
        alias = alias_for(got["digest"], FAILING)
        return Turn.call(name("get_alias"), alias=alias, session_id=session_of(got["digest"]))

    def read_the_original(seen: Seen) -> Turn:
        got["original"] = seen.result.text
        return Turn("The directory is still missing.")

    failing = ToolCall("bash", {"command": FAILING, "description": "List it"})
    script = model_server.play(
        Script(
            [
                # Reported near the window: OpenCode compacts after this step.
                Turn("", (failing,), input_tokens=LIMIT["context"] - 2_000),
                read_the_digest,
                read_the_original,
            ],
            side=(
                SideRule("summariser", summariser, lambda seen: Turn("OC-SUMMARY")),
                *DEFAULT_SIDE,
            ),
        )
    )
    run = opencode.run(model_server.url, "Look at the folder", limit=LIMIT, plugin=plugin())
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    script.check_done()

    # The summariser had the digest as context; the next request has it in its system prompt.
    [summary] = [e.seen for e in script.log if e.rule == "summariser" and e.seen]
    assert FAILING in digest_in(summary.last_user_text)
    assert FAILING in got["digest"]
    assert ERROR_LINE in got["digest"]
    assert "FRS (frs-mcp)" not in script.seen_at(0).system
    assert ERROR_LINE in got["original"]

    # The session was recorded from OpenCode's store, each message once; the last turn's end
    # is recorded as OpenCode goes idle, by the plugin, which may finish after OpenCode exits.
    conversation = re.findall(r"ses_[A-Za-z0-9]+", run.stdout)[0]
    deadline = time.monotonic() + WAIT
    thread = recorded(opencode.home, "opencode", conversation)
    while thread[-1:] != ["The directory is still missing."] and time.monotonic() < deadline:
        time.sleep(0.2)
        thread = recorded(opencode.home, "opencode", conversation)
    assert thread[0] == '"Look at the folder"'
    assert len([m for m in thread if ERROR_LINE in m and "M." not in m]) == 1
    assert thread[-1] == "The directory is still missing.", thread
