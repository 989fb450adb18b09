"""Squashes reach the model mid-loop with thinking on, by the API's documented rules for a
proxy that rewrites older turns: with adaptive thinking the thinking a squash made stale is left
out of the kept turns (the request's settings untouched); with manual thinking, after a
restore, or where a block cannot be left out, the request asks the API to drop it
(`drop_block`, with its beta header). The upstream checks every request's thinking as the API
does (`tests.hosts.model.binding`), and signs the thinking it answers with over what it
received, as the API does: the host here keeps those answers as Claude Code does, so each later
request carries thinking bound to what the model was sent."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx2

from frs import pages, squashes
from tests.gateway.conversation import SESSION, SYSTEM, TOOLS, body, call, result, said, user
from tests.gateway.harness import Reply, Rig, Seen, rig
from tests.gateway.test_squashes import client_env, session_of
from tests.hosts.model import binding

DROP = {"prefix_mismatch_behavior": "drop_block"}


class Model:
    """The model: it thinks, then calls Bash (its n-th call is toolu_00n), signing its
    thinking over what it received, as the API does."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, seen: Seen) -> Reply:
        payload = seen.json()
        checked = binding.check(payload, seen.headers)
        self.calls += 1
        step = self.calls
        content = [
            binding.answer_thinking(payload, checked, f"Step {step}: what next."),
            {
                "type": "tool_use",
                "id": f"toolu_{step:03d}",
                "name": "Bash",
                "input": {"command": f"ls {step}"},
            },
        ]
        message = {"id": f"msg_{step}", "type": "message", "role": "assistant", "content": content}
        message["stop_reason"] = "tool_use"
        return Reply(chunks=(json.dumps(message).encode(),))


class Host:
    """A host in a tool loop: it sends its transcript, keeps the model's answer as it came
    (thinking, signature and all) and answers its call with a long result."""

    def __init__(self, r: Rig, task: str = "Find the race.", **extra: Any) -> None:
        self.r = r
        self.messages: list[dict[str, Any]] = [user(task)]
        self.extra = extra
        self.headers = list(SESSION)

    def payload(self) -> dict[str, Any]:
        return {
            "model": "claude-test",
            "max_tokens": 1000,
            "system": SYSTEM,
            "tools": TOOLS,
            **self.extra,
            "messages": self.messages,
        }

    async def call(self) -> httpx2.Response:
        answer = await self.r.post(json.dumps(self.payload()).encode(), self.headers)
        assert answer.status_code == 200, answer.text
        message = answer.json()
        self.messages.append({"role": "assistant", "content": message["content"]})
        call_id = message["content"][-1]["id"]
        self.messages.append(result(call_id, f"output of {call_id}\n" * 200))
        return answer

    async def calls(self, n: int) -> None:
        for _ in range(n):
            await self.call()


def sent(r: Rig, index: int = -1) -> dict[str, Any]:
    payload: dict[str, Any] = r.upstream.seen[index].json()
    return payload


def _unthought(message: dict[str, Any]) -> dict[str, Any]:
    """The message without its thinking blocks."""
    content = message["content"]
    if isinstance(content, list):
        content = [b for b in content if b.get("type") not in ("thinking", "redacted_thinking")]
    return {**message, "content": content}


