"""Compact numbered text views of a thread, written for a model to read.

Every entry starts at column 0 as `[label] Role: ...`, every other line is indented, and
stored text is escaped so it can never forge one of our lines (`frs.escaping`). A message
shows whole or as a card (head, tail, alias), one line, or inside a group line; a tool call
by its telling argument (`frs.annotations`). Volatile facts (counts, revision, tokens) sit on
the last line only, so a view stays byte-identical up to its first changed entry and a host's
prompt cache keeps hitting.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from frs.annotations import annotate_call
from frs.escaping import escape, escape_inline, escape_name, escape_value
from frs.mentions import error_line, paths
from frs.model import Checkpoint, Message, PlanStep, ToolCall
from frs.text import minify_json, shorten

INDENT = "    "
REPLY_INDENT = "  "  # replies under a user message, with show_times
ROLE_LABEL = {
    "system": "System",
    "user": "User",
    "assistant": "Assistant",
    "tool": "Tool",
}
#: The name a host's compaction summary is recorded under (`frs.host_threads`): the entry
#: is labelled as what it is, not as the user's words.
COMPACTION = "compaction"
_STEP_MARK = {"done": "✓", "doing": "▶", "todo": "○"}
_CARD_LINE_CHARS = 240
_CARD_LINES = 3  # at most this many lines of head, and of tail
_GIST_CHARS = 60
# A one-line card is the smallest a budgeted view shrinks an entry to, so it must stay small
# whatever the message holds (200 calls of 400-character names made it 60,000 tokens): this
# many calls by name, each name cut to this many characters, then how many more.
_LINE_CALLS = 3
_LINE_NAME_CHARS = 40
# And the file paths it names, a few of them, and a tool result's first error line.
_LINE_PATHS = 4
_CARD_PATHS = 8
_LINE_PATH_CHARS = 80
_LINE_ERROR_CHARS = 90


@dataclass(frozen=True, slots=True)
class Entry:
    """One numbered line group: a live message and what is shown with it."""

    label: str  # "7" in position mode, "7" or "4–8" in absolute mode
    message: Message
    thinking: tuple[Message, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()  # marks that follow this entry
    members: tuple[Message, ...] = ()  # a merged run: every message it shows, in order
    headings: tuple[str, ...] = ()  # lines before the entry (a focus layer's goal)
    stamp: str = ""  # "2025-01-02 10:00" with show_times
    reply: bool = False  # shown indented under the user message it answers


def split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").split("\n")


def plural(count: int, word: str) -> str:
    """`1 entry`, `2 entries`, `1 message`, `3 messages`."""
    if count == 1:
        return f"1 {word}"
    return f"{count:,} {word[:-1]}ies" if word.endswith("y") else f"{count:,} {word}s"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"~{tokens / 1_000_000:.1f}M tokens"
    return f"~{tokens / 1000:.1f}k tokens" if tokens >= 1000 else f"~{tokens} tokens"


def card(text: str, cap: int) -> list[str]:
    """Head and tail of a long text with the middle counted; lines are not yet indented."""
    lines = split_lines(text)
    half = max(cap // 2, 40)
    if len(lines) == 1:
        line = lines[0]
        omitted = len(line) - 2 * half
        return [line[:half] + "…", f"… {omitted:,} chars …", "…" + line[-half:]]
    head: list[str] = []
    used = 0
    for line in lines:
        if head and (used + len(line) > half or len(head) == _CARD_LINES):
            break
        head.append(shorten(line, _CARD_LINE_CHARS))
        used += len(line)
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        if tail and (used + len(line) > half or len(tail) == _CARD_LINES):
            break
        tail.append(shorten(line, _CARD_LINE_CHARS))
        used += len(line)
    tail.reverse()
    omitted = len(lines) - len(head) - len(tail)
    middle = [f"… {plural(omitted, 'line')} …"] if omitted else []
    return head + middle + tail


def _card_files(content: str, shown: str) -> list[str]:
    """`files: src/a.py, src/b.py +3 files`: the paths a card's cut middle named, so the card
    still says which files the message was about."""
    new = [p for p in paths([content]) if p not in shown]
    if not new:
        return []
    listed = ", ".join(shorten(p, _LINE_PATH_CHARS) for p in new[:_CARD_PATHS])
    more = len(new) - _CARD_PATHS
    return [f"files: {listed}" + (f" +{plural(more, 'file')}" if more > 0 else "")]


def _body_lines(message: Message, preview_chars: int) -> tuple[str, list[str]]:
    """The text after `Role:` on the first line, and the continuation lines (unindented)."""
    content = message.content
    if message.role == "tool":
        content = minify_json(content)
    if len(content) > preview_chars:
        size = f"{len(message.content):,} chars · M.{message.number}@{message.sha8}"
        shown = card(content, preview_chars)
        return size, shown + _card_files(content, "\n".join(shown))
    lines = split_lines(content)
    return lines[0], lines[1:]


def render_entry(entry: Entry, preview_chars: int) -> list[str]:
    """The lines of one entry; the first starts with `[label]`, the rest are indented."""
    if entry.members:
        lines = _run_lines(entry, preview_chars)
    else:
        lines = _message_lines(entry, preview_chars)
    for thought in entry.thinking:
        thought_lines = split_lines(thought.content)
        lines.append(INDENT + "(thinking) " + escape(thought_lines[0]))
        lines.extend(INDENT + INDENT + escape(line) for line in thought_lines[1:])
    if entry.reply:
        lines = [REPLY_INDENT + line for line in lines]
    return [*entry.headings, *lines, *(checkpoint_line(mark) for mark in entry.checkpoints)]


def _marker(entry: Entry, prefix: str, first: str) -> str:
    stamp = f" [{escape_inline(entry.stamp)}]" if entry.stamp else ""
    head = f"[{entry.label}]{stamp} {prefix}:"
    return f"{head} {escape(first)}" if first else head


def role_label(message: Message, name: Callable[[str], str] = escape_name) -> str:
    """`User`, `Tool bash`, or `Host compaction` for the summary a host replaced its history
    with: who an entry's words are from, as every view shows it (`name` escapes a tool's)."""
    if message.role == "user" and message.name == COMPACTION:
        return "Host compaction"
    role = ROLE_LABEL[message.role]
    if message.role == "tool" and message.name:
        role += " " + name(message.name)
    return role


def _message_lines(entry: Entry, preview_chars: int) -> list[str]:
    prefix, first, rest = _message_parts(entry.message, preview_chars)
    return [_marker(entry, prefix, first), *rest]


#: Messages whose parts were rendered lately (`_message_parts`), at most `PARTS_KEPT` of them,
#: each of at most `PARTS_CHARS` characters (the key holds the text): a view shows mostly what
#: the one before it showed, and rendering a message's parts (cards, JSON minified, calls
#: annotated, every line escaped) was most of a view's time, 2 of 3.5 ms for `last=50`.
PARTS_KEPT = 1024
PARTS_CHARS = 8192
_PARTS: OrderedDict[tuple[object, ...], tuple[str, str, tuple[str, ...]]] = OrderedDict()


def _message_parts(message: Message, preview_chars: int) -> tuple[str, str, tuple[str, ...]]:
    """What follows `[label]` on an entry's first line (the prefix and the first line of its
    text), and its other lines: the message's own, the same in every view that shows it."""
    key: tuple[object, ...] | None = None
    if len(message.content) <= PARTS_CHARS:
        key = (
            message.content, message.tool_calls, message.number, message.sha256, message.kind,
            message.role, message.name, message.covered, message.squash_n,
            message.squash_sha256, preview_chars,
        )  # fmt: skip
        found = _PARTS.get(key)
        if found is not None:
            _PARTS.move_to_end(key)
            return found
    if message.kind == "summary":
        alias = f"SQ.{message.squash_n}@{(message.squash_sha256 or '')[:8]}"
        prefix = f"{summary_prefix(message)} ({alias})"
        first, *rest = split_lines(message.content)
    else:
        prefix = role_label(message)
        first, rest = _body_lines(message, preview_chars)
    lines = [INDENT + escape(line) for line in rest]
    for call in message.tool_calls:
        lines.extend(_call_lines(message, call, preview_chars))
    parts = (prefix, first, tuple(lines))
    if key is not None:
        _PARTS[key] = parts
        if len(_PARTS) > PARTS_KEPT:
            _PARTS.popitem(last=False)
    return parts


