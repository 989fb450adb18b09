"""The digest: its sections and their exact text, which errors stay open, what a short budget
keeps first, summaries read back, and on the corpus's long transcripts at 4,000 tokens at least
0.9 of the paths and commands the session worked on and every open error line, verbatim."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.corpus import load_corpus
from bench.digest import BUDGET, Held, Known, held, known, long_transcripts
from frs.cards import cards
from frs.digest import DEFAULT_BUDGET, digest
from frs.facts import Exchange, exchanges
from frs.model import Message, PlanStep
from frs.text import estimate_tokens
from tests.frs.conftest import Thread, random_exchanges

HEADER = 'each item names an alias, and get_alias("M.n") returns message n whole.'


def parser_session() -> Thread:
    """A short coding session: a failed test, a read, an edit, a pass and a lint error."""
    thread = Thread()
    thread.user("Fix the failing parser test in src/parse.py.")
    thread.assistant("I'll run the tests first.", ("a", "Bash", {"command": "pytest -q"}))
    thread.tool("a", "Exit code 1\nFAILED tests/test_parse.py::test_empty - ValueError: empty")
    thread.thinking("maybe notes/secret.txt explains it")
    thread.assistant("", ("b", "Read", {"file_path": "/r/src/parse.py"}))
    thread.tool("b", "     1→def parse(s):\n     2→    raise ValueError('empty')\n")
    thread.assistant(
        "The parser rejects empty input; I'll return an empty list instead.",
        ("c", "Edit", {"file_path": "/r/src/parse.py", "old_string": "r", "new_string": "n"}),
    )
    thread.tool("c", "The file /r/src/parse.py has been updated.")
    thread.assistant(
        "",
        ("d", "Bash", {"command": "pytest -q", "description": "Run the tests again"}),
        ("e", "Bash", {"command": "ruff check src"}),
    )
    thread.tool("d", "5 passed in 0.1s")
    thread.tool("e", "Exit code 1\nsrc/parse.py:1:1: F401 `os` imported but unused\nFound 1 error.")
    thread.assistant(
        "",
        (
            "f",
            "TodoWrite",
            {
                "todos": [
                    {"content": "Fix parser", "status": "completed"},
                    {"content": "Fix lint", "status": "in_progress"},
                ]
            },
        ),
    )
    thread.tool("f", "ok")
    thread.assistant("The tests pass now; one lint error is left in src/parse.py.")
    return thread


class TestTheSections:
    def test_a_short_session_whole(self) -> None:
        assert digest(parser_session().entries, title="parser").split("\n") == [
            f'Digest of "parser" (13 messages, M.1–M.13); {HEADER}',
            "Task (M.1): Fix the failing parser test in src/parse.py.",
            "Plan: ✓ Fix parser · ▶ Fix lint",
            "Open errors (no clean rerun since):",
            "M.10 exit 1: ruff check src → Found 1 error.",
            "Files changed (and those the commands below write):",
            "/r/src/parse.py · M.6",
            "Commands (first line; outcome unless ok; last result):",
            "M.9 ×2: pytest -q",
            "Decisions and findings:",
            "M.2: I'll run the tests first.",
            "M.6: The parser rejects empty input; I'll return an empty list instead.",
            "M.13: The tests pass now; one lint error is left in src/parse.py.",
        ]

    def test_a_goal_and_the_sessions_plan_come_first(self) -> None:
        text = digest(
            parser_session().entries, goal="Make CI green", plan=(PlanStep("Ship", "doing"),)
        )
        assert text.split("\n")[1:4] == [
            "Goal: Make CI green",
            "Task (M.1): Fix the failing parser test in src/parse.py.",
            "Plan: ▶ Ship",
        ]

    def test_thinking_is_not_read(self) -> None:
        assert "notes/secret.txt" not in digest(parser_session().entries)

    def test_the_same_entries_give_the_same_bytes(self) -> None:
        entries = parser_session().entries
        assert digest(entries, budget=200) == digest(list(entries), budget=200)

    def test_a_long_task_keeps_its_head_and_tail(self) -> None:
        thread = Thread().user("Begin. " + "filler " * 400 + "End with tests.")
        thread.assistant("ok")
        task = digest(thread.entries, budget=3_000).split("\n")[1]
        assert task.startswith("Task (M.1): Begin. filler")
        assert task.endswith("End with tests.")
        assert "…" in task
        assert len(task) <= 12 + 3_000 // 7

    def test_the_request_answered_first_is_the_task_and_the_others_are_listed(self) -> None:
        thread = Thread().user("Here is a demonstration of the interface.")
        thread.user("Fix pkg/handler.py.").assistant("On it.").user("Also add a test.")
        lines = digest(thread.entries).split("\n")
        assert lines[1:4] == [
            "Task (M.2): Fix pkg/handler.py.",
            "Asked (M.1): Here is a demonstration of the interface.",
            "Asked (M.4): Also add a test.",
        ]


class TestOpenErrors:
    @staticmethod
    def errors(thread: Thread) -> list[str]:
        lines = digest(thread.entries).split("\n")
        if "Open errors (no clean rerun since):" not in lines:
            return []
        start = lines.index("Open errors (no clean rerun since):") + 1
        end = next(
            i for i in range(start, len(lines) + 1) if i == len(lines) or lines[i][:2] != "M."
        )
        return lines[start:end]

    def test_a_clean_rerun_of_the_same_command_closes_it(self) -> None:
        thread = Thread().user("go")
        thread.assistant("", ("a", "Bash", {"command": "make", "description": "build"}))
        thread.tool("a", "Exit code 2\nmake: *** [all] Error 2")
        thread.assistant("", ("b", "Bash", {"command": "make", "description": "again"}))
        thread.tool("b", "done")
        assert self.errors(thread) == []

    def test_another_command_succeeding_leaves_it_open(self) -> None:
        thread = Thread().user("go")
        thread.assistant("", ("a", "bash", {"command": "make"}))
        thread.tool("a", "Exit code 2\nmake: *** [all] Error 2")
        thread.assistant("", ("b", "bash", {"command": "make clean"}))
        thread.tool("b", "done")
        assert self.errors(thread) == ["M.3 exit 2: make → make: *** [all] Error 2"]

    def test_each_failed_run_since_the_last_clean_one_counts_newest_first(self) -> None:
        thread = Thread().user("go")
        for call_id, error in (("a", "Error: no cache"), ("b", "Error: no llvm")):
            thread.assistant("", (call_id, "execute_bash", {"command": "make"}))
            thread.tool(call_id, f"{error}\n[The command completed with exit code 2.]")
        assert self.errors(thread) == ["M.5 exit 2 ×2: make → Error: no llvm | Error: no cache"]

    def test_an_error_under_a_zero_status_is_open_and_says_so(self) -> None:
        thread = Thread().user("go")
        thread.assistant("", ("a", "bash", {"command": "python t.py | tail -3"}))
        thread.tool(
            "a",
            "<returncode>0</returncode>\n<output>\nTraceback (most recent call last):"
            "\nKeyError: 'rows'\n</output>",
        )
        assert self.errors(thread) == ["M.3 exit 0: python t.py | tail -3 → KeyError: 'rows'"]

    def test_source_a_grep_quotes_is_no_error(self) -> None:
        thread = Thread().user("go")
        thread.assistant("", ("a", "bash", {"command": "grep -n raise src/a.py"}))
        thread.tool(
            "a", "<returncode>0</returncode>\n<output>\n12:    raise ValueError(x)\n</output>"
        )
        assert self.errors(thread) == []

    def test_a_clean_change_of_the_file_closes_a_failed_edit_of_it(self) -> None:
        edit = {"command": "str_replace", "path": "/w/a.c", "old_str": "x", "new_str": "y"}
        thread = Thread().user("go")
        thread.assistant("", ("a", "str_replace_editor", edit))
        thread.tool("a", "ERROR:\nNo replacement was performed, old_str `x` did not appear.")
        assert self.errors(thread) == [
            "M.3 error: str_replace_editor /w/a.c → ERROR: No replacement was performed,"
            " old_str `x` did not appear."
        ]
        thread.assistant("", ("b", "execute_bash", {"command": "sed -i 's/x/y/' /w/a.c"}))
        thread.tool("b", "[The command completed with exit code 0.]")
        assert self.errors(thread) == []

    def test_another_tools_call_is_the_same_only_with_the_same_arguments(self) -> None:
        thread = Thread().user("go")
        thread.assistant("", ("a", "book", {"user": "u1", "paid": 957}))
        thread.tool("a", "Error: payment does not add up")
        thread.assistant("", ("b", "book", {"user": "u1", "paid": 1002}))
        thread.tool("b", "booked")
        assert self.errors(thread) == ["M.3 error: book user:u1 → Error: payment does not add up"]


class TestAShortBudget:
    @staticmethod
    def session() -> Thread:
        """Thirty old reads, then a failed build and the edit of the file it names."""
        thread = Thread().user("Make the build pass.")
        for index in range(30):
            thread.assistant("", (f"r{index}", "Read", {"file_path": f"/r/src/m{index:02}.py"}))
            thread.tool(f"r{index}", "x = 1\n" * 50)
        thread.assistant("", ("b", "Bash", {"command": "make build"}))
        thread.tool("b", "Exit code 2\nsrc/m03.py:1: error: bad thing")
        thread.assistant("", ("e", "Edit", {"file_path": "/r/src/m03.py", "old_string": "a"}))
        thread.tool("e", "updated")
        return thread

    def test_the_task_open_errors_and_changed_files_stay_and_old_reads_go_first(self) -> None:
        lines = digest(self.session().entries, budget=200).split("\n")
        assert lines[1:7] == [
            "Task (M.1): Make the build pass.",
            "Open errors (no clean rerun since):",
            "M.63 exit 2: make build → src/m03.py:1: error: bad thing",
            "Files changed (and those the commands below write):",
            "/r/src/m03.py · M.64",
            "Files read:",
        ]
        read = [line for line in lines if line.startswith("/r/src/") and "m03" not in line]
        assert read == [f"/r/src/m{index}.py · M.{2 * index + 3}" for index in range(25, 30)]
        assert lines[-1] == (
            "Left out for room: 24 files read; get_alias returns each from its original."
        )

    def test_the_line_naming_what_was_left_out_names_their_aliases_when_it_can(self) -> None:
        last = digest(self.session().entries, budget=300).split("\n")[-1]
        assert last == (
            "Left out for room: 17 files read; get_alias returns each from its original:"
            " M.3, M.5 +15 more"
        )

    def test_too_small_for_its_first_line_is_empty(self) -> None:
        assert digest(self.session().entries, budget=10) == ""

    @given(budget=st.integers(min_value=0, max_value=6_000))
    @settings(max_examples=40, deadline=None)
    def test_never_over_the_budget(self, budget: int) -> None:
        text = digest(corpus_thread("09_claudecode_python_to_rust"), budget=budget)
        assert estimate_tokens(text) <= budget

    @given(found=random_exchanges(), budget=st.integers(min_value=0, max_value=600))
    @settings(max_examples=60, deadline=None)
    def test_any_thread_within_any_budget(self, found: list[Exchange], budget: int) -> None:
        entries = [message for exchange in found for message in (exchange.call, *exchange.results)]
        text = digest(entries, budget=budget)
        assert estimate_tokens(text) <= budget
        assert digest(entries, budget=budget) == text

    @pytest.mark.parametrize("budget", [100, 500, 1_000, DEFAULT_BUDGET, BUDGET, 8_000])
    def test_never_over_the_budget_on_the_longest_transcript(self, budget: int) -> None:
        text = digest(corpus_thread("12_minisweagent_sqlfluff_long"), budget=budget)
        assert estimate_tokens(text) <= budget
        assert text.startswith("Digest of this thread")


class TestSummaries:
    def test_fact_cards_are_read_back(self) -> None:
        session = parser_session()
        thread = Thread().user("go")
        thread.summary(cards(exchanges(session.entries), "SQ.1"), 2, 14, squash=1)
        thread.assistant("Done.")
        assert digest(thread.entries).split("\n") == [
            f"Digest of this thread (15 messages, M.1–M.16); {HEADER}",
            "Task (M.1): go",
            "Open errors (no clean rerun since):",
            "M.10 exit 1: ruff check src → Exit code 1 src/parse.py:1:1: F401 `os` imported but"
            " unused Found 1 error.",
            "Files changed (and those the commands below write):",
            "/r/src/parse.py · M.6",
            "Files named:",
            "tests/test_parse.py · SQ.1",
            "Commands (first line; outcome unless ok; last result):",
            "M.9 ×2: pytest -q",
            "Other calls (outcome unless ok; last result):",
            "M.12: TodoWrite 2 todos (1 done): ▶ Fix lint",
            'Squashes (get_alias("SQ.n") returns what one replaced): SQ.1 (M.2–M.14)',
        ]

    def test_a_summary_the_model_wrote_gives_its_paths_and_its_last_statement(self) -> None:
        thread = Thread().user("go")
        thread.summary("Read src/a.py and src/b.py. The bug is in the cache key.", 2, 9, 4)
        text = digest(thread.entries)
        assert "src/a.py · SQ.4" in text
        assert "SQ.4: The bug is in the cache key." in text
        assert text.endswith("SQ.4 (M.2–M.9)")


class TestSweAgentsReActShape:
    def test_commands_in_text_and_their_outputs(self) -> None:
        thread = Thread().user("Fix the bug in pkg/handler.py.")
        thread.assistant("I'll look at the handler.\n\n```\nopen pkg/handler.py\n```")
        thread.user("[File: /repo/pkg/handler.py (40 lines total)]\n1:import os")
        thread.assistant(
            "The check is too strict; I'll relax it.\n```\nedit 12:12\n  ok\nend_of_edit\n```"
        )
        thread.user("[File: /repo/pkg/handler.py (40 lines total)]\n12:  ok")
        thread.assistant("Now run it.\n\n```\npython reproduce.py\n```")
        thread.user("Traceback (most recent call last):\n  File 'r.py', line 3\nKeyError: 'rows'")
        thread.assistant("```\nls tests/\n```")
        thread.user("test_handler.py")
        assert digest(thread.entries).split("\n")[1:] == [
            "Task (M.1): Fix the bug in pkg/handler.py.",
            "Open errors (no clean rerun since):",
            "M.7 error: python reproduce.py → KeyError: 'rows'",
            "Files changed (and those the commands below write):",
            "/repo/pkg/handler.py · M.4",
            "Commands (first line; outcome unless ok; last result):",
            "M.9: ls tests/",
            "Decisions and findings:",
            "M.2: I'll look at the handler.",
            "M.4: The check is too strict; I'll relax it.",
        ]

    def test_only_a_thread_without_tool_calls_is_read_so(self) -> None:
        thread = Thread().user("Show me how to list files.")
        thread.assistant("", ("a", "bash", {"command": "ls"})).tool("a", "x.py")
        thread.assistant("Run this:\n```\nls -la\n```").user("Thanks. Now fix x.py.")
        text = digest(thread.entries)
        assert "Asked (M.5): Thanks. Now fix x.py." in text
        assert "ls -la" not in text

    def test_a_fenced_example_in_another_language_is_no_command(self) -> None:
        thread = Thread().user("How do I parse it?")
        thread.assistant("Like this:\n```python\nparse(x)\n```").user("And then?")
        assert "Asked (M.3): And then?" in digest(thread.entries)


@cache
def corpus_thread(name: str) -> tuple[Message, ...]:
    return tuple(next(t for t in load_corpus() if t.name == name).thread())


@cache
def measured() -> tuple[tuple[str, int, Known, Held], ...]:
    """Each long transcript's digest at 4,000 tokens: its tokens, the facts, what it holds."""
    rows = []
    for transcript in long_transcripts():
        thread = transcript.thread()
        text = digest(thread, title=transcript.name, budget=BUDGET)
        facts = known(thread)
        rows.append((transcript.name, estimate_tokens(text), facts, held(facts, text)))
    return tuple(rows)


