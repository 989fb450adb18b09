"""A long session crosses a threshold: the reminder to squash reaches the model once, stays
byte-identical in later requests, and the squash that answers it takes effect."""

from __future__ import annotations

import json
import re
from typing import Any

from frs import squashes
from frs.wire.nudges import Candidates, due, nudge_text
from server.gateway.spans import compact
from tests.gateway.conversation import SESSION, body, call, result, said, user
from tests.gateway.harness import rig
from tests.gateway.test_squashes import _unmarked, client_env, session_of

REMINDER = "[FRS reminder]"


def long_session(pairs: int) -> list[dict[str, Any]]:
    messages = [user("Clean up the logs.")]
    for i in range(pairs):
        messages.append(call(f"toolu_{i}", f"cat log{i}"))
        messages.append(result(f"toolu_{i}", f"log {i}: " + "entry ok " * 120))
    return messages


def reminders(seen_body: bytes) -> list[tuple[int, str]]:
    found = []
    for index, message in enumerate(json.loads(seen_body)["messages"]):
        for block in message["content"]:
            if block.get("type") == "text" and block["text"].startswith(REMINDER):
                found.append((index, block["text"]))
    return found


class TestNudges:
    async def test_a_reminder_is_sent_once_then_repeated_unchanged(self, tmp_path):
        messages = long_session(24)
        async with rig(tmp_path, nudges=2_000) as r:
            for n in range(1, len(messages) + 1, 2):
                await r.post(body(messages[:n]), SESSION)
            seen = [s.body for s in r.upstream.seen]
            first = next(i for i, b in enumerate(seen) if reminders(b))
            # Before the crossing, the host's bytes; from it on, the reminder, on one message.
            assert all(b == body(messages[: 1 + 2 * i]) for i, b in enumerate(seen[:first]))
            (at, text), *_ = reminders(seen[first])
            assert "finished tool results" in text
            assert "frs_compress_range" in text
            later = [reminders(b) for b in seen[first + 1 :]]
            assert all(found[0] == (at, text) for found in later)
            # Crossing the next threshold adds a second reminder; the first stays where it was.
            assert any(len(found) > 1 for found in later)
            # Every message up to the reminded one repeats unchanged (the host's moving cache
            # marker aside), and the reminder block itself byte for byte.
            block_bytes = compact({"type": "text", "text": text}).encode()
            upto = _unmarked(json.loads(seen[first])["messages"][: at + 1])
            for later_body in seen[first + 1 :]:
                assert _unmarked(json.loads(later_body)["messages"][: at + 1]) == upto
                assert later_body.count(block_bytes) == 1

    async def test_it_names_where_the_finished_output_sits_in_the_view(self, tmp_path):
        # A finished turn of tool output (recorded), then a new user turn whose output
        # crosses the threshold: the reminder names where the first turn's output is.
        first = long_session(6)
        second = [
            *first,
            said("All clean."),
            user("Now the configs."),
            call("toolu_c", "cat configs"),
            result("toolu_c", "config ok " * 600),
        ]
        async with rig(tmp_path, nudges=2_500) as r:
            await r.post(body(first), SESSION)
            assert not reminders(r.upstream.seen[-1].body)
            await r.post(body(second), SESSION)
            (_, text), *_ = reminders(r.upstream.seen[-1].body)
            where = re.search(r"positions (\d+)–(\d+): \d+k? tokens of finished", text)
            assert where is not None, text
            assert f"frs_view_thread(from={where[1]}, to={where[2]})" in text
            session = await session_of(r)
            async with r.gateway.recorder.env.store.snapshot() as reader:
                start, end = int(where[1]), int(where[2])
                shown = await reader.entries_at(session.id, start, end - start + 1)
            assert shown[0].role == "tool"
            assert shown[-1].role == "tool"
            assert sum(1 for m in shown if m.role == "tool") == 6

    async def test_the_squash_that_answers_it_takes_effect(self, tmp_path):
        messages = long_session(10)
        async with rig(tmp_path, nudges=1_000) as r:
            for n in range(1, 18, 2):
                await r.post(body(messages[:n]), SESSION)
            assert reminders(r.upstream.seen[-1].body)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 9, "Logs 0-3: all entries ok.", session_id=session.id
            )
            await r.post(body(messages[:19]), SESSION)
            sent = r.upstream.seen[-1].body
            assert b"Logs 0-3: all entries ok." in sent
            assert b"toolu_0" not in sent
            assert reminders(sent)

    async def test_no_nudges_sends_none(self, tmp_path):
        messages = long_session(12)
        async with rig(tmp_path, nudges=None) as r:
            for n in range(1, len(messages) + 1, 2):
                await r.post(body(messages[:n]), SESSION)
            assert all(s.body == body(messages[: 1 + 2 * i]) for i, s in enumerate(r.upstream.seen))


class TestRules:
    def test_a_threshold_is_due_once_per_crossing(self):
        assert due(1_500, 1_000, 0) == 1
        assert due(1_900, 1_000, 1) is None
        assert due(3_100, 1_000, 1) == 3

    def test_the_text_says_how_much_where_and_what_to_call(self):
        text = nudge_text(83_000, Candidates(23, 41_000, 12, 80))
        assert "about 83k tokens" in text
        assert "23 finished tool results" in text
        assert "positions 12–80: 41k tokens of finished tool output" in text
        assert "frs_view_thread(from=12, to=80)" in text

    def test_without_positions_it_still_says_how_much(self):
        text = nudge_text(83_000, Candidates(23, 41_000))
        assert "41k tokens of finished tool output" in text
        assert "positions" not in text.split("frs_view_thread")[0]
