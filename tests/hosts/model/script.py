"""The script a scripted model plays, and the record of every request it received.

The script is wire-neutral: a step answers with a `Turn` (text and tool calls), and each wire
(anthropic.py, responses.py, chat.py, ...) parses its requests into a `Seen` (what the model was
shown: system text, tools, the tool results of the last turn) and writes a `Turn` out in its own
format. A step is a `Turn`, or a function of the `Seen` that returns one, so a step can read the
last tool result and take a revision or an alias out of it, as a model would.

Hosts also make calls that are not the conversation (a title, a quota probe, a haiku): side
rules answer those by the shape of the request without using up a step. By default a request
that offers no tools is a side call.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool the model calls, by the name the host gave it, with JSON arguments.

    `namespace` is the namespace a Responses API tool was given in (Codex puts MCP tools in
    one per server); `kind` "tool_search" is the Responses API's client-side tool search
    (a tool_search_call item) rather than a function call.
    """

    name: str
    arguments: dict[str, Any]
    namespace: str | None = None
    kind: str = "function"


@dataclass(frozen=True, slots=True)
class Turn:
    """One model answer: some text, then tool calls (none ends the host's loop)."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    #: Thinking before the text and calls: a signed thinking block on the Anthropic wire
    #: (`tests.hosts.model.binding`), ignored by the others.
    thinking: str | None = None
    #: The input tokens the answer's usage reports (None: estimated from the request, about
    #: four bytes a token). Hosts decide when to compact by this number.
    input_tokens: int | None = None

    @classmethod
    def call(cls, name: str, text: str = "", /, **arguments: Any) -> Turn:
        """A turn with a single tool call."""
        return cls(text, (ToolCall(name, arguments),))


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool as the host presented it to the model."""

    name: str
    description: str
    schema: Any  # the JSON schema of its input, as sent (None where the wire sends none)
    raw: Any  # the tool's entry in the request, untouched


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result as the host forwarded it: `text` is what the model reads (text parts
    joined; JSON where the host sent JSON), `raw` the wire's own item."""

    call_id: str
    text: str
    is_error: bool
    raw: Any

    def json(self) -> Any:
        """The result parsed as JSON (fails if the host forwarded plain text)."""
        return json.loads(self.text)


