"""The autopilot's plan, a pure function: what it takes (finished exchanges outside the working
set, all sent, none pinned or restored, none across a summary), when (past its threshold, and
only when the batch pays back within the stated calls), and what it writes (cards naming the
squash each run becomes)."""

from __future__ import annotations

from dataclasses import replace

from frs.autopilot import Autopilot, plan_batch
from frs.cards import HEADER, cards
from frs.economics import payback_calls
from frs.facts import exchanges
from frs.model import Message
from tests.frs.conftest import Thread

BIG = "".join(f"src/pkg/mod_{i}.py:3: def flush(): pass\n" for i in range(120))


def loop(exchanges: int, output: str = BIG) -> list[Message]:
    """A task, then `exchanges` finished calls with long results, each keyed as recorded."""
    thread = Thread().user("Find the race.")
    for i in range(exchanges):
        thread.assistant(f"Step {i}.", (f"c{i}", "Bash", {"command": f"grep -rn flush src/{i}"}))
        thread.tool(f"c{i}", output)
    return [replace(e, interface_message_id=f"k{e.number}") for e in thread.entries]


def keys(entries: list[Message]) -> set[str]:
    return {e.interface_message_id for e in entries if e.interface_message_id}


SETTINGS = Autopilot(keep=2, after=1_000, payback=4)
#: The same, paying back late: for what it takes, whatever the economics.
PATIENT = Autopilot(keep=2, after=1_000, payback=50)


class TestWhatItTakes:
    def test_every_finished_exchange_but_the_newest_in_one_run(self):
        entries = loop(10)
        batch = plan_batch(entries, keys(entries), 50_000, SETTINGS, next_squash=3)
        assert batch is not None
        (run,) = batch.runs
        assert (run.first, run.last) == (2, 17)  # positions 18..21: the newest 2 exchanges
        assert run.summary.startswith(HEADER)
        assert 'get_alias("SQ.3")' in run.summary.splitlines()[0]
        assert "grep -rn flush src/0" in run.summary
        assert "grep -rn flush src/8" not in run.summary

    def test_nothing_the_model_is_not_sent(self):
        entries = loop(10)
        sent = keys(entries) - {"k2", "k3", "k4", "k5"}  # before the host's compaction
        batch = plan_batch(entries, sent, 50_000, SETTINGS)
        assert batch is not None
        assert [(r.first, r.last) for r in batch.runs] == [(6, 17)]

    def test_a_pinned_exchange_or_a_restored_span_splits_the_runs(self):
        entries = loop(10)
        batch = plan_batch(entries, keys(entries), 50_000, PATIENT, pinned={"k7"}, restored={12})
        assert batch is not None
        assert [(r.first, r.last) for r in batch.runs] == [(2, 5), (8, 11), (14, 17)]

    def test_a_summary_the_model_made_stays_whole_and_splits_the_runs(self):
        thread = Thread().user("Find the race.")
        for i in range(4):
            thread.assistant("", (f"c{i}", "Bash", {"command": f"ls {i}"})).tool(f"c{i}", BIG)
        thread.summary("The model's own words.", 10, 10, squash=1)
        for i in range(4, 10):
            thread.assistant("", (f"c{i}", "Bash", {"command": f"ls {i}"})).tool(f"c{i}", BIG)
        entries = [replace(e, interface_message_id=f"k{e.ord}") for e in thread.entries]
        batch = plan_batch(entries, keys(entries), 50_000, SETTINGS)
        assert batch is not None
        summaries = [e for e in entries if e.kind == "summary"]
        for run in batch.runs:
            assert not any(run.first <= s.ord <= run.last for s in summaries)
        assert len(batch.runs) == 2

    def test_the_working_set_and_a_call_still_open_stay(self):
        entries = loop(6)
        thread_open = Thread()
        thread_open._next = (entries[-1].number or 0) + 1  # continue the numbering
        thread_open.assistant("", ("c9", "Bash", {"command": "sleep 9"}))
        entries += [replace(e, interface_message_id="k-open") for e in thread_open.entries]
        batch = plan_batch(entries, keys(entries), 50_000, PATIENT)
        assert batch is not None
        assert max(r.last for r in batch.runs) == 9  # c4, c5 and the open c9 stay

    def test_a_run_too_long_for_one_summary_goes_in_pieces_that_each_fit(self):
        entries = loop(60)
        batch = plan_batch(
            entries, keys(entries), 500_000, SETTINGS, next_squash=1, max_chars=2_000
        )
        assert batch is not None
        assert len(batch.runs) > 2
        assert all(len(run.summary) <= 2_000 for run in batch.runs)
        # One after the other, each named as the squash it becomes, covering the whole run.
        assert [r.first for r in batch.runs[1:]] == [r.last + 1 for r in batch.runs[:-1]]
        assert all(f'get_alias("SQ.{i}")' in r.summary for i, r in enumerate(batch.runs, 1))
        assert (batch.runs[0].first, batch.runs[-1].last) == (2, 117)
        # Each piece is the cards frs.cards writes for its exchanges.
        first = batch.runs[0]
        group = [x for x in exchanges(entries) if first.first <= x.call.ord <= first.last]
        assert first.summary == cards(group, "SQ.1")


class TestWhen:
    def test_not_before_the_threshold(self):
        entries = loop(10)
        assert plan_batch(entries, keys(entries), 999, SETTINGS) is None

    def test_only_when_it_pays_back_within_the_stated_calls(self):
        entries = loop(10)
        batch = plan_batch(entries, keys(entries), 50_000, SETTINGS)
        assert batch is not None
        assert batch.payback == payback_calls(batch.squashed, batch.summaries, batch.following)
        assert batch.payback <= SETTINGS.payback
        # A working set as large as what could go leaves a tail that takes too long to pay.
        big_tail = Autopilot(keep=6, after=1_000, payback=4)
        assert plan_batch(entries, keys(entries), 50_000, big_tail) is None

    def test_short_results_are_not_worth_a_card(self):
        entries = loop(10, output="ok")
        assert plan_batch(entries, keys(entries), 50_000, SETTINGS) is None
