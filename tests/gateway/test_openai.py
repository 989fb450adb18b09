"""The OpenAI wires through the gateway: Responses (Codex CLI) and Chat Completions (OpenCode,
Aider). Nothing to change: the host's bytes; a squash: one summary item instead of whole
items and whole call/output pairs, reasoning after it untouched; every request valid (the
tests' upstream checks each with the wire's validator)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from typing import Any

from frs import Env, pages, squashes
from frs import sessions as frs_sessions
from frs.host_threads import find_thread
from frs.model import Scope, Session
from frs.wire.requests import RewritePlan, WireRequest
from server.gateway.responses import WIRE as RESPONSES
from server.gateway.responses import OpenAIResponses
from tests.gateway import openai_conversation as oc
from tests.gateway.harness import Reply, Rig, rig

RESPONSES_PATH = "/v1/responses"
CHAT_PATH = "/v1/chat/completions"
AUTH = [("authorization", "Bearer sk-openai-test")]


def client_env(r: Rig) -> Env:
    return Env(r.gateway.recorder.env.store, scope=Scope(client="test"))


async def session_of(r: Rig, interface: str = "codex", name: str = "codex-session-1") -> Session:
    thread = await find_thread(r.gateway.recorder.env, interface, name)
    assert thread is not None, "the gateway recorded no session for the conversation"
    return thread.session


async def replay(r: Rig, upto: list[int], items=oc.TASK, headers=oc.SESSION, **extra) -> None:
    for n in upto:
        answer = await r.post(oc.body(items[:n], **extra), [*AUTH, *headers], RESPONSES_PATH)
        assert answer.status_code == 200


async def chat_replay(r: Rig, upto: list[int], messages=oc.CHAT_TASK) -> None:
    for n in upto:
        answer = await r.post(oc.chat_body(messages[:n]), AUTH, CHAT_PATH)
        assert answer.status_code == 200


def sent_input(r: Rig, index: int = -1) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = r.upstream.seen[index].json()["input"]
    return items


def compact(item: dict[str, Any]) -> bytes:
    return json.dumps(item).encode()


def rendering_with(render: Callable[..., str]) -> OpenAIResponses:
    """The Responses wire with its `render` replaced."""

    class Rendering(OpenAIResponses):
        def render(self, body: str, request: WireRequest, plan: RewritePlan) -> str:
            return render(body, request, plan)

    return Rendering()


class TestResponsesBytes:
    async def test_a_request_with_nothing_to_change_reaches_the_upstream_byte_for_byte(
        self, tmp_path
    ):
        # Odd spacing, key order and escapes a re-serialiser would change.
        raw = (
            b'{ "model":"gpt-x", "input" : [ {"role":"user","content":"h\\u00e9llo \xc3\xa9"} ,'
            b'{"type":"reasoning","summary":[],"encrypted_content":"gAAA=="},'
            b'{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}'
            b'],"tools":[{"type":"function","name":"f"}] ,"store":false}'
        )
        async with rig(tmp_path) as r:
            await r.post(raw, [*AUTH, *oc.SESSION], RESPONSES_PATH)
            assert r.upstream.seen[0].sha256 == hashlib.sha256(raw).hexdigest()
            assert r.upstream.seen[0].path == RESPONSES_PATH
            assert r.upstream.seen[0].header("authorization") == "Bearer sk-openai-test"

    async def test_a_stream_is_relayed_byte_for_byte(self, tmp_path):
        euro = "€".encode()
        chunks = (
            b'event: response.created\ndata: {"type":"response.created"}\n\n',
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
            b'"delta":"' + euro[:2],
            euro[2:] + b'"}\n\n',
            b'event: error\ndata: {"type":"error","code":"server_error","message":"x"}\n\n',
        )
        reply = Reply(headers=(("content-type", "text/event-stream"),), chunks=chunks)
        async with rig(tmp_path, lambda seen: reply) as r:
            got = b""
            async with r.client.stream(
                "POST", r.url + RESPONSES_PATH, content=oc.body(oc.TASK[:2]), headers=AUTH
            ) as answer:
                async for chunk in answer.aiter_raw():
                    got += chunk
            assert got == b"".join(chunks)
            assert r.upstream.seen[0].body == oc.body(oc.TASK[:2])


class TestResponsesRecording:
    async def test_the_conversation_is_recorded_under_codexs_session_id(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [(e.role, e.tool_call_id) for e in entries] == [
                ("user", None),
                ("assistant", None),
                ("tool", "call_1"),
                ("assistant", None),
                ("tool", "call_2"),
                ("assistant", None),
                ("user", None),
            ]
            assert entries[1].tool_calls[0].id == "call_1"
            assert entries[1].tool_calls[0].name == "shell"
            assert entries[2].answers == entries[1].number
            assert entries[5].content == "The race is in Syncer.flush: the lock is missing."
            # The developer message is the host's instruction: not recorded.
            assert all("permissions" not in e.content for e in entries)

    async def test_the_answer_is_recorded_from_the_stream(self, tmp_path):
        completed = {
            "type": "response.completed",
            "response": {
                "object": "response",
                "status": "completed",
                "output": [oc.reasoning("r9"), oc.call("call_9", "ls")],
            },
        }
        chunks = (
            b'event: response.created\ndata: {"type":"response.created"}\n\n',
            b"event: response.completed\ndata: " + json.dumps(completed).encode() + b"\n\n",
        )
        reply = Reply(headers=(("content-type", "text/event-stream"),), chunks=chunks)
        replies = iter([reply])
        async with rig(tmp_path, lambda seen: next(replies, Reply())) as r:
            await replay(r, [2])
            session = await session_of(r)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert entries[-1].tool_calls[0].id == "call_9"
            # The next request carries the answer with its output: nothing is recorded twice.
            items = [
                *oc.TASK[:2],
                oc.reasoning("r9"),
                oc.call("call_9", "ls"),
                oc.output("call_9", "a"),
            ]
            await replay(r, [5], items)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [e.role for e in entries] == ["user", "assistant", "tool"]

    async def test_without_a_session_header_the_first_message_names_the_conversation(
        self, tmp_path
    ):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5], headers=[])
            sessions = (await frs_sessions.page(client_env(r))).sessions
            assert [(s.interface, s.live_count) for s in sessions] == [("openai-responses", 3)]


class TestResponsesSquashes:
    async def test_a_squash_is_one_summary_item_instead_of_whole_items(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            assert r.upstream.seen[-1].body == oc.body(oc.TASK[:11])
            session = await session_of(r)
            done = await squashes.compress_range(
                client_env(r), 2, 5, "Ran the test: a race in Syncer.flush.", session_id=session.id
            )
            await replay(r, [14])
            items = sent_input(r)
            sent = json.dumps(items)
            for gone in ("AssertionError: 3 != 4", "call_1", "call_2", "r1-opaque", "r2-opaque"):
                assert gone not in sent, gone
            host = oc.TASK[:14]
            # The summary stands where the squashed items stood; everything else as sent.
            assert items[:2] == host[:2]
            assert items[2]["role"] == "user"
            summary = items[2]["content"][0]["text"]
            assert f"FRS squash {done.squash.alias}" in summary
            assert 'get_alias("SQ.1")' in summary
            assert "Ran the test: a race in Syncer.flush." in summary
            assert items[3:] == host[8:]
            # Reasoning after the squash is forwarded byte for byte, and did not make it wait.
            forwarded = r.upstream.seen[-1].body
            for item in (oc.reasoning("r3"), oc.reasoning("r4")):
                assert compact(item) in forwarded
            # Instructions and tools: the host's bytes.
            host_body = oc.body(host)
            cut = host_body.index(b'"input": [')
            assert forwarded[:cut] == host_body[:cut]
            tail = host_body.index(b'], "tools"')
            assert forwarded.endswith(host_body[tail:])
            page = await pages.get_alias(client_env(r), "SQ.1", session_id=session.id)
            assert "AssertionError: 3 != 4" in page.text

    async def test_consecutive_requests_repeat_their_items_unchanged(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [14, 15, 16])
            bodies = [seen.body for seen in r.upstream.seen[-3:]]
            for earlier, later in itertools.pairwise(bodies):
                # Everything up to the earlier request's end of input is a prefix of the later.
                end = earlier.rindex(b'], "tools"')
                assert later[:end] == earlier[:end]

    async def test_restore_puts_the_originals_back(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [14])
            assert r.upstream.seen[-1].body != oc.body(oc.TASK[:14])
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
            await replay(r, [15])
            assert r.upstream.seen[-1].sha256 == hashlib.sha256(oc.body(oc.TASK[:15])).hexdigest()

    async def test_previous_response_id_passes_through_unchanged(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [14], previous_response_id="resp_123")
            assert r.upstream.seen[-1].body == oc.body(
                oc.TASK[:14], previous_response_id="resp_123"
            )

    async def test_a_chatgpt_signed_request_passes_through_unchanged(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [14], headers=[*oc.SESSION, ("ChatGPT-Account-Id", "acct_1")])
            assert r.upstream.seen[-1].body == oc.body(oc.TASK[:14])

    async def test_custom_and_tool_search_calls_go_only_with_their_outputs(self, tmp_path):
        search = {
            "type": "tool_search_call",
            "call_id": "call_s",
            "execution": "client",
            "arguments": {"query": "squash"},
        }
        found = {"type": "tool_search_output", "call_id": "call_s", "tools": [{"name": "x"}]}
        patch = {
            "type": "custom_tool_call",
            "call_id": "call_p",
            "name": "apply_patch",
            "input": "*** Begin Patch\n" + "+x\n" * 200,
        }
        patched = {"type": "custom_tool_call_output", "call_id": "call_p", "output": "done"}
        items = [
            oc.user("go"),
            search,
            found,
            oc.reasoning("r"),
            patch,
            patched,
            oc.said("Patched."),
            oc.user("next"),
        ]
        async with rig(tmp_path) as r:
            await replay(r, [3, 6, 8], items)
            session = await session_of(r)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [e.tool_calls[0].name for e in entries if e.tool_calls] == [
                "tool_search",
                "apply_patch",
            ]
            await squashes.compress_range(
                client_env(r), 4, 5, "Patched the lock in.", session_id=session.id
            )
            await replay(r, [8], items)
            sent = sent_input(r)
            assert [i.get("type") for i in sent] == [
                "message",
                "tool_search_call",
                "tool_search_output",
                "message",
                "message",
                "message",
            ]
            assert "Patched the lock in." in sent[3]["content"][0]["text"]
            # The reasoning item of the squashed turn went with it.
            assert "gAAAA-r-opaque" not in json.dumps(sent)

    async def test_the_open_tool_loop_is_never_replaced(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8])
            session = await session_of(r)
            # call_2 and its output are the loop the model is in: the request that carries
            # them last goes as the host sent it.
            await squashes.compress_range(client_env(r), 4, 5, "grep flush", session_id=session.id)
            await replay(r, [8])
            assert r.upstream.seen[-1].body == oc.body(oc.TASK[:8])

    async def test_a_rewrite_that_raises_forwards_the_original(self, tmp_path):
        def broken(*args):
            raise RuntimeError("boom")

        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            r.gateway.wires[RESPONSES.name] = rendering_with(broken)
            await replay(r, [14])
            assert r.upstream.seen[-1].body == oc.body(oc.TASK[:14])
            assert r.gateway.traffic.failed == 1

    async def test_a_rewrite_that_orphans_a_reasoning_item_is_not_sent(self, tmp_path):
        def orphaning(text, request, plan):
            payload = json.loads(text)
            del payload["input"][3]  # call_1 goes, its reasoning and output stay
            return json.dumps(payload)

        async with rig(tmp_path) as r:
            await replay(r, [2, 5, 8, 11])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            r.gateway.wires[RESPONSES.name] = rendering_with(orphaning)
            await replay(r, [14])
            assert r.upstream.seen[-1].body == oc.body(oc.TASK[:14])


class TestChat:
    async def test_a_request_with_nothing_to_change_reaches_the_upstream_byte_for_byte(
        self, tmp_path
    ):
        async with rig(tmp_path) as r:
            await chat_replay(r, [1, 3, 5])
            assert [s.sha256 for s in r.upstream.seen] == [
                hashlib.sha256(oc.chat_body(oc.CHAT_TASK[:n])).hexdigest() for n in (1, 3, 5)
            ]

    async def test_recorded_squashed_frozen_and_restored(self, tmp_path):
        async with rig(tmp_path) as r:
            await chat_replay(r, [1, 3, 5, 7])
            sessions = (await frs_sessions.page(client_env(r))).sessions
            assert [(s.interface, s.live_count) for s in sessions] == [("openai-chat", 7)]
            session = sessions[0]
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await chat_replay(r, [9, 10])
            messages = r.upstream.seen[-2].json()["messages"]
            sent = json.dumps(messages)
            assert "AssertionError" not in sent
            assert "call_1" not in sent
            assert "call_2" not in sent
            assert [m["role"] for m in messages][:4] == ["system", "user", "user", "assistant"]
            assert "FRS squash SQ.1@" in messages[2]["content"]
            assert messages[3:] == json.loads(oc.chat_body(oc.CHAT_TASK[:9]))["messages"][6:]
            earlier, later = (s.body for s in r.upstream.seen[-2:])
            end = earlier.rindex(b'], "tools"')
            assert later[:end] == earlier[:end]
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
            await chat_replay(r, [11])
            assert r.upstream.seen[-1].body == oc.chat_body(oc.CHAT_TASK[:11])

    async def test_a_conversation_without_tools_is_recorded_and_squashed(self, tmp_path):
        # Aider sends no `tools` and names no conversation: its first user message does.
        said = [oc.chat_user("Rename foo to bar in app.py."), oc.chat_said("Here is the diff.")]
        talk = [*said, oc.chat_user("Now the tests."), oc.chat_said("Done."), oc.chat_user("Ok")]

        def aider(messages: list[dict[str, Any]]) -> bytes:
            payload = json.loads(oc.chat_body(messages))
            del payload["tools"]
            return json.dumps(payload).encode()

        async with rig(tmp_path) as r:
            for n in (1, 3, 5):
                answer = await r.post(aider(talk[:n]), AUTH, CHAT_PATH)
                assert answer.status_code == 200
            sessions = (await frs_sessions.page(client_env(r))).sessions
            assert [(s.interface, s.live_count) for s in sessions] == [("openai-chat", 5)]
            await squashes.compress_range(
                client_env(r), 2, 3, "Diff given.", session_id=sessions[0].id
            )
            await r.post(aider(talk), AUTH, CHAT_PATH)
            sent = r.upstream.seen[-1].json()["messages"]
            assert "Diff given." in json.dumps(sent)
            assert "Here is the diff." not in json.dumps(sent)

    async def test_the_answer_is_recorded_from_the_stream(self, tmp_path):
        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        call = {"index": 0, "id": "call_7", "type": "function", "function": {"name": "bash"}}
        chunks = (
            chunk({"role": "assistant", "content": "Looking."}),
            chunk({"tool_calls": [{**call, "function": {"name": "bash", "arguments": '{"c'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ommand":"ls"}'}}]}),
            chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        )
        reply = Reply(headers=(("content-type", "text/event-stream"),), chunks=chunks)
        replies = iter([reply])
        # The first request is answered with the call; later ones with nothing to record.
        async with rig(tmp_path, lambda seen: next(replies, Reply())) as r:
            await chat_replay(r, [1])
            session = (await frs_sessions.page(client_env(r))).sessions[0]
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert entries[-1].content == "Looking."
            assert entries[-1].tool_calls[0].id == "call_7"
            messages = [
                oc.CHAT_TASK[0],
                oc.chat_call("call_7", "ls", text="Looking."),
                oc.chat_result("call_7", "a"),
            ]
            await chat_replay(r, [3], messages)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [e.role for e in entries] == ["user", "assistant", "tool"]


class TestResponsesOther:
    async def test_a_reminder_to_squash_is_one_user_item_repeated_unchanged(self, tmp_path):
        items = [oc.user("Clean up the logs.")]
        for i in range(16):
            items += [oc.call(f"call_{i}", f"cat log{i}"), oc.output(f"call_{i}", "ok " * 300)]
        async with rig(tmp_path, nudges=2_000) as r:
            for n in range(1, len(items) + 1, 2):
                await replay(r, [n], items)
            seen = [s.json()["input"] for s in r.upstream.seen]

            def reminders(sent: list[dict[str, Any]]) -> list[int]:
                return [
                    i
                    for i, item in enumerate(sent)
                    if item.get("role") == "user"
                    and item["content"][0]["text"].startswith("[FRS reminder]")
                ]

            first = next(i for i, sent in enumerate(seen) if reminders(sent))
            at = reminders(seen[first])[0]
            assert seen[first][at - 1]["type"] == "function_call_output"
            for later in seen[first + 1 :]:
                assert later[: at + 1] == seen[first][: at + 1]

    async def test_compaction_and_unknown_items_are_never_squashed_away(self, tmp_path):
        compaction = {"type": "compaction", "encrypted_content": "gAAA-compacted=="}
        reference = {"type": "item_reference", "id": "msg_old"}
        items = [oc.user("go"), compaction, *oc.TASK[1:5], reference, *oc.TASK[5:11]]
        async with rig(tmp_path) as r:
            # The conversation reaches the gateway after a compaction of the host's: the item
            # is its first entry (a note: the summary is encrypted), then "go" and the task.
            await replay(r, [2, 6, 10, 13], items)
            session = await session_of(r)
            # call_1, output_1, call_2, output_2: the item reference sits inside the span.
            await squashes.compress_range(
                client_env(r), 4, 7, "Ran and grepped.", session_id=session.id
            )
            await replay(r, [13], items)
            assert r.upstream.seen[-1].body == oc.body(items[:13])
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
            await squashes.compress_range(
                client_env(r), 6, 7, "Grepped flush.", session_id=session.id
            )
            await replay(r, [13], items)
            sent = r.upstream.seen[-1].body
            assert b"Grepped flush." in sent
            assert compact(compaction) in sent
            assert compact(reference) in sent


class TestReading:
    def test_the_next_request_takes_over_what_the_previous_one_read(self):
        from frs.wire.matching import Unit, units_of
        from frs.wire.requests import Parsed, reused
        from server.gateway import chat, responses

        cases: list[tuple[Any, Any, list[dict[str, Any]], int, int]] = [
            (responses.WIRE, oc.body, oc.TASK, 11, 14),
            (chat.WIRE, oc.chat_body, oc.CHAT_TASK, 7, 9),
        ]
        for wire, make, items, before, after in cases:
            first = make(items[:before]).decode()
            request = wire.parse(first, {}, None)
            previous = Parsed(first, request, tuple(units_of(request)))
            body = make(items[:after]).decode()
            fresh = wire.parse(body, {}, None)
            again = wire.parse(body, {}, previous)
            assert again.messages == fresh.messages
            # Every message but the last of the previous request is taken over as it was
            # (the last may grow by an item of its side).
            kept = reused(again, request)
            assert kept == len(request.messages) - 1
            old = [u for u in previous.units if isinstance(u, Unit)]
            assert [u.key for u in units_of(again, old, kept)] == [u.key for u in units_of(fresh)]