def _call_lines(
    message: Message, call: ToolCall, preview_chars: int, result: str = ""
) -> list[str]:
    """The call's annotation; arguments over the cap also get a card (a Write call carrying a
    whole file shows its head and tail, like a long tool result)."""
    lines = [INDENT + _call_note(message, call, preview_chars, result)]
    if len(call.arguments) > preview_chars:
        shown = card(minify_json(call.arguments), preview_chars)
        lines.extend(INDENT + INDENT + escape(line) for line in shown)
    return lines


def _call_note(message: Message, call: ToolCall, preview_chars: int, result: str = "") -> str:
    note = annotate_call(call)[:-1]
    if len(call.arguments) > preview_chars:
        note += f", {len(call.arguments):,} chars · M.{message.number}@{message.sha8}"
    return note + result + "]"


def _reference(message: Message) -> str:
    return f"M.{message.number}@{message.sha8} · {len(message.content):,} chars"


def _run_lines(entry: Entry, preview_chars: int) -> list[str]:
    """A run merged into one entry: the assistant's texts in order, each tool call annotated
    where it happened, with a reference to its result instead of the result itself."""
    members = entry.members
    answered: dict[tuple[int | None, str], Message] = {}
    for member in members:
        if member.role == "tool" and member.tool_call_id is not None:
            answered.setdefault((member.answers, member.tool_call_id), member)
    shown: set[int | None] = set()
    lines: list[str] = []
    for member in members:
        if member.role == "assistant":
            first, rest = _body_lines(member, preview_chars)
            texts = [first, *rest] if first or rest else []
            if not lines:
                # The entry opens on its first line with text, not on blank ones.
                while texts and not texts[0].strip():
                    texts = texts[1:]
                lines.append(_marker(entry, "Assistant", texts[0] if texts else ""))
                texts = texts[1:]
            lines.extend(INDENT + escape(text) for text in texts)
            for call in member.tool_calls:
                result = answered.get((member.number, call.id))
                suffix = ""
                if result is not None:
                    shown.add(result.number)
                    suffix = f" → {_reference(result)}"
                lines.extend(_call_lines(member, call, preview_chars, suffix))
        elif member.number not in shown:
            if not lines:
                lines.append(_marker(entry, "Assistant", ""))
            name = escape_name(member.name or "tool")
            lines.append(INDENT + f"[tool_result:{name} → {_reference(member)}]")
    return lines


