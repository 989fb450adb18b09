"""The digest: a thread's working state in a token budget, for a model that lost its context
(a host's compaction) to carry on from.

It says what the task and the plan are, which files were changed, read or named, each distinct
command with its last outcome, the errors still open (an error not followed by a clean run of
the same command, or for a failed edit by a clean change of its file), and the model's
decisions, each with the alias that returns its original
(`get_alias("M.n")`, a squash's `SQ.n`). Facts come from the calls and results themselves
(`frs.facts`) and from summaries that are fact cards (`frs.cards`). When the budget is short,
the least important items go first (older reads, successful commands and decisions before
changed files, open errors and the task), and a line says how many went and where they are.

Never over the budget by `frs.text.estimate_tokens`; deterministic: the same entries and
options give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from frs.cards import HEADER, read_card_line
from frs.facts import (
    SEARCH_KEYS,
    CallFacts,
    call_facts,
    redirect_targets,
    results_by_call,
    text_call,
)
from frs.mentions import paths
from frs.model import Message, PlanStep, ToolCall
from frs.text import TOKEN_UNIT, estimate_tokens, shorten, token_units
from frs.views.render import plan_line

DEFAULT_BUDGET = 3_000
_TASK_CHARS = 1_200  # the task's text at most; less under a small budget (`_task`)
_REQUEST_CHARS = 240  # another request
_REQUESTS_SHOWN = 3  # requests after the task shown with it; older ones rank lower
_COMMAND_CHARS = 300  # of a command's first line
_OTHER_CHARS = 80  # of another tool's call, where an open error names it
_DECISION_CHARS = 200
_DECISION_WORDS = 4
_PRIORITY_DECISIONS = 3  # the newest decisions rank with failed commands; the rest rank last
_ROUNDS = 8  # of choosing again with what measuring the text freed (each round frees less)
_LEFT_OUT_SHARE = 64  # this part of the budget is kept for the line naming what was left out
_LEFT_OUT_TOKENS = 64
_LEFT_OUT_LEAST = 24  # what `Left out for room: 12 commands, 3 files read; …` needs
# A traceback's first line names no error (its last line does): shown only when alone.
_TRACEBACK = "Traceback (most recent call last):"
# Sentences that only announce the next step say nothing a later reader needs.
_NARRATION = re.compile(
    r"^(?:now,? |next,? |first,? |then,? |ok(?:ay)?,? |great[,!] )?"
    r"(?:let me|let's|let us|i'll now)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)

# How important an item is: lower tiers are kept first, and inside a tier the newest.
_MUST, _HIGH, _MIDDLE, _LOW = 1, 2, 3, 4
# Sections in the order they are shown, with their headings.
_SECTIONS = (
    ("asked", ""),
    ("plan", ""),
    ("errors", "Open errors (no clean rerun since):"),
    ("changed", "Files changed (and those the commands below write):"),
    ("read", "Files read:"),
    ("named", "Files named:"),
    ("commands", "Commands (first line; outcome unless ok; last result):"),
    ("calls", "Other calls (outcome unless ok; last result):"),
    ("decisions", "Decisions and findings:"),
)
#: The headings a digest's sections start with: where a digest cut in parts may be cut.
HEADINGS = tuple(heading for _, heading in _SECTIONS if heading)
_NOUNS = {  # what a section's items are, one and many
    "plan": ("plan", "plans"),
    "asked": ("request", "requests"),
    "errors": ("open error", "open errors"),
    "changed": ("file changed", "files changed"),
    "read": ("file read", "files read"),
    "named": ("file named", "files named"),
    "commands": ("command", "commands"),
    "calls": ("other call", "other calls"),
    "decisions": ("decision", "decisions"),
}


@dataclass(slots=True)
class _Item:
    """One line a digest may hold: its section, how important it is (tier, then the newest
    first), its place in its section, the alias it names, and the command line that makes it
    redundant when shown (a file a command wrote)."""

    section: str
    tier: int
    recency: int
    order: int
    text: str
    alias: str
    covered_by: tuple[str, ...] = ()  # lines or paths that, shown, make this item redundant
    shows: str = ""  # the command line or path this item shows


@dataclass(slots=True)
class _Command:
    """A command's last run, and how many runs it had."""

    facts: CallFacts
    runs: int = 1


