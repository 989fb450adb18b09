"""The autopilot: the gateway squashes finished tool exchanges into fact cards on its own, in
batches that pay back under a prompt cache, with the model passive; the newest exchanges, the
open loop, the task, what loads tools and what the model restored stay; the model's own
squashes win; a batch reaches the model at the next call, thinking on."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio
import httpx2

from frs import pages, sessions
from frs import squashes as frs_squashes
from frs.autopilot import ROLLED, Autopilot
from frs.cards import HEADER
from frs.host_threads import SquashCalls, squash_calls, squash_kinds
from frs.squashes import compress_ranges
from server.gateway import recorder as recorder_module
from tests.gateway.conversation import SESSION, SYSTEM, TOOLS, result, user
from tests.gateway.harness import Rig, rig
from tests.gateway.test_squashes import client_env, session_of
from tests.gateway.test_thinking import Model

#: Small enough to see in a short test: act past 6,000 tokens, keep the newest 3 exchanges.
SMALL = Autopilot(keep=3, after=6_000, payback=4)


class Loop:
    """A Claude Code conversation in a tool loop (thinking on, the model's answers kept as
    they came), each result ~600 tokens of a listing that names a file."""

    def __init__(self, r: Rig, **extra: Any) -> None:
        self.r = r
        self.messages: list[dict[str, Any]] = [user("Find the race in src/sync.py.")]
        self.extra = extra

    async def call(self) -> None:
        body = {
            "model": "claude-test",
            "max_tokens": 1000,
            "system": SYSTEM,
            "tools": TOOLS,
            "thinking": {"type": "adaptive"},
            **self.extra,
            "messages": self.messages,
        }
        answer = await self.post(json.dumps(body).encode())
        assert answer.status_code == 200, answer.text
        content = answer.json()["content"]
        self.messages.append({"role": "assistant", "content": content})
        call = content[-1]["id"]
        listing = "".join(f"src/mod_{call}_{i}.py: def handler_{i}(): ...\n" for i in range(60))
        self.messages.append(result(call, f"Exit code: 0\n{listing}"))

    async def calls(self, n: int) -> None:
        for _ in range(n):
            await self.call()

    async def post(self, body: bytes) -> httpx2.Response:
        return await self.r.post(body, SESSION)


class Hasty(Loop):
    """The host sends its next request as soon as the answer is in, as Claude Code does,
    while the gateway may still be writing the batch it made after that answer."""

    async def post(self, body: bytes) -> httpx2.Response:
        headers = [("content-type", "application/json"), ("anthropic-version", "2023-06-01")]
        return await self.r.client.post(
            self.r.url + "/v1/messages", content=body, headers=[*headers, *SESSION]
        )


def sent(r: Rig, index: int = -1) -> dict[str, Any]:
    payload: dict[str, Any] = r.upstream.seen[index].json()
    return payload


async def calls_of(r: Rig) -> list[Any]:
    session = await session_of(r)
    async with r.gateway.recorder.env.store.snapshot() as reader:
        return await reader.gateway_calls(session.id, 1_000)


async def squashes_of(r: Rig) -> list[Any]:
    session = await session_of(r)
    async with r.gateway.recorder.env.store.snapshot() as reader:
        return await reader.squashes(session.id)


class TestBatch:
    async def test_a_passive_model_gets_fact_cards_at_the_next_call(self, tmp_path):
        async with rig(tmp_path, Model(), autopilot=SMALL) as r:
            loop = Loop(r)
            made_at = None
            for call in range(1, 20):
                await loop.call()
                if made_at is None and await squashes_of(r):
                    made_at = call
            assert made_at is not None, "the autopilot made no batch"
            squashes = await squashes_of(r)
            assert all(s.automatic for s in squashes)
            first = squashes[0]
            # It reached the model at the call after it was made: cards instead of the
            # originals, the task and the newest exchanges verbatim, stale thinking dropped.
            after = sent(r, made_at)
            flat = json.dumps(after["messages"])
            assert HEADER in flat
            assert f'get_alias(\\"SQ.{first.n}\\")' in flat
            assert "ls 1" in flat  # the first call's command, verbatim on its card
            assert "src/mod_toolu_001_0.py: def handler_0" not in flat  # its output went
            assert after["messages"][0]["content"][0]["text"] == "Find the race in src/sync.py."
            assert after["thinking"] == {"type": "adaptive"}  # the host's setting, untouched
            assert r.upstream.dropped[made_at] == ()  # the stale thinking went with the strip
            newest = json.dumps(after["messages"][-6:])
            assert "src/mod_" in newest  # the working set's outputs are whole
            # Each call says which squashes it sent: first sent the call after it was made.
            session = await session_of(r)
            async with r.gateway.recorder.env.store.snapshot() as reader:
                calls = await reader.gateway_calls(session.id, 100)
            sent_at = next(i for i, c in enumerate(calls, start=1) if first.n in c.applied)
            assert sent_at == made_at + 1
            timing = squash_calls(calls, squashes)
            assert timing[0] == SquashCalls(first.n, made_at, made_at + 1)
            assert {t.delay for t in timing if t.sent is not None} == {1}
            # The originals are one get_alias away.
            page = await pages.get_alias(client_env(r), first.alias, session_id=session.id)
            assert "src/mod_toolu_001_0.py" in page.text
            # The view says which summaries are automatic.
            view = await sessions.live_thread(client_env(r), session.id)
            auto = [e for e in view.entries if e.kind == "summary"]
            assert auto
            assert all(e.content.startswith(HEADER) for e in auto)
            # Every forwarded request kept the API's rules (the rig checks) and the upstream
            # dropped only stale thinking, never refused.
            assert r.upstream.invalid == []

    async def test_a_request_that_came_while_its_batch_was_written_sends_it_a_call_later(
        self, tmp_path, monkeypatch
    ):
        # The request waits for the batch and sends it; it came before the batch was made,
        # but the batch was made after the call before it: it reached the model one call on.
        async def slowly(*args: Any, **kwargs: Any) -> Any:
            await anyio.sleep(0.3)  # the host's next request comes meanwhile
            return await compress_ranges(*args, **kwargs)

        monkeypatch.setattr(recorder_module, "compress_ranges", slowly)
        async with rig(tmp_path, Model(), autopilot=SMALL) as r:
            await Hasty(r).calls(16)
            await r.gateway.settled()
            squashes = await squashes_of(r)
            assert squashes
            session = await session_of(r)
            async with r.gateway.recorder.env.store.snapshot() as reader:
                calls = await reader.gateway_calls(session.id, 100)
            timing = squash_calls(calls, squashes)
            assert [t.delay for t in timing] == [1] * len(timing), timing

    async def test_a_batch_waits_while_the_session_has_made_few_calls(self, tmp_path):
        async def first_batch(settings: Autopilot, folder: str) -> int:
            (tmp_path / folder).mkdir()
            async with rig(tmp_path / folder, Model(), autopilot=settings) as r:
                loop = Loop(r)
                for call in range(1, 41):
                    await loop.call()
                    await r.gateway.settled()
                    if await squashes_of(r):
                        return call
            raise AssertionError("the autopilot made no batch in 40 calls")

        eager = await first_batch(replace(SMALL, seen=100.0), "eager")
        # Paying back within a tenth of the calls made: the same batch, later.
        wary = await first_batch(replace(SMALL, seen=0.1), "wary")
        assert wary > eager

    async def test_a_short_session_is_never_squashed(self, tmp_path):
        async with rig(tmp_path, Model(), autopilot=Autopilot(keep=3, after=30_000)) as r:
            loop = Loop(r)
            await loop.calls(12)
            assert await squashes_of(r) == []
            assert all(b"block_binding" not in s.body for s in r.upstream.seen)

    async def test_no_auto_squash_makes_none(self, tmp_path):
        async with rig(tmp_path, Model(), autopilot=None) as r:
            loop = Loop(r)
            await loop.calls(16)
            assert await squashes_of(r) == []

    async def test_a_batch_that_would_not_pay_back_waits(self, tmp_path):
        # A generous working set leaves a tail as large as what could go: no batch, and the
        # cache is never broken for nothing.
        async with rig(tmp_path, Model(), autopilot=Autopilot(keep=8, after=0, payback=1)) as r:
            loop = Loop(r)
            await loop.calls(12)
            assert await squashes_of(r) == []


class TestRollUp:
    async def test_older_cards_roll_up_into_a_digest_that_names_their_aliases(self, tmp_path):
        settings = Autopilot(keep=2, after=6_000, payback=8, rollup=1_500)
        async with rig(tmp_path, Model(), autopilot=settings) as r:
            loop = Loop(r)
            await loop.calls(40)
            squashes = await squashes_of(r)
            rolled = [s for s in squashes if s.summary.startswith(ROLLED)]
            assert rolled, [s.summary[:40] for s in squashes]
            assert all(s.automatic for s in squashes)
            roll = rolled[0]
            session = await session_of(r)
            # Nested over the cards: get_alias returns them, and they their originals.
            async with r.gateway.recorder.env.store.snapshot() as reader:
                members = await reader.squash_members(session.id, roll.n)
            assert all(m.kind == "summary" and m.content.startswith(HEADER) for m in members)
            page = await pages.get_alias(client_env(r), roll.alias, session_id=session.id)
            assert HEADER in page.text
            # The digest keeps the commands, each with the alias of its result.
            assert "M.3: ls 1" in roll.summary
            # It reached the model, and what the model is sent stays small.
            sent_at = [c.applied for c in await calls_of(r)]
            assert any(roll.n in applied for applied in sent_at)
            assert len(r.upstream.seen[-1].body) < len(json.dumps(loop.messages)) / 3


class TestWhatStays:
    async def test_the_models_own_squash_wins_and_a_restored_span_stays(self, tmp_path):
        async with rig(tmp_path, Model(), autopilot=SMALL) as r:
            loop = Loop(r)
            await loop.calls(4)
            session = await session_of(r)
            mine = await frs_squashes.compress_range(
                client_env(r), 2, 3, "Listed 1: nothing.", session_id=session.id
            )
            await loop.calls(10)
            squashes = await squashes_of(r)
            assert [s.automatic for s in squashes][:1] == [False]
            auto = [s for s in squashes if s.automatic]
            assert auto
            # Never nested: the model's summary is its own entry still.
            entries = (await sessions.live_thread(client_env(r), session.id)).entries
            assert any(e.squash_n == mine.squash.n for e in entries)
            # The model asks one back: the autopilot leaves those messages alone after.
            await frs_squashes.restore(client_env(r), f"SQ.{auto[0].n}", session_id=session.id)
            restored = {(s.first, s.last) for s in await squashes_of(r) if s.restored}
            await loop.calls(6)
            later = [s for s in await squashes_of(r) if s.automatic and not s.restored]
            for first, last in restored:
                assert all(s.last < first or s.first > last for s in later)

    async def test_a_stale_plan_loses_to_the_models_squash(self, tmp_path, monkeypatch):
        async with rig(tmp_path, Model(), autopilot=SMALL) as r:
            loop = Loop(r)
            await loop.calls(5)
            session = await session_of(r)
            raced: list[int] = []

            async def racing(env: Any, session_id: Any) -> Any:
                # The model squashes after the autopilot read the thread, before it writes.
                if not raced:
                    done = await frs_squashes.compress_range(
                        client_env(r), 2, 3, "Mine.", session_id=session.id
                    )
                    raced.append(done.squash.n)
                return await squash_kinds(env, session_id)

            monkeypatch.setattr(recorder_module, "squash_kinds", racing)
            before = len(r.upstream.seen)
            while not raced and len(r.upstream.seen) < before + 15:
                await loop.call()
            assert raced, "the autopilot never came to write a batch"
            squashes = await squashes_of(r)
            # The batch planned before the model's squash was refused; the model's stands.
            assert [(s.summary, s.automatic) for s in squashes] == [("Mine.", False)]
            await loop.calls(12)
            assert any(s.automatic for s in await squashes_of(r))  # a later batch goes

    async def test_an_exchange_whose_results_share_a_message_with_other_words_stays(self, tmp_path):
        # Claude Code puts text blocks after the results in the same user message (the files
        # it re-attaches after a compaction, a reminder): a squash cannot take those results
        # without cutting that message, so it could never be sent. Every batch is sent.
        async with rig(tmp_path, Model(), autopilot=SMALL) as r:
            loop = Loop(r)
            for call in range(1, 25):
                await loop.call()
                if call in (3, 12):
                    reminder = f"<system-reminder>Note {call}.</system-reminder>"
                    loop.messages[-1]["content"].append({"type": "text", "text": reminder})
            squashes = await squashes_of(r)
            assert len(squashes) >= 2
            session = await session_of(r)
            async with r.gateway.recorder.env.store.snapshot() as reader:
                calls = await reader.gateway_calls(session.id, 100)
            timing = squash_calls(calls, squashes)
            assert [t.delay for t in timing] == [1] * len(timing), timing
            # The words stay verbatim, with the results they came with.
            flat = json.dumps(sent(r)["messages"])
            assert "<system-reminder>Note 3.</system-reminder>" in flat


class TestRuntimeEntries:
    async def test_cards_name_each_result_alias(self, tmp_path):
        async with rig(tmp_path, Model(), autopilot=SMALL) as r:
            loop = Loop(r)
            await loop.calls(14)
            squashes = await squashes_of(r)
            assert squashes
            card = squashes[0].summary
            assert card.startswith(HEADER)
            assert "M.3" in card  # the first result's own alias
