"""A runtime's own items kept beside a message (`Message.raw`), without its content twice.

`raw` is JSON text. Where the message's content appears in it exactly once as a JSON string
(as `json.dumps(content, ensure_ascii=False)` encodes it), the stored form (`fold`) is MARK,
then the text with that string replaced by HOLE's: the content is not stored twice. A runtime
that knows where its content sits hands in that form itself (`folded`). JSON text
never holds a bare NUL, so a stored text starting with MARK is folded and any other is whole.
Reading gives back exactly what was folded, as text (`unfold`) or parsed (`load`, which parses
only the short template and puts the content in place, no re-encoding).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The first character of a folded raw text.
MARK = "\x00"
#: The JSON string that stands for the content in a folded raw text.
HOLE = "\x00frs:content\x00"
_HOLE_JSON = json.dumps(HOLE)


def fold(raw: str, content: str) -> str:
    """`raw` as stored: folded when the content is in it once as a JSON string (and the
    template parses, with one HOLE), else `raw` itself."""
    if not content or raw.startswith(MARK) or _HOLE_JSON in raw:
        return raw
    encoded = json.dumps(content, ensure_ascii=False)
    at = raw.find(encoded)
    if at < 0 or raw.find(encoded, at + 1) >= 0:
        return raw
    template = raw[:at] + _HOLE_JSON + raw[at + len(encoded) :]
    try:
        holes = _holes(json.loads(template))
    except ValueError:  # the match was no whole JSON string (say, it began at an escaped quote)
        return raw
    return MARK + template if holes == 1 else raw


def folded(template: Any) -> str:
    """The stored form of a value already holding HOLE where the content goes: what a runtime
    that knows where its content sits hands in as `raw`, sparing `fold` its search."""
    return MARK + json.dumps(template, ensure_ascii=False, separators=(",", ":"))


def is_folded_well(raw: str) -> bool:
    """Whether a raw text starting with MARK is a template holding HOLE exactly once."""
    try:
        return _holes(json.loads(raw[1:])) == 1
    except ValueError:
        return False


def unfold(stored: str, content: str) -> str:
    """The raw text `fold` was given."""
    if not stored.startswith(MARK):
        return stored
    return stored[1:].replace(_HOLE_JSON, json.dumps(content, ensure_ascii=False), 1)


def load(stored: str, content: str) -> Any:
    """`json.loads(unfold(stored, content))`, without encoding the content to parse it again."""
    if not stored.startswith(MARK):
        return json.loads(stored)
    return _fill(json.loads(stored[1:]), content)


def load_all(raws: Sequence[Raw]) -> list[Any]:
    """`[raw.value() for raw in raws]`, parsed in one pass (a runtime reads fifty at a time)."""
    texts = [raw.stored[1:] if raw.stored.startswith(MARK) else raw.stored for raw in raws]
    values = json.loads(f"[{','.join(texts)}]")
    return [
        _fill(value, raw.content) if raw.stored.startswith(MARK) else value
        for value, raw in zip(values, raws, strict=True)
    ]


def _fill(value: Any, content: str) -> Any:
    if isinstance(value, str):
        return content if value == HOLE else value
    if isinstance(value, list):
        return [_fill(item, content) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, content) for key, item in value.items()}
    return value


def _holes(value: Any) -> int:
    if isinstance(value, str):
        return int(value == HOLE)
    if isinstance(value, list):
        return sum(_holes(item) for item in value)
    if isinstance(value, dict):
        return sum(_holes(item) for item in value.values())
    return 0


@dataclass(frozen=True, slots=True)
class Raw:
    """A runtime's items as a store holds them (`stored`, perhaps folded) with the content
    they may fold: what `Store.newest_entries` gives for an entry that has them."""

    stored: str
    content: str

    def text(self) -> str:
        return unfold(self.stored, self.content)

    def value(self) -> Any:
        return load(self.stored, self.content)
