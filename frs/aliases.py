"""Aliases: short names for text a view only previews, `FAMILY.name@sha8`.

`M.<number>` is a message's full text; `SQ.<n>` is what squash n replaced, rendered as it was.
The `@sha8` part (first 8 hex digits of the SHA-256 of the text) is optional; when given it
must match, so a model never reads different text than the one it was shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from frs.errors import InvalidAlias

_ALIAS = re.compile(r"^(M|SQ)\.([1-9][0-9]{0,11})(?:@([0-9a-fA-F]{8}))?$")


@dataclass(frozen=True, slots=True)
class AliasRef:
    family: str  # "M" or "SQ"
    n: int
    sha8: str | None

    @property
    def name(self) -> str:
        return f"{self.family}.{self.n}"


def parse_alias(alias: str) -> AliasRef:
    """Split `M.17`, `SQ.2@0b4f2d11`; raise InvalidAlias for anything else."""
    found = _ALIAS.match(alias.strip())
    if not found:
        raise InvalidAlias(alias)
    family, n, sha8 = found.groups()
    return AliasRef(family, int(n), sha8.lower() if sha8 else None)


def sha_matches(ref: AliasRef, sha256: str) -> bool:
    return ref.sha8 is None or sha256.startswith(ref.sha8)


@dataclass(frozen=True, slots=True)
class Page:
    """One page of an alias's text, and how to ask for the next."""

    alias: str
    heading: str
    text: str
    offset: int
    end: int
    size: int
    session_id: str | None = None  # given explicitly: the next call must name it too

    def render(self) -> str:
        lines = [
            f"{self.heading} · chars {self.offset:,}–{self.end:,} of {self.size:,}",
            self.text,
        ]
        if self.end < self.size:
            session = f', session_id="{self.session_id}"' if self.session_id else ""
            lines.append(
                f"… {self.size - self.end:,} more chars: "
                f'get_alias(alias="{self.alias}", offset={self.end}{session})'
            )
        return "\n".join(lines)