def one_line(entry: Entry, width: int = 100) -> str:
    """The entry shrunk to one line: its first words, its calls by name, its alias. The alias
    goes without its @sha8 (a third of the line's tokens); `get_alias` takes it either way."""
    message = entry.message
    first = shorten(" ".join(message.content.split()), width)
    if message.kind == "summary":
        what = f"{summary_prefix(message)} (SQ.{message.squash_n})"
        return f"{_marker(entry, what, '')} {escape(first)}"
    role = role_label(message, _line_name)
    calls = _line_calls(message)
    facts = _line_facts(message, first + calls)
    return f"{_marker(entry, role, '')} {escape(first)}{calls}{facts} · M.{message.number}"


def _line_name(name: str) -> str:
    return escape_name(shorten(name, _LINE_NAME_CHARS))


def _line_calls(message: Message) -> str:
    """` [tool_use:bash, command:pytest -x] [tool_use:b] … +197 calls`: the first calls by
    name and telling argument (what an agent looks for again: the file, the command)."""
    calls = message.tool_calls
    shown = "".join(
        " " + annotate_call(ToolCall(c.id, shorten(c.name, _LINE_NAME_CHARS), c.arguments))
        for c in calls[:_LINE_CALLS]
    )
    more = len(calls) - _LINE_CALLS
    return shown + (f" +{plural(more, 'call')}" if more > 0 else "")


