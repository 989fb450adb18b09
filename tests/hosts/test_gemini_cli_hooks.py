"""frs-mcp in real Gemini CLI's own hooks (pinned, headless, against the scripted model),
configured by the README's hook snippet: the conversation is recorded with no frs_record and
no gateway, and after `/compress` every later request the model receives carries the digest
at the end of the snapshot's message, whose alias returns the original through the frs tools.

Gemini CLI tells the MCP servers it starts nothing of its session, so the model passes the
session the digest names (`session_id`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts import readme
from tests.hosts.gemini_cli import GeminiCli, name
from tests.hosts.hooked import alias_for, digest_in, recorded, session_of
from tests.hosts.model import ModelServer, Script, Seen, SideRule, Turn
from tests.hosts.model.script import DEFAULT_SIDE

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

MISSING = "missing-dir-frs"


@pytest.fixture
def gemini(hosts_root: Path, tmp_path: Path) -> GeminiCli:
    return GeminiCli(hosts_root, tmp_path / "home", tmp_path / "project")


def compression(seen: Seen) -> bool:
    """Gemini CLI's two compression calls: their instruction asks for a state snapshot."""
    return "<state_snapshot>" in seen.system


def first_text(seen: Seen) -> str:
    """The text of the request's first content (where the snapshot stands)."""
    parts = seen.body["contents"][0]["parts"]
    return "\n".join(part.get("text", "") for part in parts)


def test_a_session_is_recorded_and_after_compress_the_digest_returns_the_original(
    gemini: GeminiCli, model_server: ModelServer
) -> None:
    hooks = json.loads(readme.pasted("Gemini CLI hooks"))
    got: dict[str, str] = {}

    def missing(seen: Seen) -> Turn:
        got["error"] = seen.result.text
        return Turn("The folder is missing.")

    def read_the_digest(seen: Seen) -> Turn:
        got["digest"] = digest_in(first_text(seen))
        alias = alias_for(got["digest"], MISSING)
        return Turn.call(name("get_alias"), alias=alias, session_id=session_of(got["digest"]))

    def read_the_original(seen: Seen) -> Turn:
        got["original"] = seen.result.text
        return Turn("Still missing.")

    snapshot = "<state_snapshot>The user asked about a folder.</state_snapshot>"
    script = model_server.play(
        Script(
            [
                Turn.call("list_directory", dir_path=MISSING),
                missing,
                Turn("Compressed."),
                read_the_digest,
                read_the_original,
            ],
            side=(SideRule("compression", compression, lambda s: Turn(snapshot)), *DEFAULT_SIDE),
        )
    )
    first = gemini.run(model_server.url, "List the folder", hooks=hooks)
    assert first.returncode == 0, first.describe() + "\n" + script.describe()
    session = str(first.result["session_id"])

    # AfterAgent recorded the turn, from Gemini CLI's own chat file.
    thread = recorded(gemini.home, "gemini-cli", session)
    assert thread[0] == "List the folder"
    assert got["error"] in thread
    assert thread[-1] == "The folder is missing."

    compressed = gemini.run(model_server.url, "/compress", hooks=hooks, resume=True)
    assert compressed.returncode == 0, compressed.describe()
    after = gemini.run(model_server.url, "Go on", hooks=hooks, resume=True)
    assert after.returncode == 0, after.describe() + "\n" + script.describe()
    script.check_done()
    assert [e.rule for e in script.log if e.kind == "side"] == ["compression", "compression"]

    # The request after the compression holds the snapshot, then the digest; none before it.
    text = first_text(script.seen_at(3))
    assert text.index(snapshot) < text.index(got["digest"][:40])
    assert MISSING in got["digest"]
    assert not [s for s in range(3) if "FRS (frs-mcp)" in json.dumps(script.seen_at(s).body)]
    assert got["error"] in got["original"]
    calls = {call.name for e in script.log if e.answer for call in e.answer.calls}
    assert "frs_record" not in calls
