"""Compact numbered text views of a thread, written for a model to read.

Every entry starts at column 0 as `[label] Role: ...`; every other line the content produces is
indented, and a content line that starts like one of our own markers (`[`, `(`, `\\`) gets a
backslash, so stored text can never forge an entry, a tool annotation or a thinking line.
Inside our lines, a tool's name or an argument key gets a backslash before `[ ] , : → ·`, and
a value before `[tool_` and `→`, so a name cannot pass for another call or argument either.
Invisible and bidirectional control characters are shown as `\\uXXXX`, and so is a newline
inside a one-line field (a tool's name, an argument key, the goal). Volatile facts (counts,
revision, tokens) sit on the last line only, so a view stays byte-identical up to its first
changed entry and a host's prompt cache keeps hitting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from frs.model import Checkpoint, Message, PlanStep, ToolCall
from frs.text import minify_json

INDENT = "    "
REPLY_INDENT = "  "  # replies under a user message, with show_times
_ROLE_LABEL = {
    "system": "System",
    "user": "User",
    "assistant": "Assistant",
    "tool": "Tool",
}
_STEP_MARK = {"done": "✓", "doing": "▶", "todo": "○"}
# Every control, format (bidi, zero-width, tags), line and paragraph separator character but
# tab; a newline reaches `escape` only inside one-line fields (a tool's name, an argument key).
_INVISIBLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f]"
)
_MARKER_START = ("[", "(", "\\")
_NAME_SHAPE = re.compile(r"[\\\[\],:→·]")
_VALUE_SHAPE = re.compile(r"\[(?=tool_)|→")
_FIELD_SHAPE = re.compile(r"[=()]")
_ANNOTATION_VALUE_CHARS = 60
# The keys an annotation prefers: best group first and, inside a group, in the order named (a
# grep's `query` over its `pattern`); a key with one of the group's endings comes after its names.
_TELLING_KEYS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("path", "file_path", "filepath", "file", "filename", "file_name", "target_file"),
        ("_path", "_file"),
    ),
    (("command", "cmd", "script", "code"), ()),
    # A folder says where a command ran, less than the command itself.
    (("dir", "directory", "cwd", "workdir"), ("_dir", "_directory")),
    (("url", "uri"), ("_url", "_uri")),
    (("query", "q", "pattern", "regex", "glob", "search"), ("_query", "_pattern")),
)
_PATHS = (0, 2)  # the groups whose values keep their tail when cut
_COMMAND = 1  # a command may be an argv list: `["bash", "-lc", "ls"]`
_TEXT = len(_TELLING_KEYS)  # a string under any other key
_OTHER = _TEXT + 1  # lists, objects, null, blank strings
_SCALAR = _TEXT + 2  # booleans and numbers
_CARD_LINE_CHARS = 240
_CARD_LINES = 3  # at most this many lines of head, and of tail
_GIST_CHARS = 60


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


def escape(line: str) -> str:
    """One line made safe to show: invisible characters spelled out, markers defused."""
    if not (line.isascii() and line.isprintable()):  # printable ASCII holds nothing to spell
        line = _INVISIBLE.sub(_spell, line)
    return "\\" + line if line.startswith(_MARKER_START) else line


def escape_inline(text: str) -> str:
    """Text inside one of our own lines (a name in `Tool NAME:` or `[tool_use:NAME]`): invisible
    characters and newlines spelled out; it cannot start a line, so markers need no defusing."""
    return _INVISIBLE.sub(_spell, text)


def escape_name(text: str) -> str:
    """A tool's name or an argument key inside our own lines: also every character that gives
    `[tool_use:NAME, KEY:VALUE]`, `Tool NAME:` or `→ M.n` their shape gets a backslash, so a
    name like `bash, cmd:ls` cannot pass for a call with that argument."""
    return escape_inline(_NAME_SHAPE.sub(r"\\\g<0>", text))


def _escape_value(text: str) -> str:
    """An argument's value, last in its annotation: what could start another annotation or a
    result's reference gets a backslash; brackets of code and JSON stay as they are."""
    return escape_inline(_VALUE_SHAPE.sub(r"\\\g<0>", text))


