"""Escaping: stored text shown inside our own lines can never forge them.

Every entry of a view starts at column 0 as `[label] Role: ...`; every other line the content
produces is indented, and a content line that starts like one of our own markers (`[`, `(`,
`\\`) gets a backslash, so stored text can never forge an entry, a tool annotation or a
thinking line. Inside our lines, a tool's name or an argument key gets a backslash before
`[ ] , : → ·`, and a value before `[tool_` and `→`, so a name cannot pass for another call or
argument either. Invisible and bidirectional control characters are shown as `\\uXXXX`, and
so is a newline inside a one-line field (a tool's name, an argument key, the goal).
"""

from __future__ import annotations

import re

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


def escape_value(text: str) -> str:
    """An argument's value, last in its annotation: what could start another annotation or a
    result's reference gets a backslash; brackets of code and JSON stay as they are."""
    return escape_inline(_VALUE_SHAPE.sub(r"\\\g<0>", text))


def escape_field(text: str) -> str:
    """A name or id in an original's header or call line: as `escape_name`, and `= ( )` too, so
    `[tool_use:NAME id=ID]` and `Tool NAME (answers ID):` split one way only."""
    return _FIELD_SHAPE.sub(r"\\\g<0>", escape_name(text))


def _spell(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
