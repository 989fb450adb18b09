"""How a tool call ended, read from its result's text: the exit status and the numbers worth
keeping (a test run's summary line).

Hosts state a command's status in a handful of shapes, at the start of the result (Claude
Code's `Exit code 1`, mini-swe-agent's `<returncode>1</returncode>`, Codex's `Process exited with
code 1`) or at its end (OpenHands' `[The command completed with exit code 1.]`, Gemini CLI's
`Exit Code: 1`), or as JSON (Codex's `{"output": …, "metadata": {"exit_code": 1}}`). Only the
head and the tail are searched, so a log line in the middle that quotes an exit code is never
taken for the call's own status. A result with no status is ok unless the host marked it as an
error (`(error)`, `<tool_use_error>`, `"is_error": true`, a first line that says `Error:`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_EDGE_CHARS = 300  # how much of a result's head and tail may state its status
_STATUS = (
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    re.compile(r"(?i)\b(?:exit|return)[ _-]?(?:code|status)\b[\s:=]*(-?\d+)"),
    re.compile(r"(?i)\bexited with (?:code|status) (-?\d+)"),
    re.compile(r"(?i)\breturncode\W{0,3}(-?\d+)"),
)
_WRAPPED = re.compile(
    r"\s*<returncode>\s*-?\d+\s*</returncode>.*?<output>\n?(.*)</output>\s*$", re.DOTALL
)
_FLAGGED_FIRST_LINE = re.compile(r"^(?:error|fatal)\b\s*[:!]", re.IGNORECASE)
_JSON_CODES = ("exit_code", "exitCode", "returncode", "return_code", "status_code")
_JSON_FLAGS = ("is_error", "isError")
_JSON_TEXTS = ("output", "stdout", "content", "result")

# Summary lines of test runners, linters and git: the numbers a later call compares against.
_NUMBER_LINES = (
    re.compile(r"\b\d+ (?:passed|failed)\b"),  # pytest, jest's "Tests: 1 failed, 5 passed"
    re.compile(r"\btest result: (?:ok|FAILED)\."),  # cargo
    re.compile(r"^Ran \d+ tests? in "),  # unittest
    re.compile(r"^(?:OK|FAILED) \((?:failures|errors|skipped)=\d+"),  # unittest
    re.compile(r"^Found \d+ errors?\b|^Success: no issues found"),  # mypy, ruff
    re.compile(r"\b\d+ files? changed\b"),  # git commit, git diff --stat
    re.compile(r"\b\d+ (?:errors?|warnings?) generated\b"),  # clang
)
#: A word each of those needs: a line without one is not searched (a long session's outputs
#: have hundreds of thousands of lines, and the patterns cost microseconds a line).
_NUMBER_WORDS = (
    "passed",
    "failed",
    "test result",
    "Ran ",
    "OK (",
    "FAILED (",
    "Found ",
    "Success",
    "changed",
    "generated",
)
_NUMBER_CHARS = 120
_NUMBER_LINES_READ = 200  # summaries close an output: only its last lines are read
_NUMBERS_KEPT = 2
_DECORATION = "=-*_ \t"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call ended: the exit status its result states (None when it states none), and
    whether it failed (a nonzero status, or a result the host marked as an error)."""

    exit_code: int | None = None
    failed: bool = False

    @property
    def label(self) -> str:
        """`ok`, `exit 2`, or `error` (failed, with no status stated)."""
        if self.exit_code not in (None, 0):
            return f"exit {self.exit_code}"
        return "error" if self.failed else "ok"


def result_text(text: str) -> str:
    """The output a result carries: the `output` of a JSON envelope (Codex's exec results) or
    of mini-swe-agent's `<returncode>…<output>…</output>`, else the text as it is."""
    envelope = _envelope(text)
    if envelope is not None:
        for key in _JSON_TEXTS:
            value = envelope.get(key)
            if isinstance(value, str):
                return value
    wrapped = _WRAPPED.match(text)
    return wrapped.group(1) if wrapped else text


def outcome(text: str) -> Outcome:
    """The outcome a tool result's text states (see the module's docstring)."""
    envelope = _envelope(text)
    if envelope is not None:
        found = _json_outcome(envelope)
        if found is not None:
            return found
        text = result_text(text)
    code = _stated_code(text)
    if code is not None:
        return Outcome(code, code != 0)
    return Outcome(None, _flagged(text))


def numbers(text: str) -> tuple[str, ...]:
    """The last summary lines of a test run, a linter or git (`3 failed, 12 passed in 0.4s`)
    among the output's last 200 lines, decoration stripped, at most two, oldest first."""
    found: list[str] = []
    for line in reversed(text.splitlines()[-_NUMBER_LINES_READ:]):
        stripped = " ".join(line.strip(_DECORATION).split())
        if (
            stripped
            and len(stripped) <= 4 * _NUMBER_CHARS
            and any(word in stripped for word in _NUMBER_WORDS)
            and any(p.search(stripped) for p in _NUMBER_LINES)
            and stripped[:_NUMBER_CHARS] not in found
        ):
            found.append(stripped[:_NUMBER_CHARS])
            if len(found) == _NUMBERS_KEPT:
                break
    return tuple(reversed(found))


def _envelope(text: str) -> dict[str, object] | None:
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _json_outcome(envelope: dict[str, object]) -> Outcome | None:
    """The status a JSON result states at its top level or under `metadata`, or None."""
    places = [envelope]
    metadata = envelope.get("metadata")
    if isinstance(metadata, dict):
        places.append(metadata)
    flagged = any(place.get(key) is True for place in places for key in _JSON_FLAGS)
    for place in places:
        for key in _JSON_CODES:
            code = place.get(key)
            if isinstance(code, int) and not isinstance(code, bool):
                return Outcome(code, code != 0 or flagged)
    return Outcome(None, True) if flagged else None


def _stated_code(text: str) -> int | None:
    for edge in (text[:_EDGE_CHARS], text[-_EDGE_CHARS:]):
        for pattern in _STATUS:
            found = pattern.search(edge)
            if found:
                return int(found.group(1))
    return None


def _flagged(text: str) -> bool:
    stripped = text.strip()
    if stripped == "(error)" or stripped.startswith("<tool_use_error>"):
        return True
    first = stripped.split("\n", 1)[0]
    return bool(_FLAGGED_FIRST_LINE.match(first))
