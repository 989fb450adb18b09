"""What keeps the gateway's added time small, and still right: the answer streams before the
recording is done (only what lets the host act waits), a repeated prefix is found without a
loop over characters, and a rewrite that repeats the last one is checked from its end."""

from __future__ import annotations

import json
from typing import cast

import anyio
import pytest

from frs.env import Env
from frs.wire.requests import Parsed, common_prefix
from server.gateway.anthropic import WIRE
from server.gateway.anthropic_rules import problems
from server.gateway.proxy import Held
from server.gateway.recorder import Recorder
from server.gateway.wires import _from_repeat, refusal_of
from tests.gateway.conversation import body, call, result, said, user


async def ending() -> None:
    """A turn taken at once (what `Held` awaits before an answer's end)."""


def sse(kind: str) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind})}\n\n".encode()


class TestHeld:
    async def test_the_answer_starts_at_once_and_a_block_stop_waits_for_the_recording(self):
        recorded = anyio.Event()
        held = Held(recorded)
        start = sse("message_start") + sse("content_block_start")
        out = held.let_through(start + sse("content_block_stop") + sse("message_stop"))
        assert out == start  # the host has the start, not the stop it would act on
        assert held.let_through(sse("ping")) == b""  # after a stop everything waits
        recorded.set()
        rest = await held.rest()
        assert out + rest == start + sse("content_block_stop") + sse("message_stop") + sse("ping")

    async def test_a_stop_cut_between_two_chunks_still_waits(self):
        recorded = anyio.Event()
        held = Held(recorded)
        whole = sse("message_start") + sse("message_stop")
        cut = whole.index(b"message_stop", len(sse("message_start"))) + 4
        sent = held.let_through(whole[:cut]) + held.let_through(whole[cut:])
        assert sent == sse("message_start")
        recorded.set()
        assert sent + await held.rest() == whole

    async def test_a_json_answer_keeps_its_last_bytes_until_recorded(self):
        recorded = anyio.Event()
        held = Held(recorded)
        answer = json.dumps({"type": "message", "content": [{"type": "text", "text": "ok"}]})
        sent = held.let_through(answer.encode())
        assert sent  # it started
        assert len(sent) < len(answer)  # the host cannot read it whole yet
        recorded.set()
        assert held.let_through(b"") == answer.encode()[len(sent) :]  # let go once recorded
        assert await held.rest() == b""

    @pytest.mark.parametrize(
        "end",
        [
            b'event: response.output_item.done\ndata: {"type":"response.output_item.done"}\n\n',
            b'data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}\n\n',
        ],
    )
    async def test_an_openai_item_or_choice_end_waits_too(self, end: bytes):
        recorded = anyio.Event()
        held = Held(recorded)
        start = b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
        assert held.let_through(start + end) == start
        recorded.set()
        assert await held.rest() == end

    async def test_once_recorded_nothing_is_held(self):
        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded)
        assert held.let_through(sse("message_stop")) == sse("message_stop")


class TestTheEndWaitsForTheTurn:
    """Once recorded, the answer flows, but its last event (or a JSON answer's last bytes)
    waits until the call holds the conversation's turn: the host's next request, which comes
    once it has the end, must find the turn taken."""

    async def test_blocks_flow_and_the_last_event_waits_for_the_turn(self):
        order: list[str] = []

        async def ending() -> None:
            order.append("turn taken")

        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded, ending)
        start = sse("message_start") + sse("content_block_start") + sse("content_block_stop")
        out = held.let_through(start)
        # A block's end no longer waits; only the last few bytes, which a cut end might
        # begin in, until the next chunk shows it is not one.
        assert start.startswith(out)
        assert len(start) - len(out) <= Held.TAIL
        out += held.let_through(sse("message_delta") + sse("message_stop"))
        assert out == start + sse("message_delta")
        assert held.let_through(sse("ping")) == b""
        assert order == []
        assert await held.rest() == sse("message_stop") + sse("ping")
        assert order == ["turn taken"]

    async def test_a_block_stop_held_for_the_recording_goes_once_recorded(self):
        recorded = anyio.Event()

        held = Held(recorded, ending)
        start = sse("message_start")
        assert held.let_through(start + sse("content_block_stop")) == start
        recorded.set()
        # The next chunk lets the block's end go; the message's end still waits.
        assert held.let_through(sse("message_stop")) == sse("content_block_stop")
        assert await held.rest() == sse("message_stop")

    @pytest.mark.parametrize(
        "end",
        [
            b'event: response.completed\ndata: {"type":"response.completed"}\n\n',
            b"data: [DONE]\n\n",
        ],
    )
    async def test_an_openai_streams_end_waits_too(self, end: bytes):
        taken = anyio.Event()

        async def ending() -> None:
            taken.set()

        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded, ending)
        item = b'event: response.output_item.done\ndata: {"type":"response.output_item.done"}\n\n'
        assert held.let_through(item + end) == item
        assert not taken.is_set()
        assert await held.rest() == end
        assert taken.is_set()

    async def test_a_json_answers_last_bytes_wait_for_the_turn(self):
        taken: list[bool] = []

        async def ending() -> None:
            taken.append(True)

        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded, ending)
        answer = json.dumps({"type": "message", "content": [{"type": "text", "text": "ok"}]})
        sent = held.let_through(answer.encode())
        assert 0 < len(sent) < len(answer)
        assert sent + await held.rest() == answer.encode()
        assert taken == [True]

    async def test_the_words_of_an_end_in_the_models_text_hold_nothing_back(self):
        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded, ending)
        said = [
            b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":'
            + json.dumps({"type": "text_delta", "text": text}).encode()
            + b"}\n\n"
            for text in ("the stream ends with message_stop", "then data: [DONE]", "and more")
        ]
        out = b"".join(held.let_through(chunk) for chunk in said)
        # All but the last few bytes (which a cut end could begin in) went out as they came.
        assert len(b"".join(said)) - len(out) <= Held.TAIL
        assert await held.rest() == b"".join(said)[len(out) :]

    async def test_an_end_cut_between_two_chunks_after_its_newline_still_waits(self):
        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded, ending)
        start = sse("message_start") + sse("message_delta")
        whole = start + sse("message_stop")
        cut = len(start) + 6  # inside "event: message_stop"
        out = held.let_through(whole[:cut]) + held.let_through(whole[cut:])
        assert out == start
        assert await held.rest() == sse("message_stop")

    async def test_an_answer_cut_short_takes_no_turn(self):
        taken: list[bool] = []

        async def ending() -> None:
            taken.append(True)

        recorded = anyio.Event()
        recorded.set()
        held = Held(recorded, ending)
        held.let_through(sse("message_start") + sse("content_block_delta"))
        await held.rest(whole=False)
        assert taken == []


