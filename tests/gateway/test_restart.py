"""Each forwarded request is a row of `gateway_calls`, and a restarted gateway reads what it had
sent back from the newest one: the next request goes upstream byte for byte as the gateway
that never stopped would have sent it (no extra prompt-cache break)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frs import squashes
from tests.gateway import test_thinking
from tests.gateway.conversation import SESSION, body, call, result, said, user
from tests.gateway.harness import Rig, rig
from tests.gateway.test_nudges import long_session, reminders
from tests.gateway.test_squashes import client_env, session_of
from tests.hosts.model import binding

#: One step of a scripted conversation: a request of the transcript's first n messages, a
#: squash of positions (first, last) with its summary, made by the model's tool call, or
#: something the test does with the rig (the model's answer kept as it came).
Step = int | tuple[int, int, str] | Callable[[Rig], None]


async def _play(r: Rig, messages: list[dict[str, Any]], steps: Sequence[Step]) -> list[bytes]:
    """The bodies the upstream received for the steps' requests."""
    got = []
    for step in steps:
        if callable(step):
            step(r)
        elif isinstance(step, int):
            answer = await r.post(body(messages[:step]), SESSION)
            assert answer.status_code == 200
            got.append(r.upstream.seen[-1].body)
        else:
            session = await session_of(r)
            await squashes.compress_range(client_env(r), *step, session_id=session.id)
    return got


async def _both(
    tmp_path: Path,
    messages: list[dict[str, Any]],
    before: Sequence[Step],
    after: Sequence[Step],
    nudges: int | None = None,
) -> tuple[list[bytes], list[bytes]]:
    """What the upstream received for the `after` steps from a gateway that ran throughout,
    and from one restarted (on the same database) between `before` and `after`."""
    (tmp_path / "throughout").mkdir()
    (tmp_path / "restarted").mkdir()
    async with rig(tmp_path / "throughout", nudges=nudges) as r:
        await _play(r, messages, before)
        kept = await _play(r, messages, after)
    async with rig(tmp_path / "restarted", nudges=nudges) as r:
        await _play(r, messages, before)
    async with rig(tmp_path / "restarted", nudges=nudges) as r:
        again = await _play(r, messages, after)
    return kept, again


class TestRestart:
    async def test_a_squash_sent_before_a_restart_is_sent_the_same_after_it(self, tmp_path):
        # The squash is first sent at "Thanks.": thinking after its span, up to there, is
        # left out from then on, and thinking of later turns is kept. A gateway that forgot
        # where it first sent it would leave the later thinking out too: other bytes.
        convo = [
            *test_thinking.TestWhereItCannotAsk.CONVO,
            said("Patched.", thinking="Done now."),
            user("Thanks."),
            said("You are welcome.", thinking="Polite."),
            user("Bye."),
        ]

        def answered(r: Rig) -> None:
            # "Polite." is the model's answer to the request the squash first went in: its
            # signature binds to what the model received then, as the API's would.
            received = r.upstream.seen[-1].json()
            block = binding.answer_thinking(received, binding.check(received, []), "Polite.")
            convo[9]["content"][0] = block

        before: list[Step] = [1, 3, 5, 7, (2, 3, "A race."), 9, answered]
        kept, again = await _both(tmp_path, convo, before, [11])
        assert b"A race." in kept[0]
        assert b"Polite." in kept[0]
        assert again == kept

    async def test_a_reminder_made_before_a_restart_is_repeated_after_it(self, tmp_path):
        # A second reminder comes after the restart, at the next threshold, not again at the
        # first (what it had answered is read back too).
        messages = long_session(24)
        requests = list(range(1, len(messages) + 1, 2))
        cut = 10
        kept, again = await _both(tmp_path, messages, requests[:cut], requests[cut:], 2_000)
        assert len(reminders(kept[0])) == 1, "the first reminder was made before the restart"
        assert len(reminders(kept[-1])) == 2
        assert again == kept

    async def test_each_forwarded_request_is_a_row_with_sent_and_forwarded(self, tmp_path):
        messages = [
            user("Look at the logs."),
            call("toolu_1", "cat log"),
            result("toolu_1", "entry ok " * 400),
            said("All fine."),
            user("Thanks."),
        ]
        async with rig(tmp_path) as r:
            await _play(r, messages, [1, 3, 4, (2, 3, "The log is fine."), 5])
            # A side call (no tools) is none of the conversation's: no row.
            await r.post({"model": "m", "max_tokens": 1, "messages": [user("quota")]}, SESSION)
            session = await session_of(r)
            async with r.gateway.recorder.env.store.snapshot() as reader:
                calls = await reader.gateway_calls(session.id, 10)
        seen = r.upstream.seen
        assert len(calls) == 4
        assert [c.wire for c in calls] == ["anthropic"] * 4
        assert [c.sent_bytes for c in calls] == [len(body(messages[:n])) for n in (1, 3, 4, 5)]
        assert [c.forwarded_bytes for c in calls] == [len(s.body) for s in seen[:4]]
        assert [c.applied for c in calls] == [(), (), (), (1,)]
        unchanged, squashed = calls[2], calls[3]
        assert unchanged.forwarded_tokens == unchanged.sent_tokens
        assert squashed.forwarded_tokens < squashed.sent_tokens - 500
        assert [n for n, _ in squashed.sent] == [1]
