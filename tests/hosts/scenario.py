"""The scenario every host plays (issue 19): start a session, record a thread with two tool
calls, view it, make two mistakes and recover from the error text alone, squash, read the squash
with get_alias, restore it, view again.

The scripted model plays it: each step after the first reads the tool result the host forwarded
for the previous call and takes what it needs from it (a revision, a range, an alias), as a
model would. Which host it runs in changes only how a tool is called (`tool`: its name, or a
namespace and name) and the steps that find and load the tools first (`load`). `check` then
asserts on what the model received.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.hosts.model import Script, Seen, Step, ToolCall, ToolResult, Turn, find_int, find_str

TITLE = "Fix flaky test"
THREAD: list[dict[str, Any]] = [
    {"role": "user", "content": "test_sync fails one run in five."},
    {
        "role": "assistant",
        "content": "Let me run it 20 times.",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"cmd": "pytest --count 20"}}],
    },
    {
        "role": "tool",
        "name": "bash",
        "tool_call_id": "c1",
        "content": "18 passed, 2 failed: AssertionError 3 != 4 in test_sync",
    },
    {
        "role": "assistant",
        "content": "Reading Syncer.flush.",
        "tool_calls": [{"id": "c2", "name": "read", "arguments": {"path": "sync.py"}}],
    },
    {
        "role": "tool",
        "name": "read",
        "tool_call_id": "c2",
        "content": "def flush(self):\n    self.pending.clear()  # no lock held",
    },
    {"role": "assistant", "content": "Found it: flush clears pending without the lock."},
]
SUMMARY = "Ran test_sync 20x: 2 failures (3 != 4); Syncer.flush clears pending without a lock."
LABELS = ("session", "record", "view", "stale", "split", "squash", "alias", "restore", "again")
#: The calls whose tools declare an output schema: a host that forwards structured content
#: hands the model these as JSON (the rest, views, pages and errors, are text everywhere).
STRUCTURED = frozenset({"session", "record", "squash", "restore"})


def revision_in(text: str) -> int:
    """The revision a result gives, as text ("revision 3") or JSON ("revision": 3)."""
    return find_int(r'\brevision"?\s*:?\s*(\d+)', text)


def content(result: ToolResult) -> str:
    """The tool's own content in a result, without what the host wraps around it (Codex puts
    "Wall time: …\nOutput:" before every result; Gemini CLI wraps each in <untrusted_context>)."""
    text = re.sub(r"\AWall time: [^\n]*\nOutput:\n", "", result.text)
    wrapped = re.fullmatch(r"<untrusted_context>\n(.*)\n</untrusted_context>", text, re.S)
    return wrapped.group(1) if wrapped else text


def form(result: ToolResult) -> str:
    """Whether the host forwarded the result as a JSON object ("json") or as text ("text")."""
    try:
        return "json" if isinstance(json.loads(content(result)), dict) else "text"
    except ValueError:
        return "text"


def reply(result: ToolResult) -> str:
    """The words the model reads: the text, or a JSON result's "message" (the reply text
    frs-mcp puts first in its structured content; empty when there is none)."""
    if form(result) == "text":
        return content(result)
    message = json.loads(content(result)).get("message")
    return message if isinstance(message, str) else ""


@dataclass
class Scenario:
    """The steps for one host, and what its model was shown at each of them."""

    tool: Callable[[str, dict[str, Any]], ToolCall]  # an frs tool called as the host names it
    load: Sequence[Step] = ()
    found: dict[str, Any] = field(default_factory=dict)

    def call(self, tool: str, **arguments: Any) -> Turn:
        return Turn("", (self.tool(tool, arguments),))

    def steps(self) -> list[Step]:
        def view_after_record(seen: Seen) -> Turn:
            return self.call("frs_view_thread")

        def stale(seen: Seen) -> Turn:
            # The view gave the revision; pass an older one, as after a missed change.
            revision = revision_in(seen.result.text)
            self.found["viewed revision"] = revision
            return self.call(
                "frs_compress_range",
                **{"from": 2, "to": 4, "summary": SUMMARY, "expected_revision": revision - 1},
            )

        def split(seen: Seen) -> Turn:
            # Recover from the error text alone: it names the revision to retry with.
            revision = find_int(r"retry with expected_revision=(\d+)", seen.result.text)
            self.found["current revision"] = revision
            return self.call(
                "frs_compress_range",
                **{"from": 2, "to": 4, "summary": SUMMARY, "expected_revision": revision},
            )

        def squash(seen: Seen) -> Turn:
            text = seen.result.text
            first = find_int(r"keeps them together is (\d+)\.\.\d+", text)
            last = find_int(r"keeps them together is \d+\.\.(\d+)", text)
            self.found["suggested"] = (first, last)
            return self.call(
                "frs_compress_range",
                **{
                    "from": first,
                    "to": last,
                    "summary": SUMMARY,
                    "expected_revision": self.found["current revision"],
                },
            )

        def alias(seen: Seen) -> Turn:
            text = seen.result.text
            self.found["alias"] = find_str(r"(SQ\.\d+@[0-9a-f]{8})", text)
            self.found["squashed revision"] = revision_in(text)
            return self.call("get_alias", alias=self.found["alias"])

        def restore(seen: Seen) -> Turn:
            return self.call(
                "frs_restore",
                alias=self.found["alias"].split("@")[0],
                expected_revision=self.found["squashed revision"],
            )

        def again(seen: Seen) -> Turn:
            return self.call("frs_view_thread")

        def end(seen: Seen) -> Turn:
            return Turn("The thread is back as it was; the cause is the missing lock in flush.")

        scenario: list[Step] = [
            self.call("frs_session", action="start", title=TITLE, goal="find the race"),
            self.call("frs_record", messages=THREAD),
            view_after_record,
            stale,
            split,
            squash,
            alias,
            restore,
            again,
            end,
        ]
        return [*self.load, *scenario]

    def script(self) -> Script:
        return Script(self.steps())

    def result(self, script: Script, label: str) -> ToolResult:
        """The result of the call made at step `label`, as the model received it next."""
        return script.seen_at(len(self.load) + LABELS.index(label) + 1).result

    def received(self, script: Script) -> dict[str, ToolResult]:
        return {label: self.result(script, label) for label in LABELS}

    def forms(self, script: Script) -> dict[str, str]:
        """Each result's form as the model received it: "json" or "text"."""
        return {label: form(result) for label, result in self.received(script).items()}

    def check(self, script: Script) -> None:
        """What the model must have received at each step, whatever the host."""
        script.check_done()
        got = self.received(script)
        text = {label: reply(result) for label, result in got.items()}
        assert TITLE in text["session"], text["session"]
        assert "revision" in text["session"], text["session"]
        view = text["view"]
        assert f'Thread "{TITLE}"\n' in view, view
        assert "[1] User: test_sync fails one run in five." in view, view
        assert "[tool_use:bash, cmd:pytest --count 20]" in view, view
        assert "· 6 messages in 6 entries" in view, view
        assert "Stale revision" in text["stale"], text["stale"]
        assert "would separate a tool call from its result" in text["split"], text["split"]
        assert self.found["suggested"] == (2, 5), self.found
        # For a squash, the model learns how to read it, how to undo it, and the new revision.
        alias = self.found["alias"]
        squashed = text["squash"]
        assert f'get_alias(alias="{alias}")' in squashed, squashed
        assert f'frs_restore(alias="{alias.split("@")[0]}")' in squashed, squashed
        assert f"revision {self.found['squashed revision']}" in squashed, squashed
        assert "Let me run it 20 times." in text["alias"], text["alias"]
        assert "no lock held" in text["alias"], text["alias"]
        assert f"Restored {alias.split('@')[0]}" in text["restore"], text["restore"]
        final = text["again"]
        assert "Summary of" not in final, final
        assert "[4] Assistant: Reading Syncer.flush." in final, final
        assert "· 6 messages in 6 entries" in final, final
