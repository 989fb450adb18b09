"""Reminders to squash, because an untrained model rarely squashes on its own.

When what a conversation sends the model crosses a threshold (every `step` tokens), one short
reminder goes at the end of the newest user message: how much finished, squashable material
there is (tool results of turns that are over, not squashed yet) and the calls that show and
squash it. A reminder is made once per crossing and then frozen: the same text, on the same
message (found by its key), in every later request, so a prompt cache breaks once for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from frs.wire.matching import Unit
from frs.wire.requests import WireRequest

DEFAULT_STEP = 60_000  # tokens sent between two reminders


@dataclass(frozen=True, slots=True)
class Candidates:
    """Finished tool output not squashed yet: how many results, how many tokens, and the
    positions (in the view) of the first and last of them that were recorded, if any."""

    results: int
    tokens: int
    first: int | None = None
    last: int | None = None


def sent_tokens(units: Sequence[Unit], squashed: Collection[str]) -> int:
    """Estimated tokens of the units a request sends (those of squashes sent aside)."""
    return sum(unit.tokens for unit in units if unit.key not in squashed)


def candidates(
    request: WireRequest,
    units: Sequence[Unit],
    squashed: Collection[str],
    positions: Mapping[str, int] | None = None,
) -> Candidates:
    """Tool results of the turns that are over (before the last user message that is not
    results), not in a squash already sent: what a squash would take first. Results that load
    tools are not counted: a squash keeps them (`frs.wire.rewriting`). `positions`: where the
    recorded ones sit in the view (`StoredThread.positions`)."""
    turn = _turn_start(request)
    kept = {b.tool_id for m in request.messages for b in m.blocks if b.pinned and b.tool_id}
    finished = [
        unit
        for unit in units
        if unit.new.role == "tool"
        and unit.message < turn
        and unit.key not in squashed
        and unit.new.tool_call_id not in kept
    ]
    placed = [positions[u.key] for u in finished if positions and u.key in positions]
    return Candidates(
        len(finished),
        sum(unit.tokens for unit in finished),
        min(placed) if placed else None,
        max(placed) if placed else None,
    )


def due(total: int, step: int, last_level: int) -> int | None:
    """The threshold level `total` tokens has crossed beyond `last_level`, or None."""
    level = total // step
    return level if level > last_level else None


def nudge_text(total: int, found: Candidates) -> str:
    """The reminder: what the conversation sends, what is finished and where, and the calls
    that show it and squash it."""
    where = (
        f"positions {found.first}–{found.last}: "
        if found.first is not None and found.last is not None
        else ""
    )
    show = (
        f"frs_view_thread(from={found.first}, to={found.last}) shows them"
        if where
        else "frs_view_thread shows them with their positions"
    )
    return (
        f"[FRS reminder] This conversation now sends the model about {_k(total)} tokens on "
        f"every call; {where}{_k(found.tokens)} tokens of finished tool output "
        f"({found.results} finished tool results of earlier turns). {show}; "
        "frs_compress_range(from, to, summary) replaces a finished stretch with your summary "
        "in what the model is sent from the next call on (get_alias keeps the originals)."
    )


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.0f}k" if tokens >= 1000 else str(tokens)


def _turn_start(request: WireRequest) -> int:
    for i in range(len(request.messages) - 1, -1, -1):
        message = request.messages[i]
        if message.role == "user" and not any(b.kind == "tool_result" for b in message.blocks):
            return i
    return 0
