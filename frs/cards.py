"""Fact cards: finished tool exchanges written as a squash's summary, one line per call.

A card line says what a model greps its history for: the call's alias, the tool, its telling
argument (a command verbatim, the files), how it ended (`ok`, `exit 1`, `error`) with its first
error line, the result's alias and size, the numbers of a test run, and the paths the result
named; the assistant's own words follow the first call of an exchange. Newlines inside a
command show as `⏎`, so a line stays a line. A batch is a header that names how to get the
originals back, then the cards. The text is pure and deterministic, and much smaller than what it
stands for; `frs.digest` reads the cards of a summary back (`read_card_line` reads what
`card_line` writes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from frs.facts import SEARCH_KEYS, CallFacts, CallKind, Exchange, ExchangeFacts, exchange_facts
from frs.mentions import error_lines
from frs.model import PlanStep
from frs.outcomes import Outcome
from frs.text import estimate_tokens, shorten

#: How every batch of cards starts, so a reader (`frs.digest`) knows a summary is one.
HEADER = "Fact cards (automatic)"
NEWLINE = "⏎"  # a newline inside a command or a value, kept on one line
ERROR_MARK = "error: "  # before the error line a card shows
COMMAND_CHARS = 400  # of a command a card shows; longer ones are cut, and say so
_VALUE_CHARS = 160  # of any other telling argument
_SAID_CHARS = 160
_ERROR_CHARS = 240
_FILES_SHOWN = 6
_SEEN_SHOWN = 3
_PATH_CHARS = 100
_TRACEBACK = "Traceback (most recent call last):"
_STEP_MARK = {"done": "✓", "doing": "▶", "todo": "○"}
# A card aims at this share of the tokens of the exchange it stands for, shedding in turn the
# assistant's words (cut to this many characters, then all) and the result's paths; a command
# stays verbatim (up to COMMAND_CHARS) whatever it costs.
_CARD_SHARE = 0.5
_SHRINKING: tuple[tuple[int, bool], ...] = ((_SAID_CHARS, True), (80, True), (0, True), (0, False))

# A card line as `card_line` writes it: the call's alias, the tool, what it was called with,
# then after the arrow the result's alias, its outcome, and the rest (size or short output,
# numbers, error line, paths, the assistant's words).
_CARD_LINE = re.compile(
    r"^M\.(?P<call>\d+) (?P<tool>\S+) (?P<argument>.*?)"
    r" → (?:M\.(?P<result>\d+) )?(?P<outcome>ok|exit -?\d+|error|unanswered)(?P<rest>.*)$"
)
_COMMAND = re.compile(r"^`(?P<command>.*)`(?: \[cut, [\d,]+ chars\])?(?: changed (?P<files>.*))?$")
_CHANGED = re.compile(r"^changed (?P<files>.*)$")
_MORE = re.compile(r" \+\d+ (?:files?|paths?|error lines?)$| \(\+\d+ error lines?\)$")
_PATHLIKE = re.compile(r"^[^\s:]*[/.][^\s:]*$")  # what a read tool's card lists
_OUTPUT = re.compile(r'^: "(?P<output>.*?)"(?= · | — |$)')


def cards(exchanges: Sequence[Exchange], squash: str | None = None) -> str:
    """A batch's summary: the header, then each exchange's card lines, in order. `squash` is
    the alias the batch will get (`SQ.3`); without it, the header names it generically."""
    facts = [exchange_facts(exchange) for exchange in exchanges]
    lines = [header(facts, squash)]
    for exchange in facts:
        lines.extend(card(exchange))
    return "\n".join(lines)


def header(exchanges: Sequence[ExchangeFacts], squash: str | None = None) -> str:
    """`Fact cards (automatic) of 3 tool exchanges, M.4–M.9: get_alias("SQ.2") returns them
    whole, get_alias("M.n") one message.`"""
    count = len(exchanges)
    numbers = [n for e in exchanges for n in _numbers(e)]
    span = f", M.{min(numbers)}–M.{max(numbers)}" if numbers else ""
    noun = "exchange" if count == 1 else "exchanges"
    whole = f'get_alias("{squash}")' if squash else "get_alias of this summary's SQ.n"
    return (
        f"{HEADER} of {count} tool {noun}{span}: {whole} returns them whole, "
        'get_alias("M.n") one message.'
    )


def card(exchange: ExchangeFacts) -> list[str]:
    """An exchange's card: one line per call, the assistant's words after the first. When
    that is more than a share of what the exchange holds (`ExchangeFacts.tokens`), the card
    sheds what can be read back first: the words, shorter, then gone; then the result's paths.
    The smallest form is taken when none is small enough."""
    target = exchange.tokens * _CARD_SHARE
    lines: list[str] = []
    for said, seen in _SHRINKING:
        lines = [card_line(call, seen=seen) for call in exchange.calls]
        if exchange.said and lines and said:
            lines[0] += " — " + shorten(exchange.said, said)
        if not exchange.tokens or estimate_tokens("\n".join(lines)) <= target:
            break
    return lines


def card_line(call: CallFacts, *, seen: bool = True) -> str:
    """One call as a line: `M.12 bash `pytest -x` → M.13 exit 1, 40 lines, 2,310 chars · 3
    failed, 9 passed · FAILED tests/test_a.py::test_b - AssertionError`; without the paths its
    result named when not `seen`."""
    text = f"M.{call.number} {_one_line(call.tool)} {_argument(call)}"
    if call.result is None:
        return text + " → unanswered"
    text += f" → M.{call.result} {call.label}"
    text += f': "{call.output}"' if call.output else f", {_size(call)}"
    parts = [*call.numbers]
    shown = _shown_error(call.errors)
    if shown and shown not in call.output and shown not in call.numbers:
        more = len(call.errors) - 1
        extra = f" (+{more} error {'line' if more == 1 else 'lines'})" if more else ""
        parts.append(ERROR_MARK + shorten(shown, _ERROR_CHARS) + extra)
    shown_so_far = " · ".join([text, *parts])
    fresh = [path for path in call.seen if path not in shown_so_far]
    if fresh and seen:
        total = call.seen_total - (len(call.seen) - len(fresh))
        parts.append(_listed(fresh, total, _SEEN_SHOWN, "path"))
    return " · ".join([text, *parts])


def command_text(command: str, limit: int = COMMAND_CHARS) -> str:
    """A command on one line, verbatim (`⏎` for each newline), cut after `limit` characters
    with how long it was."""
    flat = command.strip("\n").replace("\r\n", "\n").replace("\r", "\n").replace("\n", NEWLINE)
    if len(flat) <= limit:
        return f"`{flat}`"
    return f"`{flat[:limit]}` [cut, {len(flat):,} chars]"


def read_card_line(line: str) -> CallFacts | None:
    """A card line read back as the facts it kept (a command verbatim up to its cut, the
    files it changed, the outcome, the error line it showed); None for another line. What the
    card left out is in its originals, `get_alias` of the aliases it names."""
    found = _CARD_LINE.match(line)
    if found is None:
        return None
    argument = found.group("argument")
    command = _COMMAND.match(argument)
    named = command or _CHANGED.match(argument)
    files = named.group("files") if named else None
    label = found.group("outcome")
    code = int(label.split()[1]) if label.startswith("exit ") else None
    rest = found.group("rest").split(" — ", 1)[0]  # the assistant's words follow a dash
    output = _OUTPUT.match(rest)
    shown = output.group("output") if output else ""
    errors = [
        _MORE.sub("", part).removeprefix(ERROR_MARK)
        for part in rest.split(" · ")[1:]
        if part.startswith(ERROR_MARK)
    ]
    errors.extend(error_lines(shown))
    failed = label not in ("ok", "unanswered", "exit 0")
    if failed and not errors and shown:  # a short output that failed says why itself
        errors.append(shown)
    result = found.group("result")
    listed = _MORE.sub("", argument).split(", ")
    kind: CallKind = "shell" if command else "change" if files else "other"
    if kind == "other" and all(_PATHLIKE.match(item) for item in listed):
        kind = "read"
    return CallFacts(
        tool=found.group("tool"),
        kind=kind,
        key="command" if command else "",
        value=command.group("command").replace(NEWLINE, "\n") if command else argument,
        command=command.group("command").replace(NEWLINE, "\n") if command else None,
        read=tuple(listed) if kind == "read" else (),
        changed=tuple(_MORE.sub("", files).split(", ")) if files else (),
        named=(),
        seen=(),
        seen_total=0,
        outcome=Outcome(code, failed),
        errors=tuple(dict.fromkeys(errors)),
        chars=0,
        lines=0,
        output=shown,
        numbers=(),
        number=int(found.group("call")),
        result=int(result) if result else None,
    )


def _argument(call: CallFacts) -> str:
    changed = "changed " + _listed(call.changed, len(call.changed), _FILES_SHOWN, "file")
    if call.command is not None:
        shown = command_text(call.command)
        return f"{shown} {changed}" if call.kind == "change" and call.changed else shown
    if call.kind == "change" and call.changed:
        return changed
    if call.kind == "read" and call.read and call.key not in (*SEARCH_KEYS, ""):
        return _listed(call.read, len(call.read), _FILES_SHOWN, "file")
    if call.kind == "plan" and call.plan:
        return _plan(call.plan)
    if not call.value:
        return "(no arguments)" if not call.key else f"{_one_line(call.key)}:"
    value = shorten(_one_line(call.value), _VALUE_CHARS)
    told = f"{_one_line(call.key)}:{value}" if call.key else value
    if call.read:  # where a search looked
        told += " in " + _listed(call.read, len(call.read), _FILES_SHOWN, "file")
    return told


def _plan(steps: Sequence[PlanStep]) -> str:
    """`7 todos (2 done): ▶ Port string_utils`: the count, and the step being done (or next)."""
    done = sum(1 for step in steps if step.status == "done")
    current = next((s for s in steps if s.status == "doing"), None) or next(
        (s for s in steps if s.status == "todo"), None
    )
    text = f"{len(steps)} todos ({done} done)"
    if current is not None:
        text += f": {_STEP_MARK[current.status]} {shorten(current.text, 80)}"
    return text


def _size(call: CallFacts) -> str:
    if not call.chars:
        return "empty"
    lines = "1 line" if call.lines == 1 else f"{call.lines:,} lines"
    return f"{lines}, {call.chars:,} chars"


def _shown_error(errors: Sequence[str]) -> str:
    """The error line a card shows: the first that is not a traceback's opening."""
    informative = [line for line in errors if _TRACEBACK not in line]
    return informative[0] if informative else (errors[0] if errors else "")


def _listed(items: Iterable[str], total: int, shown: int, noun: str) -> str:
    """`a.py, b.py +3 paths`: the first few, each cut to keep its tail, then how many more."""
    first = [_tail(_one_line(item)) for item in list(items)[:shown]]
    more = total - len(first)
    return ", ".join(first) + (f" +{more} {noun}{'s' if more > 1 else ''}" if more > 0 else "")


def _tail(path: str) -> str:
    return path if len(path) <= _PATH_CHARS else "…" + path[-(_PATH_CHARS - 1) :]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _numbers(exchange: ExchangeFacts) -> list[int]:
    found = [exchange.number]
    found.extend(call.result for call in exchange.calls if call.result is not None)
    return found