@dataclass(slots=True)
class _State:
    """What a walk over the thread found, each kind keyed so that a later sighting moves it to
    the end (the newest last)."""

    requests: list[Message] = field(default_factory=list)
    task: int = 0  # the index in `requests` of the task
    replied: bool = False  # an assistant message has been seen
    plan: tuple[PlanStep, ...] = ()
    commands: dict[str, _Command] = field(default_factory=dict)
    calls: dict[str, CallFacts] = field(default_factory=dict)
    changed: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # n, times, writer
    read: dict[str, tuple[int, str]] = field(default_factory=dict)  # n, the command line
    named: dict[str, str] = field(default_factory=dict)  # path -> alias
    errors: dict[str, list[CallFacts]] = field(default_factory=dict)  # failed since clean
    decisions: dict[str, str] = field(default_factory=dict)  # text -> alias
    squashes: list[Message] = field(default_factory=list)
    first: int | None = None
    last: int | None = None
    recorded: int = 0


def digest(
    entries: Sequence[Message],
    *,
    title: str = "",
    goal: str = "",
    plan: Sequence[PlanStep] = (),
    budget: int = DEFAULT_BUDGET,
) -> str:
    """A digest of `entries` (a thread's entries in order: messages and summaries; thinking
    is ignored) in at most `budget` estimated tokens. `plan`, when given, is the session's
    plan, else the last todo list a call wrote. "" when not even its first line fits."""
    state = _walk(entries)
    head = [_header(title, state)]
    if goal.strip():
        head.append("Goal: " + _flat(goal))
    if state.requests:
        head.append(_task(state.requests[state.task], budget))
    tail = [_originals(state)] if state.squashes else []
    return _fit(head, tail, _items(state, tuple(plan) or state.plan), budget)


def _walk(entries: Sequence[Message]) -> _State:
    state = _State()
    results = results_by_call(entries)
    numbered = [m for m in entries if m.kind != "thinking" and m.number is not None]
    answered = _text_answers(numbered)
    observations = {reply.number for reply in answered.values()}
    for message in numbered:
        number = message.number or 0
        state.first = message.ord if state.first is None else state.first
        state.last = message.ord_last
        state.recorded += message.covered
        if message.kind == "summary":
            _summary(state, message)
        elif message.role == "user" and number not in observations:
            if not state.replied:  # the last request before the first answer is the task
                state.task = len(state.requests)
            state.requests.append(message)
            _name(state, [message.content], f"M.{number}")
        elif message.role == "assistant":
            state.replied = True
            _assistant(state, message, results, answered)
    return state


def _text_answers(numbered: Sequence[Message]) -> dict[int, Message]:
    """Assistant messages that end with a command in their text (SWE-agent's ReAct shape),
    by number, each with the user message after it that answers (the command's output). Only
    in a thread that makes no tool calls: elsewhere a fenced block is an answer's example, and
    the next user message a request."""
    found: dict[int, Message] = {}
    if any(message.tool_calls for message in numbered):
        return found
    for message, after in pairwise(numbered):
        if (
            message.role == "assistant"
            and not message.tool_calls
            and after.role == "user"
            and after.kind == "message"
            and text_call(message.content) is not None
        ):
            found[message.number or 0] = after
    return found


def _assistant(
    state: _State,
    message: Message,
    results: dict[tuple[int, str], Message],
    answered: dict[int, Message],
) -> None:
    number = message.number or 0
    _decide(state, _decision(message.content), f"M.{number}")
    _name(state, [message.content], f"M.{number}")
    calls: list[tuple[ToolCall, Message | None]] = [
        (call, results.get((number, call.id))) for call in message.tool_calls
    ]
    typed = text_call(message.content) if not calls and number in answered else None
    if typed is not None:
        calls = [(typed, answered[number])]
    for call, result in calls:
        facts = call_facts(call, number, result, seen=False)  # output paths: not the session's
        _call(state, facts, _key(facts, call.arguments))


