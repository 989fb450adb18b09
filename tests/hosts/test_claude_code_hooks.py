"""frs-mcp in real Claude Code's own hooks (pinned, headless, against the scripted model),
configured by the README's hook snippet: the conversation is recorded with no frs_record and
no gateway, and after `/compact` the first request the model receives carries the digest,
whose alias returns the original through the frs tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts import readme
from tests.hosts.claude_code import ClaudeCode, name
from tests.hosts.hooked import ERROR_LINE, FAILING, alias_for, digest_in, recorded
from tests.hosts.model import ModelServer, Script, Seen, SideRule, Turn
from tests.hosts.model.script import DEFAULT_SIDE
from tests.hosts.model.wire import text_of

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

SUMMARY = "<analysis>A</analysis>\n<summary>\nThe user asked to look at the notes.\n</summary>"


@pytest.fixture
def claude(hosts_root: Path, tmp_path: Path) -> ClaudeCode:
    return ClaudeCode(hosts_root, tmp_path / "home", tmp_path / "project")


def compaction(seen: Seen) -> bool:
    """Claude Code's compaction request: its last user text asks for the summary."""
    return "detailed summary of the conversation" in seen.last_user_text


def system_text(seen: Seen) -> str:
    """The role-system messages of a request (where Claude Code puts hook context)."""
    parts = [m["content"] for m in seen.body["messages"] if m.get("role") == "system"]
    return "\n".join(text_of(part) for part in parts)


def test_a_session_is_recorded_and_after_compact_the_digest_returns_the_original(
    claude: ClaudeCode, model_server: ModelServer
) -> None:
    hooks = readme.pasted("Claude Code hooks")
    got: dict[str, str] = {}

    def read_the_digest(seen: Seen) -> Turn:
        got["digest"] = digest_in(system_text(seen))
        return Turn.call(name("get_alias"), alias=alias_for(got["digest"], FAILING))

    def read_the_original(seen: Seen) -> Turn:
        got["original"] = seen.result.text
        return Turn("The directory is still missing.")

    script = model_server.play(
        Script(
            [
                Turn.call("Bash", command="printf 'v1\\n' > notes.txt && cat notes.txt"),
                Turn.call("Bash", command=FAILING),
                Turn("The directory is missing."),
                read_the_digest,
                read_the_original,
            ],
            side=(SideRule("compaction", compaction, lambda seen: Turn(SUMMARY)), *DEFAULT_SIDE),
        )
    )
    extra = ("--allowedTools", "Bash")
    first = claude.run(
        model_server.url, "Look at the notes", *extra, tool_search=False, hooks=hooks
    )
    assert first.returncode == 0, first.describe() + "\n" + script.describe()

    # Stop recorded the whole turn, from Claude Code's own transcript.
    thread = recorded(claude.home, "claude-code", first.session_id)
    assert thread[0] == "Look at the notes"
    assert [m for m in thread if ERROR_LINE in m], thread
    assert thread[-1] == "The directory is missing."
    # The model called Bash only, straight at the model's URL: no frs_record, no gateway.
    calls = {call.name for e in script.log if e.answer for call in e.answer.calls}
    assert calls == {"Bash"}

    resume = ("--resume", first.session_id)
    compacted = claude.run(model_server.url, "/compact", *resume, tool_search=False, hooks=hooks)
    assert compacted.returncode == 0, compacted.describe()
    assert [e.rule for e in script.log if e.kind == "side"].count("compaction") == 1

    after = claude.run(model_server.url, "Go on", *extra, *resume, tool_search=False, hooks=hooks)
    assert after.returncode == 0, after.describe() + "\n" + script.describe()
    script.check_done()

    # The first request after the compaction holds the digest; none before it did.
    assert FAILING in got["digest"]
    assert ERROR_LINE in got["digest"]
    assert not [s for s in range(3) if "FRS (frs-mcp)" in system_text(script.seen_at(s))]
    # get_alias on the alias the digest named returns the original error, whole.
    assert ERROR_LINE in got["original"]


def test_a_digest_longer_than_one_hooks_answer_reaches_the_model_in_two_parts(
    claude: ClaudeCode, model_server: ModelServer
) -> None:
    """Claude Code moves one hook's answer of over 10,000 characters to a file: a long digest
    comes in two parts, one hook each (the README's snippet), both in the first request."""
    hooks = readme.pasted("Claude Code hooks")
    # 70 failing commands: a digest of about 12,000 characters (one hook's part holds 53).
    folders = [f"/srv/projects/client-archive-{n:02d}/checkout" for n in range(70)]
    got: dict[str, str] = {}

    def read_the_digest(seen: Seen) -> Turn:
        got["system"] = system_text(seen)
        return Turn("Read.")

    script = model_server.play(
        Script(
            [
                *(Turn.call("Bash", command=f"git -C {folder} status") for folder in folders),
                Turn("None of them exists."),
                read_the_digest,
            ],
            side=(SideRule("compaction", compaction, lambda seen: Turn(SUMMARY)), *DEFAULT_SIDE),
        )
    )
    extra = ("--allowedTools", "Bash")
    first = claude.run(
        model_server.url, "Check the folders", *extra, tool_search=False, hooks=hooks
    )
    assert first.returncode == 0, first.describe() + "\n" + script.describe()
    resume = ("--resume", first.session_id)
    assert claude.run(model_server.url, "/compact", *resume, hooks=hooks).returncode == 0
    after = claude.run(model_server.url, "Go on", *resume, tool_search=False, hooks=hooks)
    assert after.returncode == 0, after.describe() + "\n" + script.describe()
    script.check_done()

    system = got["system"]
    assert "persisted-output" not in system
    assert system.count("[FRS digest, part 1 of 2]") == 1
    assert system.count("[FRS digest, part 2 of 2]") == 1
    # Every failing command's error line is there, between the two parts.
    assert all(f"fatal: cannot change to '{folder}'" in system for folder in folders)
