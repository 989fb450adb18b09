"""The gateway records the conversation itself and sends squashes instead of their originals."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from typing import Any

from frs import Env, ViewOptions, pages, squashes, viewing
from frs import sessions as frs_sessions
from frs.host_threads import find_thread
from frs.model import Scope, Session
from frs.wire.requests import RewritePlan, WireRequest
from server.gateway.anthropic import AnthropicMessages
from tests.gateway.conversation import SESSION, TASK, body, call, result, said, user
from tests.gateway.harness import Rig, rig


def client_env(r: Rig) -> Env:
    return Env(r.gateway.recorder.env.store, scope=Scope(client="test"))


async def session_of(r: Rig, conversation: str = "cc-session-1") -> Session:
    thread = await find_thread(r.gateway.recorder.env, "claude-code", conversation)
    assert thread is not None, "the gateway recorded no session for the conversation"
    return thread.session


async def replay(r: Rig, upto: list[int], messages=TASK, headers=SESSION) -> None:
    """Send the transcript as it grows: one request per length in `upto`."""
    for n in upto:
        answer = await r.post(body(messages[:n]), headers)
        assert answer.status_code == 200


def sent_messages(r: Rig, index: int = -1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = r.upstream.seen[index].json()["messages"]
    return messages


def texts(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


class TestRecording:
    async def test_the_conversation_is_recorded_with_no_frs_record(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [(e.role, e.tool_call_id) for e in entries] == [
                ("user", None),
                ("assistant", None),
                ("tool", "toolu_1"),
                ("assistant", None),
                ("tool", "toolu_2"),
                ("assistant", None),
                ("user", None),
            ]
            assert entries[1].tool_calls[0].id == "toolu_1"
            assert entries[1].content == "Let me run it 20 times."
            assert entries[2].answers == entries[1].number
            assert entries[6].content == "Add the lock."

    async def test_a_retried_request_records_nothing_twice(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [3, 3, 5, 5, 5])
            session = await session_of(r)
            assert session.live_count == 5

    async def test_thinking_is_recorded_as_thinking(self, tmp_path):
        messages = [
            user("go"),
            call("toolu_9", "ls", thinking="I should list the files."),
            result("toolu_9", "a b"),
        ]
        async with rig(tmp_path) as r:
            await replay(r, [3], messages)
            session = await session_of(r)
            view = await viewing.view(client_env(r), ViewOptions(show_thinking=True), session.id)
            assert "I should list the files." in view
            assert session.live_count == 3

    async def test_an_empty_result_and_a_call_without_words_come_back_empty(self, tmp_path):
        messages = [user("go"), call("toolu_e", "true"), result("toolu_e", "")]
        async with rig(tmp_path) as r:
            await replay(r, [3], messages)
            session = await session_of(r)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [(e.role, e.content) for e in entries[1:]] == [("assistant", ""), ("tool", "")]
            page = await pages.get_alias(
                client_env(r), f"M.{entries[2].number}", session_id=session.id
            )
            assert "(empty)" not in page.text
            done = await squashes.compress_range(
                client_env(r), 2, 3, "Ran true.", session_id=session.id
            )
            originals = await pages.get_alias(
                client_env(r), done.squash.alias, session_id=session.id
            )
            assert "(empty)" not in originals.text
            assert "true" in originals.text

    async def test_a_backlog_longer_than_one_batch_is_recorded_whole(self, tmp_path):
        # A conversation resumed through the gateway brings thousands of messages at once:
        # more than one recording may hold (Limits.max_batch), so they go in several.
        messages = [user("Fix the flaky test.")]
        for i in range(2_600):
            messages += [call(f"toolu_{i}", f"t {i}"), result(f"toolu_{i}", "ok")]
        async with rig(tmp_path) as r:
            await replay(r, [len(messages)], messages)
            session = await session_of(r)
            assert session.live_count == len(messages)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert entries[-1].tool_call_id == "toolu_2599"
            await replay(r, [len(messages)], messages)  # nothing twice
            assert (await session_of(r)).live_count == len(messages)

    async def test_a_side_call_without_tools_is_not_recorded(self, tmp_path):
        async with rig(tmp_path) as r:
            await r.post({"model": "m", "max_tokens": 1, "messages": [user("quota")]}, SESSION)
            assert await find_thread(r.gateway.recorder.env, "claude-code", "cc-session-1") is None

    async def test_a_subagent_is_a_conversation_of_its_own(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1])
            await replay(
                r, [1], [user("Search the code")], [*SESSION, ("X-Claude-Code-Agent-Id", "ag1")]
            )
            main = await session_of(r)
            agent = await session_of(r, "cc-session-1/ag1")
            assert main.id != agent.id

    async def test_without_a_session_header_the_first_message_names_the_conversation(
        self, tmp_path
    ):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3], headers=[])
            await replay(r, [1], [user("another task")], headers=[])
            sessions = await frs_sessions.page(client_env(r))
            assert sorted(s.live_count for s in sessions.sessions) == [1, 3]
            assert {s.interface for s in sessions.sessions} == {"anthropic"}


class TestSquashes:
    async def test_a_squash_is_sent_instead_of_its_originals(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            before = r.upstream.seen[-1].body
            assert before == body(TASK[:7])  # nothing to change yet: the host's bytes
            done = await squashes.compress_range(
                client_env(r), 2, 5, "Ran the test: a race in Syncer.flush.", session_id=session.id
            )
            await replay(r, [9])
            sent = texts(sent_messages(r))
            assert "AssertionError: 3 != 4" not in sent
            assert "toolu_1" not in sent
            assert "toolu_2" not in sent
            assert "Ran the test: a race in Syncer.flush." in sent
            assert f"FRS squash {done.squash.alias}" in sent
            assert 'get_alias(\\"SQ.1\\")' in sent
            assert len(r.upstream.seen[-1].body) < len(body(TASK[:9]))
            # What went through is counted: one rewrite, and the tokens it left out.
            assert r.gateway.traffic.rewritten == 1
            assert r.gateway.traffic.saved_tokens > 500
            assert r.gateway.traffic.forwarded_bytes < r.gateway.traffic.sent_bytes
            # The squashed span (assistant..result) went; the summary joined the user message
            # before it, and the host's messages after it are as the host sent them.
            messages = sent_messages(r)
            assert [m["role"] for m in messages] == [
                "user",
                "assistant",
                "user",
                "assistant",
                "user",
            ]
            assert messages[1:] == json.loads(body(TASK[:9]))["messages"][5:]
            # get_alias still returns the originals.
            page = await pages.get_alias(client_env(r), "SQ.1", session_id=session.id)
            assert "AssertionError: 3 != 4" in page.text

    async def test_a_fault_the_hosts_request_already_has_does_not_block_a_squash(self, tmp_path):
        # An interrupted turn: two user messages in a row after the span, which the gateway's
        # own check flags; the squash moves them, and must still go out.
        messages = [*TASK[:7], user("[Request interrupted by user]"), user("Go on.")]
        async with rig(tmp_path) as r:
            await replay(r, [7, 9], messages)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [9], messages)
            sent = texts(sent_messages(r))
            assert "Found the race." in sent
            assert "toolu_1" not in sent
            # The upstream saw the host's own fault and nothing new, in each request.
            assert [found for _, found in r.upstream.invalid] == [
                ["messages[7] is user, roles must alternate from user"],
                ["messages[3] is user, roles must alternate from user"],
            ]
            r.upstream.invalid.clear()

    async def test_consecutive_requests_repeat_their_messages_unchanged(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [9, 10, 11])
            bodies = [seen.body for seen in r.upstream.seen[-3:]]
            for earlier, later in itertools.pairwise(bodies):
                # Everything up to the earlier request's last message is byte-identical
                # (the host's cache marker moves to the newest message, as Claude Code's does).
                earlier_messages = json.loads(earlier)["messages"]
                later_messages = json.loads(later)["messages"]
                assert _unmarked(earlier_messages[:-1]) == _unmarked(
                    later_messages[: len(earlier_messages) - 1]
                )
                cut = earlier.index(b'"messages": [') + len(b'"messages": [')
                summary_end = earlier.index(b"Found the race.") + len(b"Found the race.")
                assert later[:summary_end] == earlier[:summary_end]
                assert cut < summary_end

    async def test_the_prefix_before_the_first_change_is_byte_identical(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 4, 5, "Grep found flush at line 12.", session_id=session.id
            )
            await replay(r, [9])
            host, forwarded = body(TASK[:9]), r.upstream.seen[-1].body
            # The span is assistant(call)..user(result): the summary joins the user message
            # before it, so everything up to that message's content is untouched.
            first_change = next(
                i for i, (a, b) in enumerate(zip(host, forwarded, strict=False)) if a != b
            )
            assert host[:first_change] == forwarded[:first_change]
            assert host.index(b"toolu_1") < first_change  # the first exchange is untouched

    async def test_restore_puts_the_originals_back_from_the_next_request(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [9])
            assert r.upstream.seen[-1].body != body(TASK[:9])
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
            await replay(r, [10])
            assert r.upstream.seen[-1].sha256 == hashlib.sha256(body(TASK[:10])).hexdigest()

    async def test_the_open_tool_loop_is_never_replaced(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 4])  # the call toolu_2 is recorded from request 3
            session = await session_of(r)
            await squashes.compress_range(client_env(r), 4, 4, "grep flush", session_id=session.id)
            # ... but the squash covers only the call; its result is not in the thread yet.
            await replay(r, [5])
            assert r.upstream.seen[-1].body == body(TASK[:5])

    async def test_a_squash_of_one_role_becomes_one_message_of_that_role(self, tmp_path):
        messages = [
            user("a"),
            said("b"),
            user("c " * 200),
            said("d " * 200),
            user("e " * 200),
            said("f"),
            user("g"),
        ]
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7], messages)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 3, 5, "c d e, briefly", session_id=session.id
            )
            await replay(r, [7], messages)
            sent = sent_messages(r)
            assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
            assert "c d e, briefly" in sent[2]["content"][0]["text"]

    async def test_a_subscription_request_passes_through_untouched(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            oauth = [
                *SESSION,
                ("authorization", "Bearer sk-ant-oat01-xyz"),
                ("anthropic-beta", "oauth-2025-04-20"),
            ]
            await r.post(body(TASK[:9]), oauth)
            assert r.upstream.seen[-1].body == body(TASK[:9])

    async def test_no_rewrite_records_but_forwards_every_request_as_sent(self, tmp_path):
        async with rig(tmp_path, rewrite=False) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [9])
            assert r.upstream.seen[-1].body == body(TASK[:9])


def rendering_with(render: Callable[..., str]) -> AnthropicMessages:
    """The Messages wire with its `render` replaced."""

    class Rendering(AnthropicMessages):
        def render(self, body: str, request: WireRequest, plan: RewritePlan) -> str:
            return render(body, request, plan)

    return Rendering()


class TestFailures:
    async def test_a_rewrite_that_raises_forwards_the_original(self, tmp_path):
        def broken(*args):
            raise RuntimeError("boom")

        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            r.gateway.wires["anthropic"] = rendering_with(broken)
            answer = await r.post(body(TASK[:9]), SESSION)
            assert answer.status_code == 200
            assert r.upstream.seen[-1].body == body(TASK[:9])
            assert r.gateway.traffic.failed == 1

    async def test_a_rewrite_that_would_break_a_rule_is_not_sent(self, tmp_path):
        def bad_render(text, request, plan):
            payload = json.loads(text)
            payload["messages"].insert(1, {"role": "user", "content": "x"})  # two users in a row
            return json.dumps(payload)

        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            r.gateway.wires["anthropic"] = rendering_with(bad_render)
            await r.post(body(TASK[:9]), SESSION)
            assert r.upstream.seen[-1].body == body(TASK[:9])


def _unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps(messages))
    for m in out:
        if isinstance(m["content"], list):
            for b in m["content"]:
                b.pop("cache_control", None)
    return out


class TestTold:
    async def test_the_view_tells_the_model_the_gateway_records_its_conversation(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1])
            session = await session_of(r)
            view = await viewing.view(client_env(r), ViewOptions(), session.id)
            assert "Recorded by frs-mcp gateway" in view
            assert "no frs_record needed" in view


class TestPostgres:
    async def test_recording_squash_and_restore_on_postgresql(self, tmp_path, pg_cluster):
        async with rig(tmp_path, dsn=pg_cluster.create_database()) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            assert session.live_count == 7
            await squashes.compress_range(
                client_env(r), 2, 5, "Found the race.", session_id=session.id
            )
            await replay(r, [9])
            sent = texts(sent_messages(r))
            assert "Found the race." in sent
            assert "toolu_1" not in sent
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
            await replay(r, [10])
            assert r.upstream.seen[-1].body == body(TASK[:10])
