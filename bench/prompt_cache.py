"""A request's cost under Anthropic's prompt cache as documented: entries written only at
breakpoints, found only by looking back from a breakpoint.

https://platform.claude.com/docs/en/build-with-claude/prompt-caching: a request is billed as a
cache read for the longest prefix an earlier request wrote an entry for, as a cache write from
there up to its last breakpoint, and as plain input after it ("Cache writes happen only at your
breakpoint"; "Cache reads look backward for entries that prior requests wrote"; "The lookback
window is 20 blocks. The system checks at most 20 positions per breakpoint, counting the
breakpoint itself as the first"). Prices, in units of an uncached input token: read 0.1, write
1.25 (the 5-minute cache), plain 1. Prompt order is tools, system, messages; here the head
(everything but the messages) is one block, marked when any of it is.

What it leaves out: the cache's lifetime (every call here follows the last within it) and the
minimum cacheable length (512 to 4,096 tokens by model; every prompt here passes 512 after its
first calls). The longest-common-prefix model (`bench.session.Tally`) bills any shared prefix
as read; this one does not, and so bills a squash far back in the history as the API does: from
the last entry before it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.session import READ, WRITE, Counter

LOOKBACK = 20
PLAIN = 1.0

#: A prompt as blocks: each one's compact JSON as the model is shown it, and whether it carries
#: a breakpoint.
Blocks = tuple[tuple[str, bool], ...]


def blocks_of(
    payload: Mapping[str, Any],
    dropped: Iterable[tuple[int, int]],
    show: Callable[[Any], Any],
) -> Blocks:
    """A request as billed blocks: the head, then each message's blocks, each as `show` makes
    it (as the model is shown it: unmarked, thinking as billed), without the blocks the API
    dropped (`dropped`: message and block indices), each marked when it carries a breakpoint
    as sent. A message's framing (its role) is billed with its first block: it is not a block
    the lookback counts. A top-level `cache_control` (automatic caching) marks the last block."""
    gone = set(dropped)
    head = {k: v for k, v in payload.items() if k != "messages"}
    found = [
        (_compact(show(head)), _has_marker({k: v for k, v in head.items() if k != "cache_control"}))
    ]
    for i, message in enumerate(payload.get("messages") or []):
        content = message.get("content")
        if not isinstance(content, list):
            found.append((_compact(show(message)), False))
            continue
        framing = _compact({"role": message.get("role")})
        kept = [b for j, b in enumerate(content) if (i, j) not in gone]
        if not kept:
            found.append((framing, False))
        found.extend(
            ((framing if k == 0 else "") + _compact(show(b)), _has_marker(b))
            for k, b in enumerate(kept)
        )
    if isinstance(payload.get("cache_control"), dict):
        found[-1] = (found[-1][0], True)
    return tuple(found)


def _has_marker(value: Any) -> bool:
    if isinstance(value, dict):
        return isinstance(value.get("cache_control"), dict) or any(
            _has_marker(v) for v in value.values()
        )
    if isinstance(value, list):
        return any(_has_marker(v) for v in value)
    return False


def _compact(item: object) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Billed:
    """Calls of one session billed by the API's rule."""

    counter: Counter
    calls: int = 0
    tokens: int = 0
    read: int = 0
    written: int = 0
    plain: int = 0
    cost: float = 0.0
    entries: set[str] = field(default_factory=set)

    def add(self, prompt: Blocks) -> None:
        sizes = [len(self.counter.tokens(text)) for text, _ in prompt]
        ends: list[int] = []
        keys: list[str] = []
        digest = hashlib.sha256()
        total = 0
        for (text, _), size in zip(prompt, sizes, strict=True):
            digest.update(text.encode())
            digest.update(b"\x00")
            keys.append(digest.hexdigest())
            total += size
            ends.append(total)
        marks = [i for i, (_, marked) in enumerate(prompt) if marked]
        read = 0
        for mark in marks:
            for i in range(mark, max(mark - LOOKBACK, -1), -1):
                if keys[i] in self.entries:
                    read = max(read, ends[i])
                    break
        last = ends[marks[-1]] if marks else 0
        written = max(last - read, 0)
        plain = total - max(last, read)
        self.calls += 1
        self.tokens += total
        self.read += read
        self.written += written
        self.plain += plain
        self.cost += READ * read + WRITE * written + PLAIN * plain
        self.entries.update(keys[i] for i in marks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "read": self.read,
            "written": self.written,
            "plain": self.plain,
            "cost": round(self.cost, 1),
        }


def billed(prompts: Iterable[Blocks], counter: Counter) -> Billed:
    out = Billed(counter)
    for prompt in prompts:
        out.add(prompt)
    return out