class TestCommonPrefix:
    @pytest.mark.parametrize("at", [0, 1, 65_535, 65_536, 65_537, 199_999])
    def test_the_first_difference_is_found_anywhere(self, at: int):
        a = "x" * 200_000
        b = a[:at] + "y" + a[at + 1 :]
        assert common_prefix(a, b) == at
        assert common_prefix(a, a[:at]) == at
        assert common_prefix(a, a) == len(a)


class TestCheckFromTheRepeat:
    def conversation(self, pairs: int) -> list[dict[str, object]]:
        messages: list[dict[str, object]] = [user("Fix the flaky test.")]
        for i in range(pairs):
            messages += [
                call(f"toolu_{i}", f"run {i}", text=f"step {i}"),
                result(f"toolu_{i}", "ok"),
            ]
        return messages

    def test_a_repeating_rewrite_is_checked_from_its_last_repeated_call_on(self):
        first = body(self.conversation(20)).decode()
        previous = Parsed(first, WIRE.parse(first, {}))
        text = body([*self.conversation(20), said("Done.")]).decode()
        checked = _from_repeat(text, WIRE.parse(text, {}, previous), previous)
        assert len(checked) < len(text) / 4  # most of it was checked before
        assert problems(WIRE.decode(checked)) == []

    def test_a_fault_after_the_repeat_is_still_found(self):
        first = body(self.conversation(20)).decode()
        previous = Parsed(first, WIRE.parse(first, {}))
        # The new end calls a tool and, in the next message, answers another one.
        bad = [*self.conversation(20), call("toolu_x", "x"), result("toolu_y", "?")]
        text = body(bad).decode()
        checked = _from_repeat(text, WIRE.parse(text, {}, previous), previous)
        assert len(checked) < len(text)
        found = problems(WIRE.decode(checked))
        assert any("toolu_x" in p for p in found)
        assert any("toolu_y" in p for p in found)

    def test_breakpoints_in_the_part_left_out_still_count(self):
        def marked(messages: list[dict[str, object]], at: tuple[int, ...]) -> str:
            payload = json.loads(body(messages))
            for i in at:
                payload["messages"][i]["content"][0]["cache_control"] = {"type": "ephemeral"}
            return json.dumps(payload)

        conversation = self.conversation(20)
        first = marked(conversation, (1, 3, 5))
        previous = Parsed(first, WIRE.parse(first, {}))
        longer = [*conversation, said("Done.")]
        original = marked(longer, ())  # the host's: its system prompt's and its newest
        rewritten = marked(longer, (1, 3, 5))  # five, three of them in the repeated part
        request = WIRE.parse(original, {})
        checked = _from_repeat(rewritten, WIRE.parse(rewritten, {}, previous), previous)
        assert '"cache_control"' not in checked[checked.index("messages") : -200]
        refusal, _ = refusal_of(WIRE, request, original, rewritten, previous, {})
        assert refusal is not None
        assert "5 cache_control breakpoints, at most 4" in refusal

    def test_with_nothing_checked_before_the_whole_body_is(self):
        text = body(self.conversation(3)).decode()
        assert _from_repeat(text, WIRE.parse(text, {}), None) == text


class TestKeptBodies:
    def test_the_last_bodies_kept_stay_within_their_count_and_characters(self) -> None:
        recorder = Recorder(cast(Env, None), bodies=3, body_chars=1_000)
        request = WIRE.parse(body([user("hi")]).decode(), {}, None)

        def keep(slot: str, size: int) -> None:
            recorder._keep_body(("claude-code", slot), Parsed("x" * size, request))

        for slot in "abc":
            keep(slot, 300)
        assert [k for _, k in recorder._parsed] == ["a", "b", "c"]
        keep("d", 300)  # four: the oldest goes
        assert [k for _, k in recorder._parsed] == ["b", "c", "d"]
        keep("e", 500)  # 1,100 characters: the oldest go until they fit
        assert [k for _, k in recorder._parsed] == ["d", "e"]
        keep("d", 100)  # a conversation's newer body replaces its last
        assert [k for _, k in recorder._parsed] == ["e", "d"]
        keep("f", 2_000)  # larger than all: not kept, nothing dropped for it
        assert [k for _, k in recorder._parsed] == ["e", "d"]
        assert recorder._parsed_chars == 600
