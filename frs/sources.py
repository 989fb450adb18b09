"""Context sources: how they are named, described and checked for drift.

A file source is hashed when registered; every later read re-hashes it, and a different hash is
drift, reported with the old and new sha8 while the current text is served.
"""

from __future__ import annotations

from dataclasses import dataclass

from frs.aliases import check_prefix, derive_name, derive_prefix, parse_source_alias
from frs.errors import InvalidAlias
from frs.model import Source
from frs.render import escape_inline


@dataclass(frozen=True, slots=True)
class SourceState:
    """A source as it is now: its current hash, or why it cannot be read."""

    source: Source
    sha256: str | None  # None when the file cannot be read now
    problem: str = ""

    @property
    def changed(self) -> bool:
        return self.sha256 is not None and self.sha256 != self.source.sha256

    def line(self) -> str:
        """`H.main@9f8e7d6c handlers/main.py · 120 lines`, with drift marked."""
        s = self.source
        text = f"{s.alias}@{s.sha8} {s.where} · {s.lines:,} line{'' if s.lines == 1 else 's'}"
        if self.sha256 is None:
            text = f"{text} · unreadable: {self.problem}"
        elif self.changed:
            text = f"{text} · changed: now @{self.sha256[:8]}"
        # A file's name may hold a newline: spelled out, it cannot start a line of its own.
        return escape_inline(text)


def source_alias(alias: str | None, file_name: str | None) -> str:
    """The alias to register: given in full, a prefix plus the file's name, or derived."""
    if alias is not None and "." in alias:
        return parse_source_alias(alias).name
    if file_name is None:
        raise InvalidAlias(
            alias or "",
            "inline text needs a full alias such as D.notes or A.decision",
        )
    prefix = check_prefix(alias) if alias is not None else derive_prefix(file_name)
    return f"{prefix}.{derive_name(file_name)}"


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
