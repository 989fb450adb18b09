"""The autopilot's plan, a pure function: what it takes (finished exchanges outside the working
set, all sent, none pinned or restored, none across a summary), when (past its threshold, and
only when the batch pays back within the stated calls), and what it writes (cards naming the
squash each run becomes)."""

from __future__ import annotations

from dataclasses import replace

from frs.autopilot import ROLLED, SEEN, TIER, Autopilot, Run, plan_batch
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


class TestABacklog:
    def test_a_backlog_longer_than_one_call_may_squash_goes_oldest_first(self):
        # Each card alone fills a summary: one squash per exchange, 60 of them waiting.
        entries = loop(62)
        settings = Autopilot(keep=2, after=1_000, payback=50, seen=100)
        batch = plan_batch(entries, keys(entries), 500_000, settings, max_chars=600, max_ranges=25)
        assert batch is not None
        assert len(batch.runs) == 25  # a call's limit (`Limits.max_plan_steps`), not none
        assert batch.runs[0].first == 2
        assert [r.first for r in batch.runs[1:]] == [r.last + 1 for r in batch.runs[:-1]]
        assert batch.squashed == sum(r.tokens for r in batch.runs)


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


def carded(cards_: list[tuple[int, int, int, str]], tail: int) -> list[Message]:
    """A task, automatic summaries (squash n over first..last, each with its text), then
    `tail` finished exchanges, all sent."""
    thread = Thread().user("Find the race.")
    for n, first, last, text in cards_:
        thread.summary(text, first, last, squash=n)
    start = max(last for _, _, last, _ in cards_) + 1
    thread._next = start
    for i in range(tail):
        thread.assistant("", (f"t{i}", "Bash", {"command": f"ls {i}"})).tool(f"t{i}", BIG)
    return [replace(e, interface_message_id=f"k{e.ord}") for e in thread.entries]


CARD = f"{HEADER} of 4 tool exchanges: " + "M.2 Bash `ls src` → ok, 4 lines · src/a.py\n" * 40
ROLLED_UP = f"{ROLLED}: " + "digest line · src/a.py\n" * 40


class TestRollUps:
    """Cards roll up into a digest once they pass `rollup` tokens; a digest is rolled up again
    only once the digests pass `TIER` times that, so the stretch before the newest cards stays
    as it was sent, and a prompt cache keeps it (`frs.wire.anchors`)."""

    SETTINGS = Autopilot(keep=2, after=1_000, payback=50, rollup=1_000)

    def test_the_cards_roll_up_and_the_digests_before_them_stay(self):
        entries = carded(
            [(1, 2, 9, ROLLED_UP), (2, 10, 17, CARD), (3, 18, 25, CARD), (4, 26, 33, CARD)], 3
        )
        batch = plan_batch(entries, keys(entries), 50_000, self.SETTINGS, automatic={1, 2, 3, 4})
        assert batch is not None
        rolled = [r for r in batch.runs if r.summary.startswith(ROLLED)]
        assert [(r.first, r.last) for r in rolled] == [(10, 25)]  # cards 2 and 3, not 1 or 4

    def test_digests_roll_up_together_only_past_the_tier(self):
        def digests(count: int) -> list[Message]:
            made = [(n, 2 + 8 * i, 9 + 8 * i, ROLLED_UP) for i, n in enumerate(range(1, count + 1))]
            return carded(made, 3)

        def rolled(entries: list[Message]) -> list[Run]:
            automatic = {e.squash_n for e in entries if e.squash_n is not None}
            batch = plan_batch(entries, keys(entries), 50_000, self.SETTINGS, automatic=automatic)
            return [r for r in batch.runs if r.summary.startswith(ROLLED)] if batch else []

        def size(entries: list[Message]) -> int:
            return sum(e.tokens for e in entries if e.kind == "summary")

        few = next(digests(k) for k in range(2, 50) if size(digests(k)) >= 1_000)
        assert size(few) < TIER * 1_000  # past `rollup`, where cards would roll up
        assert rolled(few) == []
        many = next(digests(k) for k in range(2, 200) if size(digests(k)) >= TIER * 1_000)
        (run,) = rolled(many)
        newest = max(e.ord for e in many if e.kind == "summary")
        assert (run.first, run.last) == (2, newest - 1)  # all but the newest digest

    def test_cards_that_cannot_roll_up_leave_the_digests_their_turn(self):
        # Digests past the tier, then cards past `rollup` but each alone between exchanges.
        thread = Thread().user("Find the race.")
        n = 0
        digests = 0
        while digests < TIER * 1_000:
            n += 1
            thread.summary(ROLLED_UP, 2 + 8 * (n - 1), 9 + 8 * (n - 1), squash=n)
            digests += thread.entries[-1].tokens
        thread._next = 2 + 8 * n
        for i in range(4):
            n += 1
            thread.summary(CARD, thread._next, thread._next + 1, squash=n)
            thread.assistant("", (f"u{i}", "Bash", {"command": "true"})).tool(f"u{i}", "ok")
        for i in range(3):
            thread.assistant("", (f"t{i}", "Bash", {"command": f"ls {i}"})).tool(f"t{i}", BIG)
        entries = [replace(e, interface_message_id=f"k{e.ord}") for e in thread.entries]
        cards = [e for e in entries if e.content.startswith(HEADER) and e.kind == "summary"]
        assert sum(e.tokens for e in cards if not e.content.startswith(ROLLED)) >= 1_000
        automatic = {e.squash_n for e in entries if e.squash_n is not None}
        batch = plan_batch(entries, keys(entries), 50_000, self.SETTINGS, automatic=automatic)
        assert batch is not None
        (rolled,) = [r for r in batch.runs if r.summary.startswith(ROLLED)]
        assert rolled.first == 2  # the digests, which the lone cards did not block


class TestHorizon:
    def test_a_batch_must_pay_back_within_a_share_of_the_calls_made(self):
        entries = loop(10)
        batch = plan_batch(entries, keys(entries), 50_000, PATIENT)
        assert batch is not None
        calls = batch.payback
        # A session that has made few calls may end soon: the batch waits for more of them.
        enough = int(calls / SEEN) + 1
        assert plan_batch(entries, keys(entries), 50_000, PATIENT, made=enough) is not None
        assert (
            plan_batch(entries, keys(entries), 50_000, PATIENT, made=int(calls / SEEN) - 1) is None
        )
