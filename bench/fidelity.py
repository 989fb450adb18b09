"""Fidelity: how many of a transcript's facts a view still shows, by the things an agent greps for.

A crude but telling proxy for "what the view kept": the distinct file paths, shell commands and
error lines of the whole transcript, and the share of each that a view's text still holds.

- A file path is a token with at least one `/` and a file name with an extension
  (`src/libponyc/expr/match.c`, `/tmp/x/Cargo.toml`), found in any message's text or a tool
  call's arguments; URLs are not paths. It is shown when the view holds it whole.
- A command is the first line of a shell tool call's `command` (or `cmd`) argument (a tool
  whose name says bash, shell, terminal or exec); it is shown when the view holds its first
  40 characters (an annotation cuts commands at 60).
- An error line is a line of a tool result that names an error (`Error`, `Exception`,
  `Traceback`, `FAILED`, `error:`, `panicked`, `fatal:`); it is shown when the view holds its
  first 40 characters, stripped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from bench.corpus import Line, Transcript

_PATH = re.compile(
    r"(?<![\w:/.~-])((?:\.{1,2}/|~/|/)?(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7})"
    r"(?![\w/])"
)
_SHELL = re.compile(r"bash|shell|terminal|exec", re.IGNORECASE)
_ERROR = re.compile(
    r"Error\b|Exception\b|Traceback|FAILED|\berror(?::|\[)|panicked|fatal:|\bFAIL:", re.UNICODE
)
PREFIX_CHARS = 40
_ERROR_LINE_CHARS = 400  # a longer "line" is data (a minified blob), not an error message


@dataclass(frozen=True, slots=True)
class Facts:
    """The distinct facts of a transcript, each as the string a view must hold to show it."""

    paths: frozenset[str]
    commands: frozenset[str]
    errors: frozenset[str]

    @property
    def total(self) -> int:
        return len(self.paths) + len(self.commands) + len(self.errors)


def _texts(line: Line) -> Iterable[str]:
    yield line.content
    for call in line.tool_calls:
        yield call.arguments
        try:
            args = json.loads(call.arguments)
        except ValueError:
            continue
        if isinstance(args, dict):  # the arguments' strings unescaped: a path inside "…\n…"
            yield from (value for value in args.values() if isinstance(value, str))


def _command(arguments: str) -> str | None:
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    value = args.get("command", args.get("cmd"))
    if not isinstance(value, str) or not value.strip():
        return None
    first = next(line.strip() for line in value.splitlines() if line.strip())
    return " ".join(first.split())[:PREFIX_CHARS]


def facts_of(lines: Iterable[Line]) -> Facts:
    paths: set[str] = set()
    commands: set[str] = set()
    errors: set[str] = set()
    for line in lines:
        for text in _texts(line):
            paths.update(found.group(1) for found in _PATH.finditer(text))
        for call in line.tool_calls:
            if _SHELL.search(call.name):
                command = _command(call.arguments)
                if command:
                    commands.add(command)
        if line.role == "tool":
            for text_line in line.content.splitlines():
                stripped = text_line.strip()
                if len(stripped) <= _ERROR_LINE_CHARS and _ERROR.search(stripped):
                    errors.add(" ".join(stripped.split())[:PREFIX_CHARS])
    return Facts(frozenset(paths), frozenset(commands), frozenset(errors))


def facts(transcript: Transcript) -> Facts:
    return facts_of(transcript.lines)


@dataclass(frozen=True, slots=True)
class Fidelity:
    paths: float
    commands: float
    errors: float
    overall: float

    def as_dict(self) -> dict[str, float]:
        return {
            "paths": round(self.paths, 3),
            "commands": round(self.commands, 3),
            "errors": round(self.errors, 3),
            "overall": round(self.overall, 3),
        }


def fidelity(known: Facts, text: str) -> Fidelity:
    """The share of `known` facts that `text` holds (1.0 for a kind the transcript has none of)."""
    # Whitespace is collapsed in the view (a one-line card joins lines): compare the same way.
    flat = " ".join(text.split())
    shown = [
        sum(fact in flat for fact in kind) for kind in (known.paths, known.commands, known.errors)
    ]
    sizes = [len(known.paths), len(known.commands), len(known.errors)]
    paths, commands, errors = (s / n if n else 1.0 for s, n in zip(shown, sizes, strict=True))
    overall = sum(shown) / known.total if known.total else 1.0
    return Fidelity(paths, commands, errors, overall)
