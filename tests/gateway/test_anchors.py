"""What the model receives carries a prompt-cache breakpoint on the newest summary, so the
cache picks up there after the next squash, and never more breakpoints than the API takes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frs import squashes
from tests.gateway.conversation import SESSION, TASK, body, user
from tests.gateway.harness import rig
from tests.gateway.test_squashes import client_env, replay, session_of
from tests.hosts.model import caching


def received(r: Any, index: int = -1) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(r.upstream.seen[index].body)
    return payload


def marked_texts(payload: dict[str, Any]) -> list[str]:
    """The texts of the message blocks that carry a breakpoint, in order."""
    return [
        str(block.get("text", block.get("type")))
        for m in payload["messages"]
        if isinstance(m["content"], list)
        for block in m["content"]
        if "cache_control" in block
    ]


async def squashed(tmp_path: Path, host: Callable[[int], bytes]) -> dict[str, Any]:
    """What the model received after a squash of the first exchange: the host sends its first
    1, 3, 5 and 7 messages (`host(n)`), the exchange (positions 2..3) is squashed, the host
    sends 9. The upstream refused nothing, and the squash went out."""
    async with rig(tmp_path) as r:
        for n in (1, 3, 5, 7):
            await r.post(host(n), SESSION)
        session = await session_of(r)
        await squashes.compress_range(client_env(r), 2, 3, "Ran the tests.", session_id=session.id)
        await r.post(host(9), SESSION)
        assert r.upstream.invalid == []
        payload = received(r)
        assert "Ran the tests." in json.dumps(payload)
        return payload


class TestAnchor:
    async def test_the_newest_summary_carries_a_breakpoint(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 3, "Ran the tests: 3 != 4.", session_id=session.id
            )
            await replay(r, [9])
            payload = received(r)
            marked = marked_texts(payload)
            assert len(marked) == 2  # the summary's and the host's on its newest block
            assert "Ran the tests: 3 != 4." in marked[0]
            assert caching.breakpoints(payload) == ["5m", "5m", "5m"]  # system, summary, newest
            assert r.upstream.invalid == []
            # Next call, nothing new squashed: the same block carries it, byte for byte.
            await replay(r, [10])
            again = r.upstream.seen[-1].body
            summary = r.upstream.seen[-2].body
            end = summary.index(b'"cache_control"', summary.index(b"Ran the tests"))
            assert again[:end] == summary[:end]

    async def test_it_moves_to_the_newest_summary_as_squashes_go_on(self, tmp_path):
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 3, "First: 3 != 4.", session_id=session.id
            )
            await replay(r, [9])
            first = received(r)
            await squashes.compress_range(
                client_env(r), 3, 4, "Second: flush at 12.", session_id=session.id
            )
            await replay(r, [10])
            second = received(r)
            marked = marked_texts(second)
            assert len(marked) == 2
            assert "Second: flush at 12." in marked[0]

            # The first summary is where it was, unmarked now: what the earlier request cached
            # up to its breakpoint is the start of this one (markers are not part of a prefix).
            def plain(payload: dict[str, Any]) -> list[Any]:
                out: list[Any] = json.loads(json.dumps(payload["messages"]))
                for m in out:
                    for block in m["content"] if isinstance(m["content"], list) else ():
                        block.pop("cache_control", None)
                return out

            old = plain(first)[0]["content"]
            upto = next(i for i, b in enumerate(old) if "First: 3 != 4." in b.get("text", ""))
            assert plain(second)[0]["content"][: upto + 1] == old[: upto + 1]
            assert r.upstream.invalid == []

    async def test_a_request_with_four_breakpoints_gets_none_added(self, tmp_path):
        system = [
            {"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}}
            for i in range(3)
        ]
        payload = await squashed(tmp_path, lambda n: body(TASK[:n], system=system))
        assert len(caching.breakpoints(payload)) == 4  # the host's own, nothing added

    async def test_a_breakpoint_on_an_old_message_read_once_still_counts(self, tmp_path):
        # The first message keeps its breakpoint from request to request: the gateway reads it
        # once and takes it over after; with two on the system prompt and the host's newest,
        # that is four, and none may be added.
        system = [
            {"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}}
            for i in range(2)
        ]

        def pinned(n: int) -> bytes:
            payload = json.loads(body(TASK[:n], system=system))
            payload["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}
            return json.dumps(payload).encode()

        payload = await squashed(tmp_path, pinned)
        assert len(caching.breakpoints(payload)) == 4

    async def test_breakpoints_on_tools_and_inside_a_result_count(self, tmp_path):
        # The tools' and one inside an old tool result's content, with the system prompt's and
        # the newest: four, none may be added, and the squash still goes out.
        marker = {"type": "ephemeral"}
        tools = [
            {"name": "Bash", "description": "run", "input_schema": {}, "cache_control": marker}
        ]

        def host(n: int) -> bytes:
            payload = json.loads(body(TASK[:n], tools=tools))
            if n > 4:
                inner = [{"type": "text", "text": "12: def flush(self):", "cache_control": marker}]
                payload["messages"][4]["content"][0]["content"] = inner
            return json.dumps(payload).encode()

        payload = await squashed(tmp_path, host)
        assert len(caching.breakpoints(payload)) == 4

    async def test_a_summary_that_opens_the_next_user_message_carries_it(self, tmp_path):
        # The whole first turn (the task to the answer) goes: its summary opens the user
        # message after it, before that message's own text.
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5, 7])
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 1, 6, "The race is in Syncer.flush.", session_id=session.id
            )
            await replay(r, [9])
            opening = received(r)["messages"][0]["content"]
            assert "The race is in Syncer.flush." in opening[0]["text"]
            assert opening[0]["cache_control"] == {"type": "ephemeral"}
            assert opening[1] == {"type": "text", "text": "Add the lock."}
            assert r.upstream.invalid == []

    async def test_a_host_that_sets_no_breakpoint_gets_none(self, tmp_path):
        def bare(n: int) -> bytes:
            payload = json.loads(body(TASK[:n]))
            payload["system"] = [{"type": "text", "text": "You are a coding agent."}]
            for m in payload["messages"]:
                for block in m["content"] if isinstance(m["content"], list) else ():
                    block.pop("cache_control", None)
            return json.dumps(payload).encode()

        payload = await squashed(tmp_path, bare)
        assert caching.breakpoints(payload) == []

    async def test_a_one_hour_breakpoint_after_it_makes_it_one_hour(self, tmp_path):
        hour = {"type": "ephemeral", "ttl": "1h"}
        system = [{"type": "text", "text": "You are a coding agent.", "cache_control": hour}]

        def hourly(n: int) -> bytes:
            payload = json.loads(body(TASK[:n], system=system))
            payload["messages"][-1]["content"][-1]["cache_control"] = hour
            return json.dumps(payload).encode()

        payload = await squashed(tmp_path, hourly)
        assert caching.breakpoints(payload) == ["1h", "1h", "1h"]


class TestUpstreamRefuses:
    """The tests' upstream refuses what the API refuses of breakpoints (known-bad requests)."""

    def test_five_breakpoints_are_refused(self):
        marker = {"type": "ephemeral"}
        payload = {
            "system": [{"type": "text", "text": "s", "cache_control": marker}] * 2,
            "tools": [{"name": "t", "input_schema": {}, "cache_control": marker}],
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a", "cache_control": marker}],
                }
            ],
            "cache_control": marker,
        }
        assert caching.check(payload) == (
            "A maximum of 4 blocks with cache_control may be provided. Found 5."
        )
        payload.pop("cache_control")
        assert caching.check(payload) is None

    def test_a_result_s_own_blocks_count(self):
        marker = {"type": "ephemeral"}
        inner = [{"type": "text", "text": "r", "cache_control": marker}] * 4
        result = {"type": "tool_result", "tool_use_id": "t1", "content": inner}
        payload = {"messages": [user("go"), {"role": "user", "content": [result]}]}
        assert caching.check(payload) is None
        payload["system"] = [{"type": "text", "text": "s", "cache_control": marker}]
        assert caching.check(payload) is not None

    def test_a_one_hour_breakpoint_after_a_five_minute_one_is_refused(self):
        payload = {
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "a",
                            "cache_control": {"type": "ephemeral", "ttl": "1h"},
                        }
                    ],
                }
            ],
        }
        assert "ttl='1h'" in str(caching.check(payload))
        payload["system"] = [
            {"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ]
        assert caching.check(payload) is None

    async def test_the_harness_upstream_answers_them_with_a_400(self, tmp_path):
        marker = {"type": "ephemeral"}
        system = [{"type": "text", "text": f"p{i}", "cache_control": marker} for i in range(4)]
        async with rig(tmp_path) as r:
            answer = await r.post(body(TASK[:1], system=system), SESSION)
            assert answer.status_code == 400
            assert "A maximum of 4 blocks" in answer.text
            r.upstream.invalid.clear()
