"""Two gateways on one database (as several instances behind a load balancer run): a
conversation whose calls alternate between them goes upstream with the bytes one gateway
alone sends; a request waits for the call another instance is still settling; only the
holder of the conversation's turn plans a batch; two instances that record one request at
once store each message once. (The same with three processes on PostgreSQL behind haproxy:
tests/robust/test_gateway_instances.py.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import httpx2

from frs import AskedRange
from frs.autopilot import Autopilot
from frs.env import Env
from frs.host_threads import StoredThread, find_thread, squash_calls
from frs.model import GatewayCall, Nudge
from frs.squashes import compress_ranges
from frs.turns import take_turn, turn_held
from server.gateway import recorder as recorder_module
from server.gateway.anthropic import WIRE
from server.gateway.command import open_gateway
from server.gateway.proxy import Gateway, Upstreams
from server.settings import Settings
from tests.gateway.conversation import SESSION, SYSTEM, TOOLS, result, user
from tests.gateway.harness import Reply, Seen, Upstream, served
from tests.gateway.test_thinking import Model

SMALL = Autopilot(keep=3, after=6_000, payback=4)
KEY = ("claude-code", "cc-session-1")


@asynccontextmanager
async def gateways(
    tmp_path: Path, count: int, upstream: Upstream
) -> AsyncIterator[tuple[list[str], list[Gateway]]]:
    """`count` gateways on one SQLite database in front of `upstream`: their URLs and apps."""
    async with AsyncExitStack() as stack:
        up = await stack.enter_async_context(served(upstream))
        settings = Settings(database=str(tmp_path / "frs.db"))
        apps = [
            await stack.enter_async_context(
                open_gateway(settings, Upstreams(anthropic=up, openai=up), autopilot=SMALL)
            )
            for _ in range(count)
        ]
        urls = [await stack.enter_async_context(served(app)) for app in apps]
        yield urls, apps


class Loop:
    """Claude Code in a tool loop, thinking on, each result a ~600-token listing; its calls go
    to the gateways in turn, each as soon as the last answer is in."""

    def __init__(self, urls: Sequence[str], client: httpx2.AsyncClient) -> None:
        self.urls = urls
        self.client = client
        self.messages: list[dict[str, Any]] = [user("Find the race in src/sync.py.")]
        self.calls = 0

    async def call(self) -> None:
        body = {
            "model": "claude-test",
            "max_tokens": 1000,
            "system": SYSTEM,
            "tools": TOOLS,
            "thinking": {"type": "adaptive"},
            "messages": self.messages,
        }
        url = self.urls[self.calls % len(self.urls)]
        self.calls += 1
        headers = [
            ("content-type", "application/json"),
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
            *SESSION,
        ]
        answer = await self.client.post(
            url + "/v1/messages", content=json.dumps(body), headers=headers
        )
        assert answer.status_code == 200, answer.text
        content = answer.json()["content"]
        self.messages.append({"role": "assistant", "content": content})
        call = content[-1]["id"]
        listing = "".join(f"src/mod_{call}_{i}.py: def handler_{i}(): ...\n" for i in range(60))
        self.messages.append(result(call, f"Exit code: 0\n{listing}"))


async def play(tmp_path: Path, count: int, calls: int = 14) -> tuple[list[bytes], list[Gateway]]:
    """The loop's calls through `count` gateways, the model squashing positions 2-3 after the
    fifth; the bodies the upstream received."""
    upstream = Upstream(Model())
    async with gateways(tmp_path, count, upstream) as (urls, apps):
        async with httpx2.AsyncClient(timeout=30) as client:
            loop = Loop(urls, client)
            for n in range(1, calls + 1):
                await loop.call()
                if n == 5:
                    for app in apps:
                        await app.settled()
                    env = apps[0].recorder.env
                    thread = await find_thread(env, *KEY)
                    assert thread is not None
                    squash = [AskedRange(2, 3, "Listed two folders.")]
                    await compress_ranges(env, squash, None, thread.session.id)
            for app in apps:
                await app.settled()
        assert upstream.invalid == [], upstream.invalid
        return [seen.body for seen in upstream.seen], apps


class TestTwoGateways:
    async def test_alternating_calls_go_upstream_as_one_gateway_sends_them(self, tmp_path):
        (tmp_path / "one").mkdir()
        (tmp_path / "two").mkdir()
        alone, _ = await play(tmp_path / "one", 1)
        both, apps = await play(tmp_path / "two", 2)
        # The model's squash and the autopilot's batches made the bodies the host's no more.
        assert any(b"Listed two folders." in body for body in both)
        assert all(app.traffic.rewritten > 0 for app in apps)
        assert len(both) == len(alone) == 14
        for n, (one, two) in enumerate(zip(alone, both, strict=True), start=1):
            assert two == one, f"call {n} went upstream with other bytes through two gateways"

    async def test_a_request_waits_for_the_batch_another_gateway_writes(
        self, tmp_path, monkeypatch
    ):
        # The autopilot writes slowly; the host's next call goes to the other gateway at once.
        # It waits for the batch (the turn is held) and sends it: one call after it was made.
        async def slowly(*args: Any, **kwargs: Any) -> Any:
            await anyio.sleep(0.3)
            return await compress_ranges(*args, **kwargs)

        monkeypatch.setattr(recorder_module, "compress_ranges", slowly)
        upstream = Upstream(Model())
        async with gateways(tmp_path, 2, upstream) as (urls, apps):
            async with httpx2.AsyncClient(timeout=30) as client:
                loop = Loop(urls, client)
                for _ in range(16):
                    await loop.call()
            for app in apps:
                await app.settled()
            env = apps[0].recorder.env
            thread = await find_thread(env, *KEY)
            assert thread is not None
            async with env.store.snapshot() as reader:
                calls = await reader.gateway_calls(thread.session.id, 100)
                squashes = await reader.squashes(thread.session.id)
        assert squashes
        assert all(s.automatic for s in squashes)
        timing = squash_calls(calls, squashes)
        assert [t.delay for t in timing] == [1] * len(timing), timing


class TestTurns:
    async def test_one_call_holds_a_turn_and_the_other_waits_or_plans_nothing(self, tmp_path):
        upstream = Upstream(Model())
        async with gateways(tmp_path, 2, upstream) as (urls, apps):
            async with httpx2.AsyncClient(timeout=30) as client:
                await Loop(urls, client).call()
            for app in apps:
                await app.settled()
            a, b = (app.recorder for app in apps)
            assert not await turn_held(a.env, *KEY)  # freed once the call settled
            assert await take_turn(a.env, *KEY, "a-1") is not None
            assert await turn_held(b.env, *KEY)
            assert await take_turn(b.env, *KEY, "b-1") is None  # a-1 settles, and plans


class TestTurnsAreFreed:
    """Whatever way a call ends, the conversation's turn it took is freed when it settles:
    the next request never waits out a turn nobody holds."""

    async def test_after_an_error_answer_and_after_a_failure_while_settling(
        self, tmp_path, monkeypatch
    ):
        model = Model()
        failing = {"status": False}

        def script(seen: Seen) -> Reply:
            if failing["status"]:
                return Reply(status=529, chunks=(b'{"type":"error"}',))
            return model(seen)

        upstream = Upstream(script)
        async with (
            gateways(tmp_path, 1, upstream) as (urls, apps),
            httpx2.AsyncClient(timeout=30) as client,
        ):
            loop = Loop(urls, client)
            await loop.call()
            await apps[0].settled()
            failing["status"] = True
            headers = [("x-api-key", "sk-test"), ("content-type", "application/json"), *SESSION]
            payload = {"model": "claude-test", "max_tokens": 10, "system": SYSTEM,
                           "tools": TOOLS, "messages": loop.messages}  # fmt: skip
            answer = await client.post(urls[0] + "/v1/messages", json=payload, headers=headers)
            assert answer.status_code == 529
            await apps[0].settled()
            assert not await turn_held(apps[0].recorder.env, *KEY)
            failing["status"] = False

            async def broken(*args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("the store went away")

            monkeypatch.setattr(recorder_module.Recorder, "add_call", broken)
            await loop.call()
            await apps[0].settled()
            assert not await turn_held(apps[0].recorder.env, *KEY)


class TestTakeover:
    async def test_the_newest_stored_call_wins_over_what_this_gateway_kept(self, monkeypatch):
        # This gateway rendered squash 3 with one mark; another instance sent it since with
        # another and stored it: the stored one went upstream last, and the prompt cache holds
        # it. A mark only this gateway has, and a reminder, are kept beside.
        stored = GatewayCall(
            at="2026-11-29T12:00:00.000000Z",
            wire="anthropic",
            sent_bytes=1,
            sent_tokens=1,
            forwarded_bytes=1,
            forwarded_tokens=1,
            sent=((3, "stored"),),
            nudges=(Nudge("u:2", "squash?", 1),),
            bound=True,
        )

        async def newest(env: Any, session_id: Any) -> GatewayCall:
            return stored

        monkeypatch.setattr(recorder_module, "last_call", newest)
        recorder = recorder_module.Recorder(cast(Env, None))
        conversation = recorder._conversation(KEY)
        conversation.sent = {3: "mine", 4: "only mine"}
        conversation.nudges = [Nudge("u:1", "earlier", 1)]
        thread = cast(StoredThread, SimpleNamespace(session=SimpleNamespace(id="s")))
        assert await recorder._take_newest(thread, conversation) == stored
        assert conversation.sent == {3: "stored", 4: "only mine"}
        assert conversation.nudges == [Nudge("u:2", "squash?", 1), Nudge("u:1", "earlier", 1)]
        assert conversation.bound


class TestRecordOnce:
    async def test_two_gateways_recording_one_request_at_once_store_each_message_once(
        self, tmp_path
    ):
        upstream = Upstream(Model())
        async with gateways(tmp_path, 2, upstream) as (urls, apps):
            async with httpx2.AsyncClient(timeout=30) as client:
                loop = Loop(urls[:1], client)
                for _ in range(3):
                    await loop.call()
            await apps[0].settled()
            # The host's next request, prepared by both (as when it retried on another
            # instance), recorded by both at once.
            body = json.dumps(
                {
                    "model": "claude-test",
                    "max_tokens": 1000,
                    "system": SYSTEM,
                    "tools": TOOLS,
                    "messages": [*loop.messages, user("And the lock in src/io.py?")],
                }
            ).encode()
            headers = {"x-claude-code-session-id": "cc-session-1", "x-api-key": "sk-test"}
            a, b = (app.recorder for app in apps)
            first = await a.prepare(WIRE, body, headers, rewrite=False)
            second = await b.prepare(WIRE, body, headers, rewrite=False)
            assert first.fresh == second.fresh == 2
            done: list[int] = []

            async def record(recorder: Any, prepared: Any) -> None:
                done.append(await recorder.record(prepared))

            async with anyio.create_task_group() as tg:
                tg.start_soon(record, a, first)
                tg.start_soon(record, b, second)
            assert sorted(done) == [0, 2]  # one wrote both new messages, the other none
            thread = await find_thread(a.env, *KEY)
            assert thread is not None
            async with a.env.store.snapshot() as reader:
                entries = await reader.entries_at(thread.session.id, 1, thread.session.live_count)
            keys = [e.interface_message_id for e in entries if e.interface_message_id]
            assert len(keys) == len(set(keys)) == 8