@dataclass(frozen=True, slots=True)
class Seen:
    """What one request showed the model, parsed from the wire's body."""

    system: str
    tools: tuple[Tool, ...]
    results: tuple[ToolResult, ...]  # the tool results in the request's last turn
    last_user_text: str  # text of the last user turn (empty when it carries only results)
    body: Any  # the whole parsed body

    def tool(self, name: str) -> Tool:
        """The tool called `name`; AssertionError lists the names there are."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise AssertionError(f"no tool {name!r} in the request; tools: {self.tool_names()}")

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @property
    def result(self) -> ToolResult:
        """The single tool result of the last turn."""
        if len(self.results) != 1:
            raise AssertionError(f"expected one tool result, got {len(self.results)}")
        return self.results[0]


Step = Turn | Callable[[Seen], Turn]


@dataclass(frozen=True, slots=True)
class SideRule:
    """Answers requests that match `when` without using a step (titles, probes)."""

    name: str
    when: Callable[[Seen], bool]
    answer: Callable[[Seen], Turn]


def no_tools(seen: Seen) -> bool:
    return not seen.tools


DEFAULT_SIDE = (SideRule("no tools offered", no_tools, lambda seen: Turn("Scripted title")),)


@dataclass(slots=True)
class Exchange:
    """One request as received, and how the script answered it.

    `body` is the bytes as they arrived (before any Content-Encoding is undone); `kind` is
    "step" (answered step `step`), "side" (a side rule), "count" (a token count), "other" (a
    route the wire answers itself) or "unrouted" (no wire has it: answered 404).
    """

    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    wire: str | None = None
    json: Any = None
    seen: Seen | None = None
    kind: str = "unrouted"
    step: int | None = None
    rule: str | None = None
    answer: Turn | None = None
    error: str | None = None
    #: Thinking blocks the upstream dropped, as (message, block) indices: they failed the
    #: prefix check and the request asked for drop_block (`tests.hosts.model.binding`).
    dropped: tuple[tuple[int, int], ...] = ()

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)


class ScriptOverrun(AssertionError):
    """The host asked for a turn the script cannot give: all steps were played, or one failed
    (then every later request is refused too, and no step is used up)."""


@dataclass
class Script:
    """Steps played in order to the host's conversation requests, plus side rules.

    Thread-safe: the server answers each request on its own thread.
    """

    steps: Sequence[Step]
    side: Sequence[SideRule] = DEFAULT_SIDE
    log: list[Exchange] = field(default_factory=list)
    played: int = 0
    failed: str | None = None  # the first step's failure: every later request is refused
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.log.append(exchange)

    def answer(self, exchange: Exchange, seen: Seen) -> Turn:
        """The turn for a conversation request: a side rule's, or the next step's."""
        with self._lock:
            for rule in self.side:
                if rule.when(seen):
                    exchange.kind, exchange.rule = "side", rule.name
                    exchange.answer = rule.answer(seen)
                    return exchange.answer
            if self.failed is not None:
                exchange.kind = "step"
                raise ScriptOverrun(f"the script stopped: {self.failed}")
            if self.played >= len(self.steps):
                exchange.kind = "step"
                exchange.error = f"script overrun: all {len(self.steps)} steps were played"
                raise ScriptOverrun(exchange.error)
            index = self.played
            self.played += 1
            step = self.steps[index]
            exchange.kind, exchange.step = "step", index
        # A step function may fail an assertion; it runs outside the lock so the failure is
        # recorded and reported, not a deadlock.
        try:
            turn = step(seen) if callable(step) else step
        except Exception as exc:
            exchange.error = f"step {index} failed: {type(exc).__name__}: {exc}"
            with self._lock:
                self.failed = self.failed or exchange.error
            raise
        exchange.answer = turn
        return turn

    # What tests read back.

    def steps_seen(self) -> list[Exchange]:
        """The requests that played a step, in step order."""
        return sorted(
            (e for e in self.log if e.kind == "step" and e.step is not None),
            key=lambda e: e.step or 0,
        )

    def seen_at(self, step: int) -> Seen:
        """What the model was shown in the request that played step `step`."""
        for exchange in self.log:
            if exchange.kind == "step" and exchange.step == step and exchange.seen is not None:
                return exchange.seen
        raise AssertionError(f"step {step} was never played ({self.played} were)")

    def errors(self) -> list[str]:
        return [e.error for e in self.log if e.error]

    def check_done(self) -> None:
        """Fail unless every step was played and nothing went wrong on the way."""
        problems = self.errors()
        if self.played != len(self.steps):
            problems.append(f"{self.played} of {len(self.steps)} steps played")
        if problems:
            raise AssertionError("; ".join(problems) + "\n" + self.describe())

    def describe(self) -> str:
        """The log in one line per request, for failure messages."""
        lines = []
        for e in self.log:
            what = e.kind if e.step is None else f"step {e.step}"
            answer = ""
            if e.answer is not None:
                answer = e.answer.text[:60] + "".join(f" ->{c.name}" for c in e.answer.calls)
            lines.append(f"  {e.method} {e.path} [{e.wire}] {what} {answer} {e.error or ''}")
        return "requests:\n" + "\n".join(lines)


def find_int(pattern: str, text: str) -> int:
    """The first integer the regex `pattern` captures in `text` (a model reading a number out of
    a tool result); AssertionError quotes the text when it is not there."""
    found = re.search(pattern, text)
    if found is None:
        raise AssertionError(f"{pattern!r} not found in: {text!r}")
    return int(found.group(1))


def find_str(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    if found is None:
        raise AssertionError(f"{pattern!r} not found in: {text!r}")
    return found.group(1)
