"""The model's answer is recorded from the stream it sends back (a copy, read once the host
has it all), with the key the next request will give it: nothing is recorded twice."""

from __future__ import annotations

import json
from typing import Any

from frs import sessions
from tests.gateway.conversation import SESSION, TASK, body
from tests.gateway.harness import Reply, Seen, rig
from tests.gateway.test_squashes import client_env, session_of


def sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def streamed(message: dict[str, Any]) -> Reply:
    """The assistant message as the Messages API streams it."""
    chunks = [
        sse(
            "message_start",
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
        )
    ]
    chunks.append(sse("ping", {"type": "ping"}))
    for index, block in enumerate(message["content"]):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": block["text"][:5]},
                {"type": "text_delta", "text": block["text"][5:]},
            ]
        else:
            start = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": arguments[:4]},
                {"type": "input_json_delta", "partial_json": arguments[4:]},
            ]
        chunks.append(
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        chunks += [
            sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        chunks.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    chunks.append(
        sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    )
    chunks.append(sse("message_stop", {"type": "message_stop"}))
    return Reply(headers=(("content-type", "text/event-stream"),), chunks=tuple(chunks))


def answering(stream: bool):
    """An upstream that answers each request with the message the host's transcript has next."""

    def script(seen: Seen) -> Reply:
        sent = len(seen.json()["messages"])
        message = TASK[sent]
        if stream:
            return streamed(message)
        payload = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": message["content"],
        }
        return Reply(chunks=(json.dumps(payload).encode(),))

    return script


class TestAnswers:
    async def test_a_streamed_answer_is_recorded_before_the_next_request(self, tmp_path):
        async with rig(tmp_path, answering(stream=True)) as r:
            await r.post(body(TASK[:1]), SESSION)
            session = await session_of(r)
            entries = (await sessions.live_thread(client_env(r), session.id)).entries
            assert [e.role for e in entries] == ["user", "assistant"]
            assert entries[1].tool_calls[0].id == "toolu_1"
            assert json.loads(entries[1].tool_calls[0].arguments) == TASK[1]["content"][-1]["input"]
            assert entries[1].content == "Let me run it 20 times."

    async def test_the_next_request_does_not_record_the_answer_again(self, tmp_path):
        async with rig(tmp_path, answering(stream=True)) as r:
            for n in (1, 3, 5):
                await r.post(body(TASK[:n]), SESSION)
            session = await session_of(r)
            entries = (await sessions.live_thread(client_env(r), session.id)).entries
            assert [e.role for e in entries] == [
                "user",
                "assistant",
                "tool",
                "assistant",
                "tool",
                "assistant",
            ]
            assert entries[-1].content == "The race is in Syncer.flush: the lock is missing."

    async def test_a_json_answer_is_recorded_too(self, tmp_path):
        async with rig(tmp_path, answering(stream=False)) as r:
            await r.post(body(TASK[:5]), SESSION)
            session = await session_of(r)
            entries = (await sessions.live_thread(client_env(r), session.id)).entries
            assert entries[-1].content == "The race is in Syncer.flush: the lock is missing."
            await r.post(body(TASK[:7]), SESSION)
            entries = (await sessions.live_thread(client_env(r), session.id)).entries
            # The answer recorded from the first request came back in the second unchanged:
            # not recorded again; the second's own answer is new.
            assert [e.role for e in entries][-3:] == ["assistant", "user", "assistant"]
            assert len(entries) == 8

    async def test_a_cut_stream_records_no_answer(self, tmp_path):
        def cut(seen: Seen) -> Reply:
            whole = streamed(TASK[1])
            return Reply(headers=whole.headers, chunks=whole.chunks[:-1])  # no message_stop

        async with rig(tmp_path, cut) as r:
            await r.post(body(TASK[:1]), SESSION)
            session = await session_of(r)
            assert session.live_count == 1