def _spell(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").split("\n")


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plural(count: int, word: str) -> str:
    """`1 entry`, `2 entries`, `1 message`, `3 messages`."""
    if count == 1:
        return f"1 {word}"
    return f"{count:,} {word[:-1]}ies" if word.endswith("y") else f"{count:,} {word}s"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"~{tokens / 1_000_000:.1f}M tokens"
    return f"~{tokens / 1000:.1f}k tokens" if tokens >= 1000 else f"~{tokens} tokens"


def annotate_call(call: ToolCall) -> str:
    """`[tool_use:NAME, KEY:VALUE]`: the argument that tells most (see `_telling`), its value cut
    to 60 characters (a path keeps its tail, `…/lib/spotter/indexer.ex`; others their head)."""
    key, value, rank = "", "", _OTHER
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        args = call.arguments
    if isinstance(args, dict) and args:
        key, rank = _telling(args)
        raw = args[key]
        value = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    elif isinstance(args, str) and args:
        value = args
    elif args not in ({}, "", None):
        value = json.dumps(args, ensure_ascii=False)
    value = " ".join(value.split())
    if rank in _PATHS:
        value = _path_tail(value, _ANNOTATION_VALUE_CHARS)
    else:
        value = _shorten(value, _ANNOTATION_VALUE_CHARS)
    inside = escape_name(call.name)
    if value:
        inside += f", {escape_name(key) + ':' if key else ''}{_escape_value(value)}"
    return "[tool_use:" + inside + "]"


def _telling(args: dict[str, object]) -> tuple[str, int]:
    """The key whose value tells most about a call, and its group: a file, then a command, a
    folder, a URL, a query or pattern, any other text, lists and objects, and last booleans and
    numbers (an Edit's `replace_all:false` says nothing). Ties go to the first key."""
    ranked = [(*_rank(key, value), index, key) for index, (key, value) in enumerate(args.items())]
    group, _, _, key = min(ranked)
    return key, group


def _rank(key: str, value: object) -> tuple[int, int]:
    """(group, place inside the group): lower tells more."""
    if isinstance(value, bool | int | float):
        return _SCALAR, 0
    text = isinstance(value, str) and value.strip() != ""
    if not (text or (isinstance(value, list) and value)):
        return _OTHER, 0
    name = key.lower()
    for group, (names, endings) in enumerate(_TELLING_KEYS):
        if not text and group != _COMMAND:
            continue
        if name in names:
            return group, names.index(name)
        if name.endswith(endings):
            return group, len(names)
    return (_TEXT, 0) if text else (_OTHER, 0)


def _path_tail(path: str, limit: int) -> str:
    """A long path cut from the start at a `/` (or `\\`) boundary, so its file name survives."""
    if len(path) <= limit:
        return path
    tail = path[-(limit - 2) :]
    cut = min((i for i in (tail.find("/"), tail.find("\\")) if i >= 0), default=-1)
    if cut < 0:  # one name longer than the limit: its end, with no separator to keep
        return "…" + path[-(limit - 1) :]
    return "…" + tail[cut:]


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
        head.append(_shorten(line, _CARD_LINE_CHARS))
        used += len(line)
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        if tail and (used + len(line) > half or len(tail) == _CARD_LINES):
            break
        tail.append(_shorten(line, _CARD_LINE_CHARS))
        used += len(line)
    tail.reverse()
    omitted = len(lines) - len(head) - len(tail)
    middle = [f"… {omitted:,} lines …"] if omitted else []
    return head + middle + tail


def _body_lines(message: Message, preview_chars: int) -> tuple[str, list[str]]:
    """The text after `Role:` on the first line, and the continuation lines (unindented)."""
    content = message.content
    if message.role == "tool":
        content = minify_json(content)
    if len(content) > preview_chars:
        size = f"{len(message.content):,} chars · M.{message.number}@{message.sha8}"
        return size, card(content, preview_chars)
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


def _message_lines(entry: Entry, preview_chars: int) -> list[str]:
    message = entry.message
    if message.kind == "summary":
        alias = f"SQ.{message.squash_n}@{(message.squash_sha256 or '')[:8]}"
        prefix = f"{summary_prefix(message)} ({alias})"
        first, *rest = split_lines(message.content)
    else:
        prefix = _ROLE_LABEL[message.role]
        if message.role == "tool" and message.name:
            prefix += " " + escape_name(message.name)
        first, rest = _body_lines(message, preview_chars)
    lines = [_marker(entry, prefix, first)]
    lines.extend(INDENT + escape(line) for line in rest)
    for call in message.tool_calls:
        lines.extend(_call_lines(message, call, preview_chars))
    return lines


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


def render_originals(messages: Sequence[Message]) -> str:
    """What a squash replaced, message by message, whole: what `get_alias("SQ.n")` pages.

    Each message gets a header at column 0, `[n] Role:` (n its permanent number; a summary
    `[a–b] Summary of k messages (SQ.m@sha8):`, a tool result `[n] Tool NAME (answers ID):`),
    then every line of its text indented by 4 spaces: the content uncut and as recorded (a
    result's JSON is not reformatted), then for each tool call a `[tool_use:NAME id=ID]` line and
    its arguments. As in the views, a text line that starts like a marker (`[`, `(`, `\\`) gets
    a backslash and an invisible or control character is spelled `\\uXXXX`, so no stored text
    can forge a header or a call. To recover a message's text, drop each line's 4-space indent
    and then one leading backslash: that gives `get_alias("M.n")` byte for byte, unless the text
    holds an invisible character (spelled out) or a name or id holds `[ ] , : → · = ( ) \\`
    (each shown after a backslash); `M.n` always gives the exact bytes.
    """
    lines: list[str] = []
    for message in messages:
        lines.extend(render_original(message))
    return "\n".join(lines)


def render_original(message: Message) -> list[str]:
    """One original message: its header and its indented, escaped lines (see above)."""
    lines = [f"[{_original_label(message)}] {_original_role(message)}:"]
    if message.content:
        lines.extend(_original_lines(message.content))
    for call in message.tool_calls:
        lines.append(f"{INDENT}[tool_use:{_escape_field(call.name)} id={_escape_field(call.id)}]")
        lines.extend(_original_lines(call.arguments))
    return lines


def _original_label(message: Message) -> str:
    if message.ord_last != message.ord:
        return f"{message.ord}–{message.ord_last}"
    return str(message.ord)


def _original_role(message: Message) -> str:
    if message.kind == "summary":
        alias = f"SQ.{message.squash_n}@{(message.squash_sha256 or '')[:8]}"
        return f"{summary_prefix(message)} ({alias})"
    role = _ROLE_LABEL[message.role]
    if message.name:
        role += " " + _escape_field(message.name)
    if message.tool_call_id is not None:
        role += f" (answers {_escape_field(message.tool_call_id)})"
    return role


def _original_lines(text: str) -> list[str]:
    # Split on "\n" only: a "\r" stays in its line (spelled out), so a CRLF text keeps its bytes.
    return [INDENT + escape(line) for line in text.split("\n")]


def _escape_field(text: str) -> str:
    """A name or id in an original's header or call line: as `escape_name`, and `= ( )` too, so
    `[tool_use:NAME id=ID]` and `Tool NAME (answers ID):` split one way only."""
    return _FIELD_SHAPE.sub(r"\\\g<0>", escape_name(text))


def one_line(entry: Entry, width: int = 100) -> str:
    """The entry shrunk to one line: its first words, its calls by name, its alias. The alias
    goes without its @sha8 (a third of the line's tokens); `get_alias` takes it either way."""
    message = entry.message
    first = _shorten(" ".join(message.content.split()), width)
    calls = "".join(f" [tool_use:{escape_name(c.name)}]" for c in message.tool_calls)
    if message.kind == "summary":
        what = f"{summary_prefix(message)} (SQ.{message.squash_n})"
        return f"{_marker(entry, what, '')} {escape(first)}"
    role = _ROLE_LABEL[message.role]
    if message.role == "tool" and message.name:
        role += " " + escape_name(message.name)
    return f"{_marker(entry, role, '')} {escape(first)}{calls} · M.{message.number}"


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
        text += "; " + ", ".join(_times(escape_name(_shorten(n, 24)), c) for n, c in top)
    said = next((m for m in members if m.role != "tool" and m.content.strip()), None)
    if said is not None:
        text += " · " + escape_inline(_shorten(" ".join(said.content.split()), _GIST_CHARS))
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
