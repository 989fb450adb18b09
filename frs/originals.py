"""Complete originals: what a squash replaced, message by message, whole (`get_alias("SQ.n")`).

Unlike a view, nothing is cut: every line of every message, and each tool call with its id and
exact arguments, escaped as the views escape (`frs.escaping`), so the text is both safe to
show and recoverable.
"""

from __future__ import annotations

from collections.abc import Sequence

from frs.escaping import escape, escape_field
from frs.model import Message
from frs.views.render import INDENT, ROLE_LABEL, summary_prefix


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
    return "\n".join(render_parts(messages))


def render_parts(messages: Sequence[Message]) -> list[str]:
    """Each message's part of `render_originals`, which joins the parts with newlines: a page
    of a large squash renders only the members it overlaps (`part_starts` says where)."""
    return ["\n".join(render_original(message)) for message in messages]


def part_starts(parts: Sequence[str]) -> list[int]:
    """Where each part starts in `"\n".join(parts)`."""
    starts, at = [], 0
    for part in parts:
        starts.append(at)
        at += len(part) + 1
    return starts


def render_original(message: Message) -> list[str]:
    """One original message: its header and its indented, escaped lines (see above)."""
    lines = [f"[{_original_label(message)}] {_original_role(message)}:"]
    if message.content:
        lines.extend(_original_lines(message.content))
    for call in message.tool_calls:
        lines.append(f"{INDENT}[tool_use:{escape_field(call.name)} id={escape_field(call.id)}]")
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
    role = ROLE_LABEL[message.role]
    if message.name:
        role += " " + escape_field(message.name)
    if message.tool_call_id is not None:
        role += f" (answers {escape_field(message.tool_call_id)})"
    return role


def _original_lines(text: str) -> list[str]:
    # Split on "\n" only: a "\r" stays in its line (spelled out), so a CRLF text keeps its bytes.
    return [INDENT + escape(line) for line in text.split("\n")]
