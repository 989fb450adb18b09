"""Aliases: short names for text a view only previews, `FAMILY.name@sha8`.

`M.<number>` is a message's full text; `SQ.<n>` is what squash n replaced, rendered as it was;
any other capitalised prefix names a registered source (`H.main`, `S.entities`, `D.readme`).
The `@sha8` part (first 8 hex digits of the SHA-256 of the text) is optional; when given it
must match, so a model never reads different text than the one it was shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from frs.errors import AliasNotFound, InvalidAlias

RESERVED = ("M", "SQ")
#: The seed's source families; any other capitalised prefix is allowed too.
SOURCE_PREFIXES = {
    "S": "schemas",
    "H": "handlers and code",
    "P": "prep",
    "A": "decisions (ADRs)",
    "PR": "profiles",
    "T": "tests",
    "D": "docs",
}
_ALIAS = re.compile(r"^([A-Z][A-Z0-9]{0,7})\.([A-Za-z0-9_-]{1,64})(?:@([0-9a-fA-F]{8}))?$")
_PREFIX = re.compile(r"^[A-Z][A-Z0-9]{0,7}$")
_NUMBER = re.compile(r"^[1-9][0-9]{0,11}$")


@dataclass(frozen=True, slots=True)
class AliasRef:
    family: str  # "M", "SQ", or a source prefix
    key: str  # the part after the dot
    sha8: str | None

    @property
    def name(self) -> str:
        return f"{self.family}.{self.key}"

    @property
    def n(self) -> int:
        return int(self.key)

    @property
    def is_source(self) -> bool:
        return self.family not in RESERVED


def parse_alias(alias: str) -> AliasRef:
    """Split `M.17`, `SQ.2@0b4f2d11`, `H.main`; raise InvalidAlias for anything else."""
    found = _ALIAS.match(alias.strip())
    if not found:
        raise InvalidAlias(alias)
    family, key, sha8 = found.groups()
    if family in RESERVED and not _NUMBER.match(key):
        raise InvalidAlias(alias, f"{family}. takes a number")
    return AliasRef(family, key, sha8.lower() if sha8 else None)


def parse_source_alias(alias: str) -> AliasRef:
    """A source alias to register: `PREFIX.name`, with no @sha8 and no reserved prefix."""
    ref = parse_alias(alias)
    if not ref.is_source:
        raise InvalidAlias(alias, f"{ref.family}. is reserved for {_reserved(ref.family)}")
    if ref.sha8:
        raise InvalidAlias(alias, "register a source without @sha8; it is computed")
    return ref


def check_prefix(prefix: str) -> str:
    if not _PREFIX.match(prefix) or prefix in RESERVED:
        raise InvalidAlias(prefix, "a prefix is 1-8 capitals or digits, starting with a capital")
    return prefix


def derive_name(file_name: str) -> str:
    """A source name from a file name: its stem, with anything but [A-Za-z0-9_-] as `_`."""
    stem = file_name.rsplit("/", 1)[-1]
    stem = stem.split(".", 1)[0] if not stem.startswith(".") else stem.lstrip(".")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", stem)[:64]
    return name or "file"


def derive_prefix(file_name: str) -> str:
    """The family a file most likely belongs to, when the caller names none."""
    base = file_name.rsplit("/", 1)[-1].lower()
    if base.startswith("test_") or "_test." in base or ".test." in base or ".spec." in base:
        return "T"
    suffix = base.rsplit(".", 1)[-1] if "." in base else ""
    if suffix in ("md", "rst", "txt", "adoc"):
        return "D"
    if suffix in ("sql", "proto", "graphql", "xsd", "avsc") or base.endswith(".schema.json"):
        return "S"
    if suffix in ("yaml", "yml", "toml", "ini", "cfg"):
        return "PR"
    return "H"


def sha_matches(ref: AliasRef, sha256: str) -> bool:
    return ref.sha8 is None or sha256.startswith(ref.sha8)


def sha_mismatch(given: str, actual: str) -> AliasNotFound:
    """The refusal of an alias whose @sha8 names other text than the stored one (`actual`)."""
    return AliasNotFound(
        given,
        f"its @sha8 does not match the stored text, which is {actual}. The text you saw may be "
        f"from another session or database; use {actual} or view the thread again.",
    )


def _reserved(family: str) -> str:
    return "messages (M.<number>)" if family == "M" else "squashes (SQ.<n>)"


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
    max_chars: int | None = None  # given explicitly: the next call asks for the same size

    def render(self) -> str:
        lines = [f"{self.heading} · chars {self.offset:,}–{self.end:,} of {self.size:,}", self.text]
        if self.end < self.size:
            session = f", max_chars={self.max_chars}" if self.max_chars else ""
            session += f', session_id="{self.session_id}"' if self.session_id else ""
            lines.append(
                f"… {self.size - self.end:,} more chars: "
                f'get_alias(alias="{self.alias}", offset={self.end}{session})'
            )
        return "\n".join(lines)
