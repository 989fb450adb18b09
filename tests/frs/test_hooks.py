"""`frs.hooks`: a host's transcript recorded into its conversation's session, once.

The units are the gateway's (`frs.wire.matching`), built here from wire messages as a host's
transcript reader builds them; the store is the real SQLite one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from frs import sessions, squashes
from frs import sessions as frs_sessions
from frs.hooks import (
    HOOKED_GOAL,
    compaction_context,
    cut_in_parts,
    find_recorded,
    record_transcript,
)
from frs.text import estimate_tokens
from frs.wire.matching import Unit, units_of
from frs.wire.requests import Span, WireBlock, WireMessage, WireRequest
from tests.frs.conftest import open_env

SPAN = Span(0, 0)
HOST = "claude-code"
CONVERSATION = "8962b646-b079-4cbd-aaea-2f2b45262c50"


def words(text: str) -> WireBlock:
    return WireBlock("text", SPAN, text, digest="t" + text)


def call(call_id: str, command: str) -> WireBlock:
    return WireBlock("tool_use", SPAN, command, tool_id=call_id, name="Bash", digest="u" + call_id)


def result(call_id: str, text: str) -> WireBlock:
    return WireBlock("tool_result", SPAN, text, tool_id=call_id, digest="r" + call_id)


def transcript(turns: int) -> list[Unit]:
    """A prompt, then `turns` rounds of a call and its result, as the gateway reads them."""
    messages = [WireMessage("user", SPAN, (words("Fix the build"),))]
    for n in range(turns):
        messages.append(
            WireMessage("assistant", SPAN, (words(f"Step {n}."), call(f"c{n}", "make")))
        )
        messages.append(WireMessage("user", SPAN, (result(f"c{n}", f"output {n}"),)))
    return units_of(WireRequest(tuple(messages)))


class TestRecordTranscript:
    async def test_the_first_import_creates_the_conversations_session_and_records_it_all(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            done = await record_transcript(env, HOST, CONVERSATION, transcript(2), "Fix")
            assert done.recorded == 5
            assert done.session is not None
            assert (done.session.interface, done.session.conversation) == (HOST, CONVERSATION)
            assert done.session.goal == HOOKED_GOAL
            recorded = await find_recorded(env, HOST, CONVERSATION)
            assert recorded is not None
            assert [m.content for m in recorded.entries] == [
                "Fix the build",
                "Step 0.",
                "output 0",
                "Step 1.",
                "output 1",
            ]

    async def test_a_rerun_records_nothing_and_a_grown_transcript_only_its_tail(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            await record_transcript(env, HOST, CONVERSATION, transcript(1), "Fix")
            again = await record_transcript(env, HOST, CONVERSATION, transcript(1), "Fix")
            grown = await record_transcript(env, HOST, CONVERSATION, transcript(3), "Fix")
            assert (again.recorded, grown.recorded) == (0, 4)
            recorded = await find_recorded(env, HOST, CONVERSATION)
            assert recorded is not None
            assert len(recorded.entries) == 7

    async def test_the_session_the_mcp_server_made_for_the_conversation_is_the_one_used(
        self, tmp_path: Path
    ) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            made = await sessions.start(env, "Mine", "", "position", HOST, CONVERSATION)
            done = await record_transcript(env, HOST, CONVERSATION, transcript(1), "Fix")
            assert done.session is not None
            assert done.session.id == made.session.id
            assert (await frs_sessions.page(env)).total == 1

    async def test_originals_inside_a_squash_are_not_recorded_again(self, tmp_path: Path) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            done = await record_transcript(env, HOST, CONVERSATION, transcript(2), "Fix")
            assert done.session is not None
            await squashes.compress_range(
                env, 2, 5, "Steps 0 and 1 ran make.", session_id=done.session.id
            )
            again = await record_transcript(env, HOST, CONVERSATION, transcript(2), "Fix")
            assert again.recorded == 0

    async def test_two_imports_at_once_record_each_message_once(self, tmp_path: Path) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            units = transcript(3)
            first, second = await asyncio.gather(
                record_transcript(env, HOST, CONVERSATION, units, "Fix"),
                record_transcript(env, HOST, CONVERSATION, units, "Fix"),
            )
            assert first.recorded + second.recorded == len(units)
            recorded = await find_recorded(env, HOST, CONVERSATION)
            assert recorded is not None
            assert len(recorded.entries) == len(units)

    async def test_a_conversation_with_no_session_is_found_as_none(self, tmp_path: Path) -> None:
        async with open_env(tmp_path / "frs.db") as env:
            assert await find_recorded(env, HOST, CONVERSATION) is None
            nothing = await record_transcript(env, HOST, CONVERSATION, [], "Fix")
            assert nothing.session is None
            assert nothing.recorded == 0
            assert (await frs_sessions.page(env)).total == 0


class TestCutInParts:
    DIGEST = "\n".join(
        [
            "FRS (frs-mcp) recorded this conversation whole …",
            'Digest of "x" (40 messages, M.1–M.40); …',
            "Task (M.1): Fix it.",
            "Open errors (no clean rerun since):",
            *(f"M.{n} exit 1: make target_{n} → error: target_{n} failed badly" for n in range(20)),
            "Commands (first line; outcome unless ok; last result):",
            *(f"M.{n}: ls directory_{n}" for n in range(20)),
        ]
    )

    def test_each_part_names_itself_and_fits(self) -> None:
        parts = cut_in_parts(self.DIGEST, 800, 4)
        assert parts is not None
        assert len(parts) > 1
        assert all(len(part) <= 800 for part in parts)
        assert [part.split("\n")[0] for part in parts] == [
            f"[FRS digest, part {k} of {len(parts)}]" for k in range(1, len(parts) + 1)
        ]

    def test_nothing_is_lost_or_repeated_but_a_sections_heading(self) -> None:
        parts = cut_in_parts(self.DIGEST, 800, 4)
        assert parts is not None
        lines = [line for part in parts for line in part.split("\n")[1:]]
        assert [line for line in lines if not line.endswith("(continued)")] == (
            self.DIGEST.split("\n")
        )
        for part in parts[1:]:
            second = part.split("\n")[1]
            assert second.endswith(":") or second.endswith(":" + " (continued)")

    def test_a_text_that_takes_more_parts_is_not_cut(self) -> None:
        assert cut_in_parts(self.DIGEST, 800, 2) is None
        assert cut_in_parts(self.DIGEST, 10_000, 1) is None


async def test_the_context_is_a_line_naming_the_session_and_the_digest_in_its_budget(
    tmp_path: Path,
) -> None:
    async with open_env(tmp_path / "frs.db") as env:
        await record_transcript(env, HOST, CONVERSATION, transcript(30), "Fix")
        recorded = await find_recorded(env, HOST, CONVERSATION)
    assert recorded is not None
    for budget in (200, 400, 4_000):
        head, body = compaction_context(recorded, budget).split("\n", 1)
        assert f'session_id="{recorded.session.id}"' in head
        assert body.startswith("Digest of")
        assert estimate_tokens(body) <= budget
