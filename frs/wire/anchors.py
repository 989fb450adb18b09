"""Where a rewritten request puts a prompt-cache breakpoint of its own: on its newest summary.

Anthropic's prompt cache writes an entry only at a breakpoint (`cache_control`), and a later
request finds one only by looking back from each of its own breakpoints, at most 20 blocks
(https://platform.claude.com/docs/en/build-with-claude/prompt-caching: "Cache writes happen
only at your breakpoint", "The lookback window is 20 blocks"). A host marks its newest block
(Claude Code its system prompt too). So once a squash changes the history far back, no entry
a host's breakpoint wrote is a prefix of the request any more, and everything after the host's
head breakpoint is written again at the write price, the stretch before the squash included.

A breakpoint on the newest summary the request sends makes the conversation up to it an entry
on every request that sends it. The autopilot's next batch squashes what comes after that
summary, so its first changed block lies after the entry: the cache picks up there, and only
the new summary and what follows are written again. Between batches the summary stays where it
is, so the breakpoint costs nothing (its prefix is read, not written). What it cannot do: the
next request finds that entry only from a breakpoint at most 20 blocks after it, so a batch
whose newest summary lands further on (its runs split by many kept messages) is written again
from the host's head breakpoint; and a request that already spends four gets none (the squash
reply's payback figures assume the cache picks up at the squash).

The rules it keeps (the same page): at most `MAX_BREAKPOINTS` in a request, a top-level
automatic one included ("uses one of the 4 available breakpoint slots"); a 1-hour entry never
after a 5-minute one ("a 1-hour cache entry must appear before any 5-minute cache entries"), so
it takes the longer lifetime when a breakpoint after it has it. It adds none to a request
that sets none: that host does not cache, and a breakpoint would bill it writes it never asked
for. Only a wire that marks its blocks (`WireRequest.marked`) gets one; OpenAI's caches match
prefixes without markers.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from frs.wire.requests import Replacement, WireRequest

#: "You can define up to 4 cache breakpoints" (the prompt caching page).
MAX_BREAKPOINTS = 4
SHORT, LONG = "5m", "1h"


@dataclass(frozen=True, slots=True)
class Placed:
    """A summary text as a plan places it: in message `message` (its index in the request),
    before that message's own blocks (`order` 0), as the message (1) or after them (2)."""

    message: int
    order: int
    text: str


def markers(value: object) -> tuple[str, ...]:
    """The lifetimes of the breakpoints (`cache_control`) in a decoded request part, in order:
    a block's own and those of the blocks it holds (a message's, a tool result's content)."""
    if isinstance(value, list):
        return tuple(m for item in value for m in markers(item))
    if not isinstance(value, dict):
        return ()
    own = lifetime(value.get("cache_control"))
    held = markers(value.get("content")) if isinstance(value.get("content"), list) else ()
    return ((own,) if own is not None else ()) + held


def lifetime(marker: object) -> str | None:
    """A `cache_control` value's lifetime (`SHORT` unless it asks for `LONG`); None when it is
    not one (absent, or null)."""
    if not isinstance(marker, dict):
        return None
    return LONG if marker.get("ttl") == LONG else SHORT


def broken(lifetimes: Sequence[str]) -> list[str]:
    """What the API refuses of a request's breakpoints (their lifetimes in prompt order), in
    words: more than `MAX_BREAKPOINTS`, a 1-hour one after a 5-minute one."""
    found = []
    if len(lifetimes) > MAX_BREAKPOINTS:
        found.append(f"{len(lifetimes)} cache_control breakpoints, at most {MAX_BREAKPOINTS}")
    if SHORT in lifetimes and LONG in lifetimes[lifetimes.index(SHORT) :]:
        found.append("a 1-hour cache_control breakpoint after a 5-minute one")
    return found


def lifetimes(request: WireRequest) -> list[str]:
    """The lifetimes of all the request's breakpoints, in prompt order (as parsed)."""
    automatic = [request.automatic_marker] if request.automatic_marker else []
    return [*request.head_markers, *(m for _, _, m in request.marked), *automatic]


def anchor(
    request: WireRequest,
    placed: Sequence[Placed],
    replacements: Sequence[Replacement],
    dropped: Collection[tuple[int, int]],
) -> tuple[str, str] | None:
    """The summary text that gets the breakpoint and the breakpoint's lifetime, or None when
    the request cannot take one (the module docstring)."""
    if not placed:
        return None
    newest = max(placed, key=lambda p: (p.message, p.order))
    before = list(request.head_markers)
    after: list[str] = []
    for i, j, marker in request.marked:  # a handful: never a walk over a long request
        if (i, j) in dropped or any(r.first <= i <= r.last for r in replacements):
            continue
        later = i > newest.message or (i == newest.message and newest.order == 0)
        (after if later else before).append(marker)
    if request.automatic_marker is not None:
        after.append(request.automatic_marker)
    spent = len(before) + len(after)
    if spent == 0 or spent >= MAX_BREAKPOINTS:
        return None
    lifetime = LONG if LONG in after else SHORT
    if lifetime == LONG and SHORT in before:
        return None  # the host's own order is already one the API refuses: add nothing to it
    return newest.text, lifetime
