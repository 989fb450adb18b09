"""What a message mentions that an agent greps for later: file paths and error lines.

A one-line card keeps them when it drops the rest of a message, so a view that shrank an entry
still answers "which file was that?" and "what failed?". A fact card and a digest keep every
error line of a result (`error_lines`) but those that quote source code (a grep hit on `raise
ValueError`, a diff's `+    except OSError:`), which name an error without one having happened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A token with at least one `/` whose last name has an extension: `src/app/main.py`,
# `/tmp/x/Cargo.toml`, `./a.txt`; never part of a URL (`://` before it).
_PATH = re.compile(
    r"(?<![\w:/.~-])((?:\.{1,2}/|~/|/)?(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7})"
    r"(?![\w/])"
)
_ERROR = re.compile(r"Error\b|Exception\b|Traceback|FAILED|\berror(?::|\[)|panicked|fatal:|\bFAIL:")
#: A word each of those needs: a line without one is not searched (a long session's outputs
#: have hundreds of thousands of lines, and the pattern costs microseconds a line).
_ERROR_WORDS = ("Error", "Exception", "Traceback", "FAIL", "error", "panicked", "fatal:")
_ERROR_LINE_CHARS = 400  # a longer "line" is data (a minified blob), not an error message
# A line quoted from a file rather than printed by what failed: cat -n's or grep -n's line
# number (`12:`, `12-`, `12→`, `12<tab>`), or a diff's, a list's or a quote's mark.
_QUOTED = re.compile(r"^(?:\d+(?:[:\-→\t]|\s{2})|[-+*>•]\s)")
# Before source code: grep's `path:12:`, a diff's mark with no space after it.
_SOURCE_PREFIX = re.compile(r"^(?:[\w./@+-]+:\d+[:\-]\s*|[-+](?=\S))")
# A field that says there was none: Gemini CLI's `Error: (none)`.
_NO_ERROR = re.compile(r"(?i)^errors?:\s*(?:\(none\)|none|null|0|\(empty\))$")
# Source code, a comment or a docstring: what a line that merely names an error starts with.
_CODE = re.compile(
    r"^(?:raise|[Rr]aises|except|try|catch|throw|throws|def|class|import|from \S+ import|assert"
    r"|with|if|elif|else|return|yield|pub|fn|let|const|var|new|case|match)\b"
    r"|^(?:#|//|/\*|\*|\"\"\"|\'\'\'|@)"
)


def paths(texts: Iterable[str]) -> list[str]:
    """The distinct file paths in `texts`, in the order they first appear."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _PATH.finditer(text):
            found.setdefault(match.group(1), None)
    return list(found)


def error_line(text: str) -> str | None:
    """The first line of `text` that names an error, stripped, or None."""
    for line in text.splitlines():
        stripped = line.strip()
        if len(stripped) <= _ERROR_LINE_CHARS and _ERROR.search(stripped):
            return " ".join(stripped.split())
    return None


def error_lines(text: str, limit: int = 8) -> list[str]:
    """The distinct lines of `text` that name an error, stripped and with runs of whitespace
    made one space, in order, at most `limit`; a line that quotes source code is not one."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if len(stripped) > _ERROR_LINE_CHARS or not any(w in stripped for w in _ERROR_WORDS):
            continue
        if not _ERROR.search(stripped):
            continue
        if _QUOTED.match(stripped) or _CODE.match(_SOURCE_PREFIX.sub("", stripped, count=1)):
            continue
        if _NO_ERROR.match(stripped):
            continue
        found.setdefault(" ".join(stripped.split()), None)
        if len(found) == limit:
            break
    return list(found)