class TestOnTheLongTranscripts:
    """Issue 31's target for the digest alone at 4,000 tokens; bench/digest.py prints the
    figures (measured: paths 1.00 everywhere, commands 0.91 on the longest and 1.00 on the
    others, every open error line)."""

    def test_they_are_the_six_coding_sessions(self) -> None:
        assert [name[:2] for name, *_ in measured()] == ["06", "07", "08", "09", "11", "12"]

    def test_each_digest_is_within_the_budget(self) -> None:
        for name, tokens, _, _ in measured():
            assert tokens <= BUDGET, name

    def test_nine_in_ten_paths_and_commands_and_every_open_error_are_there(self) -> None:
        for name, _, _, got in measured():
            assert got.paths >= 0.9, (name, got.missing)
            assert got.commands >= 0.9, (name, got.missing)
            assert got.errors == 1.0, (name, got.missing)

    def test_the_facts_measured_are_many(self) -> None:
        # A detector that found nothing would pass the shares above vacuously.
        facts = [facts for _, _, facts, _ in measured()]
        assert sum(len(f.paths) for f in facts) >= 50  # 57
        assert sum(len(f.commands) for f in facts) >= 250  # 260
        assert sum(len(f.errors) for f in facts) >= 25  # 28

    def test_what_is_left_out_is_named_with_its_aliases(self) -> None:
        text = digest(corpus_thread("12_minisweagent_sqlfluff_long"), budget=BUDGET)
        last = text.split("\n")[-1]
        assert last.startswith("Left out for room: ")
        assert "get_alias returns each from its original: M." in last