def _line_facts(message: Message, shown: str) -> str:
    """` · src/a.py, src/b.py +3 files · ValueError: bad input`: the file paths the message
    names that the line does not show yet (the first few, then how many more), and a tool
    result's first error line."""
    found = paths([message.content, *(c.arguments for c in message.tool_calls)])
    new = [p for p in found if p not in shown]
    text = ""
    if new:
        listed = ", ".join(escape_value(shorten(p, _LINE_PATH_CHARS)) for p in new[:_LINE_PATHS])
        more = len(new) - _LINE_PATHS
        text += f" · {listed}" + (f" +{plural(more, 'file')}" if more > 0 else "")
    error = error_line(message.content) if message.role == "tool" else None
    if error and error[:_GIST_CHARS] not in shown:
        text += " · " + escape_value(shorten(error, _LINE_ERROR_CHARS))
    return text


def summary_prefix(message: Message) -> str:
    """`Summary of 3 messages` (of 1 message): how a summary names what it stands for."""
    return f"Summary of {plural(message.covered, 'message')}"


def group_line(label: str, members: Sequence[Message]) -> str:
    """Entries too old to show one by one, as one line: `[17–24] user, assistant ×4, tool ×3;
    bash ×3, edit`. What they hold by role (a count when more than one), then the tools they
    called, then the gist: the first words someone other than a tool wrote there."""
    lanes: dict[str, int] = {}
    calls: dict[str, int] = {}
    for message in members:
        lanes[message.lane] = lanes.get(message.lane, 0) + 1
        for call in message.tool_calls:
            calls[call.name] = calls.get(call.name, 0) + 1
    held = ", ".join(_times(lane, count) for lane, count in sorted(lanes.items(), key=_lane_order))
    text = f"[{label}] {held}"
    if calls:
        top = sorted(calls.items(), key=lambda item: (-item[1], item[0]))[:3]
        text += "; " + ", ".join(_times(escape_name(shorten(n, 24)), c) for n, c in top)
    said = next((m for m in members if m.role != "tool" and m.content.strip()), None)
    if said is not None:
        text += " · " + escape_inline(shorten(" ".join(said.content.split()), _GIST_CHARS))
    return text


def _times(name: str, count: int) -> str:
    return f"{name} ×{count}" if count > 1 else name


def _lane_order(item: tuple[str, int]) -> int:
    order = ("system", "user", "assistant", "tool", "summary")
    return order.index(item[0]) if item[0] in order else len(order)


def checkpoint_line(mark: Checkpoint) -> str:
    return f'— checkpoint "{escape_inline(mark.name)}" · revision {mark.revision}'


def plan_line(steps: Sequence[PlanStep]) -> str:
    return "Plan: " + " · ".join(f"{_STEP_MARK[s.status]} {escape_inline(s.text)}" for s in steps)


def lane_counts(lanes: dict[str, int]) -> str:
    return ", ".join(f"{lane} {count:,}" for lane, count in lanes.items() if count)


def render_view(
    title: str,
    goal: str,
    plan: Sequence[PlanStep],
    leading: Iterable[str],
    entries: Iterable[Entry],
    footer: str,
    preview_chars: int,
) -> str:
    """A whole view: title line, goal and plan, entries, and the volatile footer last."""
    lines = [f'Thread "{escape_inline(title)}"']
    if goal:
        lines.append("Goal: " + escape_inline(goal))
    if plan:
        lines.append(plan_line(plan))
    lines.extend(leading)
    for entry in entries:
        lines.extend(render_entry(entry, preview_chars))
    lines.append(footer)
    return "\n".join(lines)
