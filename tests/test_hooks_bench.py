"""The hooks' benchmark (bench/hooks.py): issue 31's measure of what the first request after a
host's compaction holds, and the pieces its model of a compaction is made of."""

from __future__ import annotations

import pytest

from bench.digest import BUDGET, long_transcripts
from bench.hooks import compacted, kept_round, summary_stand_in
from frs.model import Message, Role, ToolCall
from frs.text import estimate_tokens


def message(number: int, role: Role, content: str, *calls: ToolCall) -> Message:
    return Message(
        number=number,
        ord=number,
        ord_last=number,
        role=role,
        kind="message",
        content=content,
        sha256="",
        tokens=estimate_tokens(content),
        live=True,
        created_at=None,
        tool_calls=calls,
        tool_call_id="c2" if role == "tool" else None,
    )


THREAD = [
    message(1, "user", "Fix the build"),
    message(2, "assistant", "Running make.", ToolCall("c1", "bash", '{"command": "make"}')),
    message(3, "tool", "error: foo.h missing"),
    message(4, "assistant", "Again.", ToolCall("c2", "bash", '{"command": "make -k"}')),
    message(5, "tool", "ok"),
]


def test_the_kept_round_is_the_last_answer_and_its_results() -> None:
    assert [m.number for m in kept_round(THREAD)] == [4, 5]


def test_the_summary_stand_in_is_the_sessions_words_newest_kept_in_its_room() -> None:
    assert summary_stand_in(THREAD) == "Fix the build\nRunning make.\nAgain."
    assert summary_stand_in(THREAD, tokens=estimate_tokens("Again.\n")) == "Again."


@pytest.mark.parametrize("transcript", long_transcripts(), ids=lambda t: t.name)
def test_the_first_request_after_a_compaction_holds_what_issue_31_asks(transcript) -> None:
    """With the hook's digest (4,000 tokens, and the line naming the session; as Claude Code
    gets it, in two parts of under 10,000 characters), 0.9 of the paths and of the commands,
    every open error line."""
    got = compacted(transcript, BUDGET)
    for held in (got.digest, got.with_digest, got.with_claude):
        assert held.paths >= 0.9, held.missing
        assert held.commands >= 0.9, held.missing
        assert held.errors == 1.0, held.missing