def _call(state: _State, facts: CallFacts, key: str) -> None:
    """What one call adds: files, the plan, a note, the command or call, an open error."""
    written = set(redirect_targets(facts.command)) if facts.command is not None else set()
    writer = _first_line(facts.command or "", _COMMAND_CHARS)  # the line that names its files
    for path in facts.changed:
        _, times, _ = state.changed.pop(path, (0, 0, ""))
        wrote = path in written and path in writer
        state.changed[path] = (facts.number, times + 1, writer if wrote else "")
        state.read.pop(path, None)
        state.named.pop(path, None)
    for path in facts.read:
        if path not in state.changed:
            state.read.pop(path, None)
            n = facts.result if facts.result is not None else facts.number
            state.read[path] = (n, writer if path in writer else "")
            state.named.pop(path, None)
    _name(state, list(facts.named), f"M.{facts.number}")
    if facts.kind == "plan" and facts.plan:
        state.plan = facts.plan
    _decide(state, shorten(facts.note, _DECISION_CHARS), f"M.{facts.number}")
    if facts.command is not None:
        runs = state.commands.pop(key, _Command(facts, 0)).runs
        state.commands[key] = _Command(facts, runs + 1)
    elif (facts.kind == "other" or facts.key in SEARCH_KEYS) and not facts.note:
        state.calls.pop(key, None)
        state.calls[key] = facts
    if facts.result is None:
        return
    if facts.errors:
        state.errors[key] = [*state.errors.pop(key, []), facts]
    elif not facts.outcome.failed:
        state.errors.pop(key, None)
        # A file changed cleanly (by any tool or command) supersedes failed edits of it.
        for other, failed in list(state.errors.items()):
            edit = failed[-1]
            if edit.kind == "change" and set(edit.changed) <= set(facts.changed):
                del state.errors[other]


def _key(facts: CallFacts, arguments: str) -> str:
    """What makes two runs "the same command": the command itself (whatever else its call
    says, such as Claude Code's `description`); for an edit, the tool and the files it changes
    (a later edit of the file that worked supersedes one that failed); else the tool and all
    its arguments."""
    if facts.command is not None:
        return "$ " + facts.command
    if facts.kind == "change" and facts.changed:
        return f"{facts.tool} changes {' '.join(sorted(facts.changed))}"
    return f"{facts.tool} {arguments}"


def _summary(state: _State, message: Message) -> None:
    """A summary: its alias for the squashes line and its paths; its cards read back as calls
    (commands and their outcomes, files changed, error lines), or, written by a model, its
    last statement as a decision."""
    state.squashes.append(message)
    alias = f"SQ.{message.squash_n}"
    _name(state, [message.content], alias)
    lines = message.content.split("\n")
    if not lines[0].startswith(HEADER):
        _decide(state, _decision(message.content), alias)
        return
    for line in lines[1:]:
        facts = read_card_line(line)
        if facts is not None:
            _call(state, facts, _key(facts, facts.value))


def _name(state: _State, texts: list[str], alias: str) -> None:
    for path in paths(texts):
        if path not in state.changed and path not in state.read:
            state.named.pop(path, None)
            state.named[path] = alias


def _decide(state: _State, decision: str, alias: str) -> None:
    if decision:
        state.decisions.pop(decision, None)
        state.decisions[decision] = alias


def _decision(text: str) -> str:
    """The last sentence of a text that states something (not "Let me look at…"), shortened;
    "" when it has none."""
    prose = _CODE_BLOCK.sub(" ", text)
    sentences = [" ".join(s.split()) for s in _SENTENCE.split(prose)]
    stated = [s for s in sentences if len(s.split()) >= _DECISION_WORDS and not _NARRATION.match(s)]
    return shorten(stated[-1], _DECISION_CHARS) if stated else ""