class TestMidLoop:
    async def test_a_squash_made_mid_loop_reaches_the_model_at_the_next_call(self, tmp_path):
        async with rig(tmp_path, Model()) as r:
            host = Host(r)
            await host.calls(4)
            # Every request so far reached the model as the host sent it.
            assert all(r.upstream.dropped[i] == () for i in range(4))
            assert "thinking" not in sent(r)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Listed 1 and 2: nothing.", session_id=session.id
            )
            host_sent = list(host.payload()["messages"])
            await host.call()
            first = sent(r)
            flat = json.dumps(first["messages"])
            assert "Listed 1 and 2: nothing." in flat
            assert "toolu_001" not in flat
            assert "toolu_002" not in flat
            # The thinking the squash made stale went: the kept turns are the host's but for
            # their thinking blocks, and nothing else changed (no setting, no beta).
            assert "thinking" not in first
            assert binding.BETA not in str(r.upstream.seen[-1].header("anthropic-beta"))
            assert first["messages"][1:] == [_unthought(m) for m in host_sent[5:]]
            assert r.upstream.dropped[4] == ()  # nothing stale reached the API
            await host.calls(2)
            # The thinking written after the squash is sent, and holds.
            later = sent(r)
            assert later["messages"][5]["content"][0]["type"] == "thinking"
            assert r.upstream.dropped[5] == ()
            assert r.upstream.dropped[6] == ()
            # Consecutive requests repeat their messages unchanged.
            earlier = sent(r, -2)
            assert later["messages"][: len(earlier["messages"]) - 1] == earlier["messages"][:-1]
            # get_alias returns the originals, thinking and all.
            page = await pages.get_alias(client_env(r), "SQ.1", session_id=session.id)
            assert "toolu_001" in page.text

    async def test_the_hosts_own_betas_and_thinking_settings_are_kept(self, tmp_path):
        settings = {"type": "enabled", "budget_tokens": 2048}
        async with rig(tmp_path, Model()) as r:
            host = Host(r, thinking=settings)
            host.headers.append(("anthropic-beta", "claude-code-20250219,interleaved-thinking"))
            await host.calls(4)
            session = await session_of(r)
            await squashes.compress_range(client_env(r), 2, 3, "Listed 2.", session_id=session.id)
            await host.call()
            assert sent(r)["thinking"] == {**settings, "block_binding": DROP}
            beta = r.upstream.seen[-1].header("anthropic-beta")
            assert beta == f"claude-code-20250219,interleaved-thinking,{binding.BETA}"
            assert r.upstream.dropped[4] == ((1, 0), (3, 0), (5, 0))

    async def test_after_a_restore_it_still_asks_for_the_drop(self, tmp_path):
        # Thinking written while the squash was sent binds to the squashed prefix: once the
        # originals are back, that thinking is stale, and the API must be asked to drop it.
        async with rig(tmp_path, Model()) as r:
            host = Host(r)
            await host.calls(3)
            session = await session_of(r)
            await squashes.compress_range(client_env(r), 2, 3, "Listed 2.", session_id=session.id)
            await host.calls(2)
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
            await host.call()
            last = sent(r)
            assert "Listed 2." not in json.dumps(last["messages"])
            assert last["thinking"]["block_binding"] == DROP
            assert r.upstream.dropped[5] == ((7, 0), (9, 0))

    async def test_a_restarted_gateway_goes_on_asking(self, tmp_path):
        # After a restore nothing is replaced: only the conversation's stored state says the
        # API must still be asked to drop what was written under the squash.
        async with rig(tmp_path, Model()) as r:
            host = Host(r)
            await host.calls(3)
            session = await session_of(r)
            await squashes.compress_range(client_env(r), 2, 3, "Listed 1.", session_id=session.id)
            await host.call()
            await squashes.restore(client_env(r), "SQ.1", session_id=session.id)
        async with rig(tmp_path, Model()) as r:
            host.r = r
            await host.call()
            assert sent(r)["thinking"]["block_binding"] == DROP
            assert r.upstream.dropped[0] == ((7, 0),)


class TestWhereItCannotAsk:
    """A request that sets `prefix_mismatch_behavior: "error"` itself keeps it: the squash
    then waits for the next user turn, and thinking of earlier turns after it is left out."""

    SETTINGS: ClassVar[dict[str, Any]] = {
        "type": "enabled",
        "budget_tokens": 1024,
        "block_binding": {"prefix_mismatch_behavior": "error"},
    }
    CONVO: ClassVar[list[dict[str, Any]]] = [
        user("Find the bug."),
        call("toolu_a", "pytest", thinking="Run the tests first."),
        result("toolu_a", "FAILED " * 300),
        said("It is the race.", thinking="The output shows a race."),
        user("Fix it."),
        call("toolu_b", "patch", thinking="Patch the lock."),
        result("toolu_b", "ok"),
    ]
    BETA: ClassVar[list[tuple[str, str]]] = [*SESSION, ("anthropic-beta", binding.BETA)]

    async def replay(self, r: Rig, upto: list[int], messages: list[dict[str, Any]]) -> None:
        for n in upto:
            answer = await r.post(body(messages[:n], thinking=self.SETTINGS), self.BETA)
            assert answer.status_code == 200, answer.text

    async def test_a_squash_waits_while_the_current_turn_holds_thinking(self, tmp_path):
        async with rig(tmp_path) as r:
            await self.replay(r, [1, 3, 5, 6], self.CONVO)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 3, "Tests failed: a race.", session_id=session.id
            )
            await self.replay(r, [7], self.CONVO)
            assert r.upstream.seen[-1].body == body(self.CONVO[:7], thinking=self.SETTINGS)

    async def test_at_the_next_user_turn_it_applies_and_later_thinking_of_earlier_turns_goes(
        self, tmp_path
    ):
        convo = [*self.CONVO, said("Patched.", thinking="Done now."), user("Thanks.")]
        async with rig(tmp_path) as r:
            await self.replay(r, [1, 3, 5, 7], convo)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 3, "Tests failed: a race.", session_id=session.id
            )
            await self.replay(r, [9], convo)
            payload = sent(r)
            flat = json.dumps(payload["messages"])
            assert "Tests failed: a race." in flat
            assert "FAILED FAILED" not in flat
            assert payload["thinking"] == self.SETTINGS  # its own setting, untouched
            # Thinking after the squash, of turns that are over, is left out; its text stays.
            assert "The output shows a race." not in flat
            assert "Patch the lock." not in flat
            assert "It is the race." in flat
            assert "Patched." in flat
            assert "toolu_b" in flat
            # The request after it repeats those messages unchanged.
            await self.replay(r, [9], [*convo[:8], user("Thanks.")])
            assert r.upstream.seen[-1].body == r.upstream.seen[-2].body
