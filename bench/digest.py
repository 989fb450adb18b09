"""Fact cards and the digest on the corpus: how small the cards are, and what a digest keeps.

`python -m bench.digest [--budget N]` prints, per transcript, the fact cards' size against the
exchanges they stand for (each exchange's card alone: median and worst ratio of estimated
tokens; and all of a transcript's exchanges as one batch with its header), and for the long
transcripts (more than twice the budget in estimated tokens) the digest's tokens and the share
of the session's facts it holds verbatim:

- paths: the distinct file paths (`frs.mentions.paths`) named in the user's or the assistant's
  text or in a tool call's arguments (its JSON and its strings unescaped); a path that only
  stands in tool output is not counted (nor in a user message that is a command's output, as
  SWE-agent's ReAct prompt sends it: `frs.facts.text_command`);
- commands: the first non-blank line, whitespace made single spaces, of each distinct `command`
  (or `cmd`) of a shell tool's call (a tool whose name says bash, shell, terminal or exec);
- open errors: the error lines (`frs.mentions.error_lines`; a traceback's first line, which
  names no error, aside) of each tool result that no later clean result (no error line, not
  failed) of the same call follows: the same shell command, or the same tool with the same
  arguments; for a failed edit, also any clean change of its file (as `frs.facts` reads them).

A fact is held when the digest's text, whitespace made single spaces, contains it. No model is
involved: every figure reproduces.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from bench.corpus import Transcript, load_corpus
from frs.cards import card, cards
from frs.digest import digest
from frs.facts import call_facts, exchange_facts, exchanges, text_command
from frs.mentions import error_lines, paths
from frs.model import Message
from frs.outcomes import outcome, result_text
from frs.text import estimate_tokens

BUDGET = 4_000  # issue 31's target: at this size, >= 0.9 of paths and commands, every open error
LONG = 2  # a transcript is long when it holds more than this many budgets of tokens
_SHELL = re.compile(r"bash|shell|terminal|exec", re.IGNORECASE)
_TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True, slots=True)
class Known:
    """The facts of a session a digest should hold, each as the text it must contain."""

    paths: frozenset[str]
    commands: frozenset[str]
    errors: frozenset[str]


@dataclass(frozen=True, slots=True)
class Held:
    """The share of each kind of fact a text holds (1.0 for a kind the session has none of)."""

    paths: float
    commands: float
    errors: float
    missing: tuple[str, ...]  # what it lacks, for a report


@dataclass(frozen=True, slots=True)
class CardSizes:
    """Cards against their exchanges: per exchange (median, worst) and as one batch."""

    exchanges: int
    median: float
    worst: float
    batch: float


def is_long(thread: Sequence[Message], budget: int = BUDGET) -> bool:
    return sum(m.tokens for m in thread) > LONG * budget


def long_transcripts(budget: int = BUDGET) -> list[Transcript]:
    return [t for t in load_corpus() if is_long(t.thread(), budget)]


def _observations(thread: Sequence[Message]) -> set[int | None]:
    """User messages that are a command's output: in SWE-agent's ReAct shape (a thread with
    no tool calls), the message after an assistant's text that ends with a command in a
    fenced block."""
    if any(message.tool_calls for message in thread):
        return set()
    return {
        after.number
        for before, after in pairwise(thread)
        if before.role == "assistant"
        and not before.tool_calls
        and after.role == "user"
        and text_command(before.content) is not None
    }


def _said(message: Message) -> Iterable[str]:
    yield message.content
    for call in message.tool_calls:
        yield call.arguments
        yield from _strings(call.arguments)


def _strings(arguments: str) -> list[str]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return []
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _command(name: str, arguments: str) -> str | None:
    if not _SHELL.search(name):
        return None
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    value = args.get("command", args.get("cmd")) if isinstance(args, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    first = next(line for line in value.splitlines() if line.strip())
    return " ".join(first.split())


def _whole_command(arguments: str) -> str:
    args = json.loads(arguments)
    return str(args.get("command", args.get("cmd")))


def known(thread: Sequence[Message]) -> Known:
    """The paths, commands and open error lines of a thread (see the module's docstring)."""
    outputs = _observations(thread)
    worked = paths(
        text
        for m in thread
        if m.role in ("user", "assistant") and m.number not in outputs
        for text in _said(m)
    )
    commands: set[str] = set()
    # A call by id (the latest made with it): what makes two runs the same (a shell command's
    # text, else the tool and its arguments), the files an edit tool changes, and the files
    # the call changes by any means (`frs.facts`), since a clean change of a file supersedes
    # a failed edit of it.
    calls: dict[str, tuple[tuple[str, str], frozenset[str], frozenset[str]]] = {}
    runs: list[tuple[tuple[str, str], frozenset[str], frozenset[str], list[str], bool]] = []
    for message in thread:
        for call in message.tool_calls:
            command = _command(call.name, call.arguments)
            if command:
                commands.add(command)
            same = ("$", _whole_command(call.arguments)) if command else (call.name, call.arguments)
            facts = call_facts(call, message.number or 0, None, seen=False)
            edits = frozenset(facts.changed) if facts.kind == "change" else frozenset()
            calls[call.id] = (same, edits, frozenset(facts.changed))
        if message.role == "tool" and message.tool_call_id in calls:
            same, edits, changed = calls[message.tool_call_id]
            lines = [
                line
                for line in error_lines(result_text(message.content), limit=1_000)
                if line != _TRACEBACK
            ]
            clean = not lines and not outcome(message.content).failed
            runs.append((same, edits, changed, lines, clean))
    errors: set[str] = set()
    for index, (same, edits, _, lines, _) in enumerate(runs):
        closed = any(
            clean and (other == same or (edits and edits <= changed))
            for other, _, changed, _, clean in runs[index + 1 :]
        )
        if not closed:
            errors.update(lines)
    return Known(frozenset(worked), frozenset(commands), frozenset(errors))


def held(facts: Known, text: str) -> Held:
    flat = " ".join(text.split())
    shares = []
    missing: list[str] = []
    for kind in (facts.paths, facts.commands, facts.errors):
        lacking = sorted(fact for fact in kind if " ".join(fact.split()) not in flat)
        missing.extend(lacking)
        shares.append(1 - len(lacking) / len(kind) if kind else 1.0)
    return Held(shares[0], shares[1], shares[2], tuple(missing))


def card_sizes(thread: Sequence[Message]) -> CardSizes | None:
    """Each exchange's card against the exchange (estimated tokens), and all as one batch."""
    found = exchanges(thread)
    if not found:
        return None
    ratios = []
    for exchange in found:
        facts = exchange_facts(exchange)
        ratios.append(estimate_tokens("\n".join(card(facts))) / facts.tokens)
    replaced = sum(exchange_facts(e).tokens for e in found)
    batch = estimate_tokens(cards(found, "SQ.1")) / replaced
    return CardSizes(len(found), statistics.median(ratios), max(ratios), batch)


def report(budget: int = BUDGET) -> list[str]:
    lines = [
        f"{'transcript':34} {'tokens':>7} {'cards':>5} {'median':>6} {'worst':>6} {'batch':>6}"
        f" {'digest':>6} {'paths':>9} {'commands':>9} {'errors':>9}"
    ]
    every: list[float] = []
    for transcript in load_corpus():
        thread = transcript.thread()
        total = sum(m.tokens for m in thread)
        sizes = card_sizes(thread)
        row = f"{transcript.name:34} {total:>7,}"
        if sizes is None:
            row += f" {0:>5} {'-':>6} {'-':>6} {'-':>6}"
        else:
            every.append(sizes.worst)
            row += (
                f" {sizes.exchanges:>5} {sizes.median:>6.2f} {sizes.worst:>6.2f}"
                f" {sizes.batch:>6.2f}"
            )
        if is_long(thread, budget):
            facts = known(thread)
            text = digest(thread, title=transcript.name, budget=budget)
            got = held(facts, text)
            row += (
                f" {estimate_tokens(text):>6,}"
                f" {_share(got.paths, len(facts.paths))}"
                f" {_share(got.commands, len(facts.commands))}"
                f" {_share(got.errors, len(facts.errors))}"
            )
        lines.append(row)
    lines.append(
        f"\ncards: ratio of a card's estimated tokens to its exchange's; batch: one summary of all"
        f" a transcript's exchanges. digest: at {budget:,} tokens, long transcripts only (more"
        f" than {LONG} × the budget); each share is of the facts the session has (their count)."
    )
    return lines


def _share(value: float, count: int) -> str:
    return f"{value:>4.2f} ({count:>2})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.digest", description=__doc__)
    parser.add_argument("--budget", type=int, default=BUDGET, help="the digest's budget")
    args = parser.parse_args(argv)
    print("\n".join(report(args.budget)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
