"""The session-cost benchmark's arithmetic (bench/session.py, bench/fidelity.py): what the
README's headline figures rest on."""

from __future__ import annotations

import json

from bench.corpus import Call, Line
from bench.fidelity import facts_of, fidelity
from bench.session import MASK_AFTER, READ, WRITE, Counter, Tally, masked_prompt
from bench.tokenizer import estimator


def line(role: str, content: str, *calls: Call, call_id: str | None = None) -> Line:
    return Line(role, content, calls, call_id, None, None, "bash" if role == "tool" else None)


def words(text: str) -> list[int]:
    """A stand-in encoder: one token per word, its id the word's character codes summed."""
    return [sum(map(ord, word)) for word in text.split(" ")]


class TestCost:
    def test_a_call_pays_writes_for_what_changed_and_reads_for_the_cached_prefix(self) -> None:
        counter = Counter(estimator(), words)
        tally = Tally()
        tally.add(counter, ["a b c", "d e"])  # 5 tokens, nothing cached yet
        tally.add(counter, ["a b c", "d x", "f"])  # "a b c" and "d" cached: 4 of 6
        assert (tally.tokens, tally.cached) == (11, 4)
        assert tally.cost == 5 * WRITE + 4 * READ + 2 * WRITE


class TestMasking:
    def test_tool_results_older_than_the_last_five_become_placeholders(self) -> None:
        lines = [line("tool", f"output {i}\nsecond line", call_id=f"c{i}") for i in range(8)]
        prompt = masked_prompt(lines)
        masked = [json.loads(segment)["content"] for segment in prompt]
        assert masked[: 8 - MASK_AFTER] == ["[older tool output omitted: 2 lines]"] * 3
        assert masked[-MASK_AFTER:] == [f"output {i}\nsecond line" for i in range(3, 8)]


class TestFidelity:
    def test_paths_commands_and_error_lines_are_counted_once_and_found_in_a_view(self) -> None:
        call = Call("c1", "bash", json.dumps({"command": "pytest -x tests/test_a.py"}))
        lines = [
            line("user", "Fix src/app/models.py and see https://example.com/a/b.html"),
            line("assistant", "Running.", call),
            line("tool", "E   ValueError: bad\nok\nsrc/app/models.py:3", call_id="c1"),
        ]
        found = facts_of(lines)
        assert found.paths == {"src/app/models.py", "tests/test_a.py"}
        assert found.commands == {"pytest -x tests/test_a.py"}
        assert found.errors == {"E ValueError: bad"}
        view = "[1] User: Fix src/app/models.py\n[2] Assistant: [tool_use:bash, command:pytest]"
        shown = fidelity(found, view)
        assert (shown.paths, shown.commands, shown.errors) == (0.5, 0.0, 0.0)
        assert shown.overall == 0.25
