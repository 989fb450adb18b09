"""Fitting a view into a token budget: the budgeted view, its pinned task and its last line.

`budgeted` sizes what every view has besides its entries (header, marker, footer at their
widest), lets `frs.views.fitting` place the rest among the candidates once, assembles the text
from the candidates' lines, and measures it: what the frame did not need goes to the band
(`Placement.spend`); merged runs can come out larger than their parts, so then it shrinks the
room and places it again. Every figure that changes with an append (the budget note, the
positions left out, the counts) is on the last line, so an append leaves the top of the view
as it was.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from frs.errors import InvalidRequest
from frs.text import estimate_tokens
from frs.views.candidates import Candidates, tier_lines, weigh
from frs.views.fitting import Fit, Tier, place, spent
from frs.views.layout import (
    Shown,
    focus_heading,
    footer_line,
    gap_line,
    label,
    spans,
)
from frs.views.render import Entry, plural
from frs.views.selection import Request, Selection

_LEAST_ENTRY_TOKENS = 5
# `weigh` prices every line as following a newline, but the view's first line starts it: a
# byte's weight is at most 255/256 token in any context, so it costs under a token more (the
# estimate's rounding up costs nothing against a whole budget).
_FIRST_LINE = 1
_TRIES = 6  # times the room is placed again, for the pinned task or a view over its budget
_MARKER = "… entries left out here (the last line says which)"
_PINNED_CARD_SHARE = 0.10  # the pinned task is a card when that fits this share of the budget
_POSITIONS = 'numbering="position", '
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Pinned:
    """What a budgeted view of the thread keeps above the left-out entries: the task (the
    first user message) and the goals of open focus layers whose first entry is left out."""

    task: Shown | None
    task_lines: list[str]


async def _task(request: Request, budget: int) -> Pinned:
    first = await request.reader.entries_between(
        request.session.id, 0, request.session.next_number, ("user",), limit=1
    )
    found = first[0] if first else None
    if found is None:
        return Pinned(None, [])
    (position,) = await request.reader.positions_of(request.session.id, [found.ord])
    task = Shown(position, found)
    entry = Entry(label(found, position, request.numbering), found)
    tiers: tuple[Tier, ...] = ("card", "line")  # a card if it fits its share, else one line
    for tier in tiers:
        lines = tier_lines(entry, tier, request.preview_chars)
        if weigh(lines) <= budget * _PINNED_CARD_SHARE:
            break
    return Pinned(task, lines)


async def fits_whole(candidates: Candidates, budget: float) -> bool:
    """Whether every candidate whole fits `budget` (the entries alone: the caller renders the
    view and measures it); reads back from the newest only as far as the budget reaches, so a
    long thread far over it costs what its last entries cost."""
    # An entry whole is at least its label, role and newline, some 6 estimated tokens: a
    # selection of more entries than that leaves room for cannot fit, and is not read.
    if candidates.count * _LEAST_ENTRY_TOKENS > budget:
        return False
    used = 0.0
    for index in range(candidates.count - 1, -1, -1):
        used += await candidates.size(index, "whole")
        if used > budget:
            return False
    return True


async def budgeted(request: Request, candidates: Candidates, budget: int, pin: bool) -> str:
    """The candidates fitted into `budget` estimated tokens (see the module's docstring)."""
    pinned = await _task(request, budget) if pin else Pinned(None, [])
    gaps = await _gap_room(request)
    fixed = weigh(_frame_lines(request, candidates.selection, budget)) + gaps + _FIRST_LINE
    room = budget - fixed
    for attempt in range(_TRIES + 1):
        placed = await place(candidates, room)
        if placed is None:
            break
        if not attempt and _pins(pinned, candidates, placed.fitted):
            # The task is not shown as an entry of its own: pin it, in room the entries give up.
            room -= weigh(pinned.task_lines)
            continue
        text = await _assemble(request, candidates, placed.fitted, budget, pinned)
        excess = estimate_tokens(text) - budget
        if excess <= 0:
            # What the frame and the sizes' rounding left unused (not what the band could not
            # take: giving it that would move the band's start with every append).
            unused = -excess - (room - await spent(candidates, placed.fitted))
            if unused < _LEAST_ENTRY_TOKENS:
                return text
            filled = await placed.spend(candidates, unused)
            if filled == placed.fitted:
                return text
            wider = await _assemble(request, candidates, filled, budget, pinned)
            return wider if estimate_tokens(wider) <= budget else text
        if not candidates.count:
            break  # the frame alone is over: no room makes it smaller
        room -= excess + 1  # merged runs came out larger than their parts: show less
    raise await _too_small(request, candidates, pinned, budget, gaps)


async def _gap_room(request: Request) -> float:
    """Room for the line of every restored summary numbered inside the selection (few, and
    fixed once restored, so what the entries get moves no boundary between appends)."""
    last = request.session.next_number - 1
    hi = last if request.options.end is None else request.options.end
    gaps = await request.restored(request.options.start or 1, hi)
    return weigh([gap_line(number, n) for number, n in gaps]) if gaps else 0.0


def _pins(pinned: Pinned, candidates: Candidates, fitted: Fit) -> bool:
    """Whether the task is not shown as an entry of its own (left out, or in a group line)."""
    if pinned.task is None or not candidates.count:
        return False
    if fitted.head and pinned.task.position <= candidates.position(fitted.head - 1):
        return False  # a one-line card of the head
    top = fitted.first + fitted.count("group")
    return top >= candidates.count or pinned.task.position < candidates.position(top)


async def _too_small(
    request: Request, candidates: Candidates, pinned: Pinned, budget: int, gaps: float
) -> InvalidRequest:
    # The frame holds the budget's own digits: size it at the minimum it names.
    needed = 0.0 if not candidates.count else await candidates.size(candidates.count - 1, "line")
    minimum = budget
    for _ in range(3):
        fixed = weigh(_frame_lines(request, candidates.selection, minimum)) + gaps + _FIRST_LINE
        minimum = math.ceil(fixed + (weigh(pinned.task_lines) if needed else 0) + needed) + 1
    if not candidates.count:
        return InvalidRequest(
            f"budget_tokens={budget} is below what this view's header and footer need "
            f"(~{minimum} estimated tokens); use at least {minimum}."
        )
    return InvalidRequest(
        f"budget_tokens={budget} is below what the view's header and footer and its newest "
        f"entry as a one-line card need (~{minimum} estimated tokens); use at least {minimum}."
    )


def _frame_lines(request: Request, selection: Selection, budget: int) -> list[str]:
    """Every line a budgeted view may add besides its entries, at its widest: the header, the
    marker, every open layer's goal, and the footer with the largest figures it can hold."""
    count, top = selection.count, request.session.live_count
    # The note at its widest: a whole view is never all four tiers of every candidate, but the
    # figures can each reach the count's width; a gap makes `spans` write its longest form.
    gappy = [max(top - 5, 1), top - 3, top - 2, top - 1, top] if selection.shown else [1, top]
    widest = _note(request, budget, (count, count, count, count), [], gappy)
    scope = selection.scope
    footer = footer_line(
        request.session,
        count,
        [top - 1, top],
        scope,
        request.options.roles,
        count,
        widest,
        scope is None,
    )
    headings = [focus_heading(layer) for layer in request.frame.layers]
    return [*request.header(), _MARKER, *headings, _DIGITS.sub(_unrepeated, footer)]


def _unrepeated(digits: re.Match[str]) -> str:
    # The estimator prices a digit that repeats the one before it lower: the footer sized with
    # no repeats weighs the same whatever its figures, so the room, and the heads sized from
    # it, stay put from one revision to the next while the figures keep their widths.
    return ("10" * len(digits[0]))[: len(digits[0])]


async def _assemble(
    request: Request, candidates: Candidates, fitted: Fit, budget: int, pinned: Pinned
) -> str:
    """The budgeted view of the fitted candidates, with every option the caller asked for."""
    grouped = fitted.count("group")
    top = fitted.first + grouped  # the first candidate shown as an entry of its own
    rich = len(fitted.rich)
    rich_lines: list[str] = []
    rich_counts, rich_ord = (0, 0), 0
    if rich:
        rich_lines, _, rich_counts = await candidates.entry_lines(range(rich), fitted.rich)
        rich_ord = (await candidates.shown(rich - 1)).message.ord_last
    placed = [layer for layer in request.frame.layers if layer.start_ord <= rich_ord]
    head, placed = await candidates.head_lines(rich, fitted.head, placed)
    groups = await candidates.group_lines(fitted.first, top, fitted.per_group)
    entries, trailing, counts = await candidates.entry_lines(
        range(top, candidates.count), fitted.tiers[top - fitted.first :]
    )
    left_out = candidates.positions(fitted.head, fitted.first)
    shown = [
        candidates.position(i)
        for i in (*range(fitted.head), *range(fitted.first, candidates.count))
    ]
    first_ord = (await candidates.shown(top)).message.ord if top < candidates.count else 10**18
    figures = (
        fitted.count("whole") + fitted.rich.count("whole"),
        fitted.count("card") + fitted.rich.count("card"),
        fitted.count("line") + fitted.head - rich,
        grouped,
    )
    note = _note(request, budget, figures, left_out, [])
    scope = candidates.selection.scope
    footer = footer_line(
        request.session,
        len(shown),
        shown,
        scope,
        request.options.roles,
        # Merged runs show fewer entries than they hold.
        len(shown) - counts[0] + counts[1] - rich_counts[0] + rich_counts[1],
        note,
        scope is None,
    )
    left_behind = [
        layer
        for layer in request.frame.layers
        if fitted.first + grouped and layer.start_ord < first_ord and layer not in placed
    ]
    lines = request.header()
    if _pins(pinned, candidates, fitted):
        lines.extend(pinned.task_lines)
    lines.extend(focus_heading(layer) for layer in left_behind)
    lines.extend(rich_lines)
    lines.extend(head)
    if fitted.first > fitted.head:
        lines.append(_MARKER)
    return "\n".join([*lines, *groups, *entries, *trailing, footer])


def _note(
    request: Request,
    budget: int,
    counts: tuple[int, int, int, int],
    left_out: Sequence[int],
    widest: Sequence[int],
) -> str:
    """`Budget ~4,000 tokens: 1 whole, 6 cards, 58 one-line, 96 grouped; 2–103 out:
    frs_view_thread(from=2, to=103)`: entries by how they are shown, then the positions left
    out and the call that shows them. Short: at small budgets it is a tenth of the view."""
    whole, cards, lines, grouped = counts
    shown = [f"{whole:,} whole"]
    shown += [plural(cards, "card")] if cards else []
    shown += [f"{lines:,} one-line"] if lines else []
    shown += [f"{grouped:,} grouped"] if grouped else []
    text = f"Budget ~{budget:,} tokens: {', '.join(shown)}"
    positions = left_out or widest
    if not positions:
        return text
    text += f"; {spans(positions)} out"
    if request.options.run_id is not None:
        return text
    args = [f"from={positions[0]}", f"to={positions[-1]}"]
    if request.options.roles:
        args.append("roles=[" + ", ".join(f'"{r}"' for r in request.options.roles) + "]")
    prefix = _POSITIONS if request.numbering == "absolute" else ""
    return f"{text}: frs_view_thread({prefix}{', '.join(args)})"
