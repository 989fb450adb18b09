"""Where each member of a JSON object or array sits in the text: the gateway splices by it.

`json.loads` forgets positions; these functions walk one level of an object or array and give
each member's value with its character span, decoding values with the standard library's C
scanner (`raw_decode`), so a body is never re-serialised. Raises ValueError on anything that is
not JSON, which the caller answers by forwarding the original bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from frs.wire.requests import Span

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

#: Reads the value that starts at a character and returns it (in any form) with its end: how
#: a caller descends into a member instead of decoding it whole (each character read once).
Reader = Callable[[str, int], tuple[Any, int]]


def decode(text: str, at: int) -> tuple[Any, int]:
    """The JSON value starting at `at`, and where it ends."""
    return _DECODER.raw_decode(text, at)


@dataclass(frozen=True, slots=True)
class Member:
    key: str | None  # None for an array item
    span: Span  # the value's text
    value: Any


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def object_members(
    text: str, start: int, descend: Mapping[str, Reader] | None = None
) -> tuple[list[Member], Span]:
    """The members of the object whose `{` is at or after `start` (spaces skipped), and the
    object's own span; a member named in `descend` is read by its reader, not decoded."""
    at = _skip(text, start)
    if text[at : at + 1] != "{":
        raise ValueError(f"expected an object at character {at}")
    first = at
    at = _skip(text, at + 1)
    members: list[Member] = []
    if text[at : at + 1] == "}":
        return members, Span(first, at + 1)
    while True:
        key, at = _DECODER.raw_decode(text, at)
        if not isinstance(key, str):
            raise ValueError(f"expected a key at character {at}")
        at = _skip(text, at)
        if text[at : at + 1] != ":":
            raise ValueError(f"expected ':' at character {at}")
        at = _skip(text, at + 1)
        reader = descend.get(key, decode) if descend else decode
        value, end = reader(text, at)
        members.append(Member(key, Span(at, end), value))
        at = _skip(text, end)
        if text[at : at + 1] == "}":
            return members, Span(first, at + 1)
        if text[at : at + 1] != ",":
            raise ValueError(f"expected ',' or '}}' at character {at}")
        at = _skip(text, at + 1)


def array_items(
    text: str, start: int, reader: Reader = decode, resume: int | None = None
) -> tuple[list[Member], Span]:
    """The items of the array whose `[` is at or after `start`, each read by `reader`, and
    the array's own span. `resume`: where an item the caller already holds ends (it vouches
    for every item before it); reading goes on after it, and only later items are returned."""
    at = _skip(text, start)
    if text[at : at + 1] != "[":
        raise ValueError(f"expected an array at character {at}")
    first = at
    items: list[Member] = []
    if resume is not None:
        at = _skip(text, resume)
        if text[at : at + 1] == "]":
            return items, Span(first, at + 1)
        if text[at : at + 1] != ",":
            raise ValueError(f"expected ',' or ']' at character {at}")
        at = _skip(text, at + 1)
    else:
        at = _skip(text, at + 1)
        if text[at : at + 1] == "]":
            return items, Span(first, at + 1)
    while True:
        value, end = reader(text, at)
        items.append(Member(None, Span(at, end), value))
        at = _skip(text, end)
        if text[at : at + 1] == "]":
            return items, Span(first, at + 1)
        if text[at : at + 1] != ",":
            raise ValueError(f"expected ',' or ']' at character {at}")
        at = _skip(text, at + 1)


def first_item(text: str, at: int) -> int:
    """Where the first item of the array whose `[` is at or after `at` starts (-1: there is
    no array there)."""
    at = _skip(text, at)
    return _skip(text, at + 1) if text[at : at + 1] == "[" else -1


def compact(value: object) -> str:
    """The JSON text the gateway writes for what it adds: fixed, so it never varies."""
    return _COMPACT.encode(value)