def _header(title: str, state: _State) -> str:
    name = f'"{_flat(title)}"' if title.strip() else "this thread"
    span = f", M.{state.first}–M.{state.last}" if state.first is not None else ""
    count = f"{state.recorded:,} message{'s' if state.recorded != 1 else ''}"
    return (
        f"Digest of {name} ({count}{span}); each item names an alias, and "
        'get_alias("M.n") returns message n whole.'
    )


def _task(request: Message, budget: int) -> str:
    """The task: the request the model first answered, its head and tail when long."""
    limit = max(80, min(_TASK_CHARS, budget // 7))
    text = _flat(request.content)
    if len(text) > limit:
        head = limit * 2 // 3
        text = f"{text[:head]}…{text[-(limit - head - 1) :]}"
    return f"Task (M.{request.number}): {text}"


def _originals(state: _State) -> str:
    listed = ", ".join(f"SQ.{m.squash_n} (M.{m.ord}–M.{m.ord_last})" for m in state.squashes)
    return f'Squashes (get_alias("SQ.n") returns what one replaced): {listed}'


def _items(state: _State, steps: Sequence[PlanStep]) -> list[_Item]:
    """Every line the digest may hold, ranked (see `_Item`)."""
    items: list[_Item] = []
    if steps:
        items.append(_Item("plan", _MUST, 0, 0, plan_line(steps), ""))
    later = len(state.requests) - _REQUESTS_SHOWN
    for order, request in enumerate(state.requests):
        if order == state.task:
            continue
        n = request.number or 0
        text = f"Asked (M.{n}): {shorten(_flat(request.content), _REQUEST_CHARS)}"
        tier = _MUST if order > state.task and order >= later else _MIDDLE
        items.append(_Item("asked", tier, n, order, text, f"M.{n}"))
    erred: dict[str, int] = {}  # a command line an open error shows, and the alias of its run
    for order, failed in enumerate(state.errors.values()):
        last = failed[-1]
        n = last.result or last.number
        line = _first_line(last.command or "", _COMMAND_CHARS)
        erred[line] = n
        text = _error_line(failed, line)
        items.append(_Item("errors", _MUST, n, order, text, f"M.{n}", shows=line))
    for order, (path, (n, times, writer)) in enumerate(state.changed.items()):
        text = f"{path} · M.{n}" + (f" ×{times}" if times > 1 else "")
        # A file a command wrote whole (a scratch script) is told by that command's line.
        covered: tuple[str, ...] = (writer,) if writer else ()
        items.append(
            _Item("changed", _MUST, n, order, text, f"M.{n}", covered_by=covered, shows=path)
        )
    for order, (line, command, runs) in enumerate(_command_lines(state)):
        n = command.result or command.number
        text = _command_line(line, command, runs)
        tier = _HIGH if command.outcome.failed or command.errors else _MIDDLE
        same = (line,) if erred.get(line) == n else ()  # its open error shows it already
        items.append(_Item("commands", tier, n, order, text, f"M.{n}", covered_by=same, shows=line))
    longer = _by_name([*state.changed, *state.read])
    for order, (path, (n, reader)) in enumerate(state.read.items()):
        covered = (*((reader,) if reader else ()), *_ending_with(path, longer))
        text = f"{path} · M.{n}"
        items.append(_Item("read", _HIGH, n, order, text, f"M.{n}", covered_by=covered, shows=path))
    for order, (path, alias) in enumerate(state.named.items()):
        n = _alias_number(alias)
        text = f"{path} · {alias}"
        covered = _ending_with(path, longer)
        items.append(_Item("named", _HIGH, n, order, text, alias, covered_by=covered))
    for order, facts in enumerate(state.calls.values()):
        n = facts.result or facts.number
        items.append(_Item("calls", _MIDDLE, n, order, _call_line(facts), f"M.{n}"))
    decisions = list(state.decisions.items())
    for order, (text, alias) in enumerate(decisions):
        tier = _HIGH if order >= len(decisions) - _PRIORITY_DECISIONS else _LOW
        n = _alias_number(alias)
        items.append(_Item("decisions", tier, n, order, f"{alias}: {text}", alias))
    return items


def _command_lines(state: _State) -> list[tuple[str, CallFacts, int]]:
    """Each distinct first line of the commands run, with its last run and how many runs
    (commands that differ after their first line show as one)."""
    lines: dict[str, tuple[CallFacts, int]] = {}
    for command in state.commands.values():
        line = _first_line(command.facts.command or "", _COMMAND_CHARS)
        _, runs = lines.pop(line, (command.facts, 0))
        lines[line] = (command.facts, runs + command.runs)
    return [(line, facts, runs) for line, (facts, runs) in lines.items()]


def _by_name(paths: Sequence[str]) -> dict[str, list[str]]:
    """Paths by their last name: only a path of the same last name can end with another (a
    long session reads thousands of files; comparing each with each took seconds)."""
    named: dict[str, list[str]] = {}
    for path in paths:
        named.setdefault(path.rstrip("/").rsplit("/", 1)[-1], []).append(path)
    return named


def _ending_with(path: str, others: dict[str, list[str]]) -> tuple[str, ...]:
    """The other paths that end with `path` as a whole name (`/r/src/a.py` for `src/a.py`):
    shown, they show it too."""
    tail = "/" + path
    name = tail.rstrip("/").rsplit("/", 1)[-1]
    return tuple(other for other in others.get(name, ()) if other.endswith(tail))


def _alias_number(alias: str) -> int:
    return int(alias.split(".", 1)[1]) if alias.startswith("M.") else 0


def _error_line(failed: Sequence[CallFacts], line: str) -> str:
    """`M.70 exit 1: python x.py → AttributeError: …`: the last failed run's alias, outcome
    and command line (or call), and the distinct error lines of every failed run of the command
    since its last clean one, newest first."""
    last = failed[-1]
    n = last.result or last.number
    called = f"{last.key}:{last.value}" if last.key else last.value
    files = last.changed or last.read
    what = line or (f"{last.tool} {files[0]}" if files else "")
    what = what or shorten(_flat(f"{last.tool} {called}"), _OTHER_CHARS)
    errors = list(dict.fromkeys(error for run in reversed(failed) for error in run.errors))
    told = [error for error in errors if error != _TRACEBACK] or errors
    runs = f" ×{len(failed)}" if len(failed) > 1 else ""
    return f"M.{n} {last.label}{runs}: {what} → {' | '.join(told)}"


def _command_line(line: str, facts: CallFacts, runs: int) -> str:
    n = facts.result or facts.number
    label = "" if facts.label == "ok" else " " + facts.label
    times = f" ×{runs}" if runs > 1 else ""
    return f"M.{n}{label}{times}: {line}"


def _call_line(facts: CallFacts) -> str:
    n = facts.result or facts.number
    label = "" if facts.label == "ok" else " " + facts.label
    what = f"{facts.key}:{facts.value}" if facts.key else facts.value
    return f"M.{n}{label}: {facts.tool} {shorten(_flat(what), 160)}"


def _first_line(command: str, limit: int) -> str:
    """A command's first line, whitespace made single spaces, cut after `limit`."""
    first = next((line for line in command.splitlines() if line.strip()), "")
    return shorten(_flat(first), limit)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _fit(head: list[str], tail: list[str], items: list[_Item], budget: int) -> str:
    """The digest's text: `head` and `tail` always (as many lines as fit), then the items by
    importance while they fit, shown by section, and a line naming what was left out.

    Items are first chosen on the sum of their lines' weights, which overstates the text's
    (each line is priced as if it started a text); the text is then measured, and what that
    freed is offered again to the items left out, until none fits."""
    total = budget * TOKEN_UNIT
    fixed: list[str] = []
    for line in head + tail:
        if sum(map(_units, fixed)) + _units(line) > total:
            break
        fixed.append(line)
    if not fixed:
        return ""
    reserve = min(max(budget // _LEFT_OUT_SHARE, _LEFT_OUT_LEAST), _LEFT_OUT_TOKENS) * TOKEN_UNIT
    choice = _Choice(left=sorted(items, key=_rank))
    room = total - sum(map(_units, fixed)) - reserve
    for _ in range(_ROUNDS):
        if not (choice.left and choice.add(room)):
            break
        room = total - _units("\n".join(_body(fixed, tail, choice.chosen))) - reserve
    lines = _body(fixed, tail, choice.chosen)
    if choice.left:
        lines.append(_left_out(choice.left, total - _units("\n".join(lines))))
    text = "\n".join(lines)
    while estimate_tokens(text) > budget and "\n" in text:  # never taken: the sums bound it
        text = text.rsplit("\n", 1)[0]
    return text


@dataclass(slots=True)
class _Choice:
    """Items chosen so far and those left, in rank order; the command lines and sections
    shown (a section's heading is paid with its first item)."""

    left: list[_Item]
    chosen: list[_Item] = field(default_factory=list)
    shown: set[str] = field(default_factory=set)
    headed: set[str] = field(default_factory=set)

    def add(self, room: int) -> bool:
        """Choose, in rank order, every item left that fits in `room` (units) after those
        chosen before it; whether any was."""
        left: list[_Item] = []
        added = False
        for item in self.left:
            if any(key in self.shown for key in item.covered_by):
                continue  # a command line or a longer path shown names it already
            cost = _units(item.text)
            heading = _heading(item.section)
            if heading and item.section not in self.headed:
                cost += _units(heading)
            if cost > room:
                left.append(item)
                continue
            room -= cost
            added = True
            self.chosen.append(item)
            self.headed.add(item.section)
            if item.shows:
                self.shown.add(item.shows)
        self.left = left
        return added


def _rank(item: _Item) -> tuple[int, int, int]:
    """Lower first: the tier, then the newest; an item a command line may cover waits until
    the commands of its tier were chosen, so that it costs nothing when one names it."""
    if item.covered_by:
        return (max(item.tier, _MIDDLE), 1, -item.recency)
    return (item.tier, 0, -item.recency)


def _body(fixed: list[str], tail: list[str], chosen: list[_Item]) -> list[str]:
    lines = [line for line in fixed if line not in tail]
    by_section: dict[str, list[_Item]] = {}
    for item in chosen:
        by_section.setdefault(item.section, []).append(item)
    for section, heading in _SECTIONS:
        shown = sorted(by_section.get(section, []), key=lambda item: item.order)
        if shown and heading:
            lines.append(heading)
        lines.extend(item.text for item in shown)
    lines.extend(line for line in fixed if line in tail)
    return [line for line in lines if line]


def _heading(section: str) -> str:
    return next((heading for name, heading in _SECTIONS if name == section), "")


def _left_out(left: list[_Item], room: int) -> str:
    """`Left out for room: 12 commands, 3 files read; get_alias returns each from its
    original: M.5, M.7 +40 more`, naming as many aliases as `room` (units) allows."""
    counts: dict[str, int] = {}
    for item in left:
        counts[item.section] = counts.get(item.section, 0) + 1
    named = ", ".join(
        f"{count} {_NOUNS[name][0] if count == 1 else _NOUNS[name][1]}"
        for name, count in counts.items()
    )
    text = f"Left out for room: {named}; get_alias returns each from its original:"
    aliases = sorted({item.alias for item in left if item.alias}, key=_alias_order)
    shown: list[str] = []
    for alias in aliases:
        more = len(aliases) - len(shown) - 1
        candidate = f"{text} {', '.join([*shown, alias])}" + (f" +{more} more" if more else "")
        if _units(candidate) > room:
            break
        shown.append(alias)
    if not shown:
        brief = f"{text.removesuffix(':')}."
        total = f"Left out for room: {len(left)} items; get_alias returns each from its original."
        return brief if _units(brief) <= room else total
    more = len(aliases) - len(shown)
    return f"{text} {', '.join(shown)}" + (f" +{more} more" if more else "")


def _alias_order(alias: str) -> tuple[str, int]:
    family, _, number = alias.partition(".")
    return family, int(number) if number.isdigit() else 0


def _units(line: str) -> int:
    """What a line costs in a digest, its newline with it (weights add up: see frs.text)."""
    return token_units(line + "\n")
