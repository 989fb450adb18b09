"""frs-mcp in real Codex CLI's own hooks (pinned, headless, against the scripted model),
configured by the README's hook snippet: the conversation is recorded with no frs_record and
no gateway, and after an automatic compaction mid-turn the next request the model receives
carries the digest, whose alias returns the original through the frs tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts import codex, readme
from tests.hosts.codex import Codex
from tests.hosts.hooked import ERROR_LINE, FAILING, alias_for, digest_in, recorded
from tests.hosts.model import ModelServer, Script, Seen, SideRule, ToolCall, Turn
from tests.hosts.model.script import DEFAULT_SIDE
from tests.hosts.model.wire import text_of

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

#: Codex compacts when a response reports this many input tokens (config.toml).
LIMIT = 50_000


@pytest.fixture
def host(hosts_root: Path, tmp_path: Path) -> Codex:
    return Codex(hosts_root, tmp_path / "home", tmp_path / "project")


def compaction(seen: Seen) -> bool:
    return "CONTEXT CHECKPOINT COMPACTION" in seen.last_user_text


def developer_text(seen: Seen) -> str:
    """The developer messages of a request (where Codex puts hook context)."""
    items = seen.body["input"]
    return "\n".join(
        text_of(item.get("content")) for item in items if item.get("role") == "developer"
    )


def shell(command: str, tokens: int | None = None) -> Turn:
    return Turn("", (ToolCall("exec_command", {"cmd": command}),), input_tokens=tokens)


def test_a_session_is_recorded_and_after_a_compaction_the_digest_returns_the_original(
    host: Codex, model_server: ModelServer
) -> None:
    got: dict[str, str] = {}

    def read_the_digest(seen: Seen) -> Turn:
        got["digest"] = digest_in(developer_text(seen))
        [find_tools] = codex.FIND_TOOLS
        assert isinstance(find_tools, Turn)
        return find_tools

    def expand(seen: Seen) -> Turn:
        alias = alias_for(got["digest"], FAILING)
        return Turn("", (codex.call("get_alias", {"alias": alias}),))

    def read_the_original(seen: Seen) -> Turn:
        got["original"] = seen.result.text
        return Turn("The directory is still missing.")

    script = model_server.play(
        Script(
            [
                shell("echo v1"),
                # Reported near the window: Codex compacts before the next request.
                shell(FAILING, tokens=LIMIT + 10_000),
                read_the_digest,
                expand,
                read_the_original,
            ],
            side=(
                SideRule("compaction", compaction, lambda seen: Turn("CODEX-SUMMARY")),
                *DEFAULT_SIDE,
            ),
        )
    )
    run = host.run(
        model_server.url,
        "Look at the notes",
        settings=f"model_auto_compact_token_limit = {LIMIT}",
        hooks=readme.pasted("Codex CLI hooks"),
    )
    assert run.returncode == 0, run.describe() + "\n" + script.describe()
    script.check_done()
    assert [e.rule for e in script.log if e.kind == "side"] == ["compaction"]

    # The first request after the compaction holds the digest; none before it did.
    assert FAILING in got["digest"]
    assert ERROR_LINE in got["digest"]
    assert "CODEX-SUMMARY" not in got["digest"]
    assert not [s for s in range(2) if "FRS (frs-mcp)" in developer_text(script.seen_at(s))]
    assert ERROR_LINE in got["original"]

    # Stop recorded the turn to its end, from Codex's own rollout, each message once.
    thread = recorded(host.home, "codex", run.thread_id)
    assert thread[0] == "Look at the notes"
    assert thread[-1] == "The directory is still missing."
    assert len([m for m in thread if f'"cmd": "{FAILING}"' in m]) == 1
    calls = {call.name for e in script.log if e.answer for call in e.answer.calls}
    assert "frs_record" not in calls
