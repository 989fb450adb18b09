"""What a message mentions that an agent greps for later: file paths and error lines.

A one-line card keeps them when it drops the rest of a message, so a view that shrank an entry
still answers "which file was that?" and "what failed?".
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
_ERROR_LINE_CHARS = 400  # a longer "line" is data (a minified blob), not an error message


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
