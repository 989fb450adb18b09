"""What a view shows around and between its entries: labels, thinking, checkpoints, focus
headings, merged runs and time stamps.

Every function here is pure: it takes the entries a view chose (oldest first, each with its
position) and returns them decorated. Plain and budgeted views share them, in the one order
`frs.views.selection.Request.dressed` applies them (`Dressed`), so an option means the same
whichever way a view is fitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from frs.escaping import escape, escape_inline
from frs.model import LANES, Checkpoint, FocusLayer, Message, Numbering, Session
from frs.views.render import (
    INDENT,
    Entry,
    checkpoint_line,
    format_tokens,
    lane_counts,
    plural,
    split_lines,
)

WHOLE = "whole"


@dataclass(frozen=True, slots=True)
class Shown:
    """An entry a view shows: where it sits now, and the message (or summary) itself."""

    position: int
    message: Message


@dataclass(frozen=True, slots=True)
class Dressed:
    """Entries as a view shows them: `before` the first (thinking and marks that precede every
    entry), the entries and the tier of each after merging, the focus headings `after` the
    last, and how many entries there were before merging (`count`)."""

    before: list[str]
    entries: list[Entry]
    tiers: list[str]
    after: list[str]
    count: int


def label(message: Message, position: int, numbering: Numbering) -> str:
    """`7`, or in absolute numbering the permanent number (`4–8` for a summary's span)."""
    if numbering == "position":
        return str(position)
    if message.ord_last != message.ord:
        return f"{message.ord}–{message.ord_last}"
    return str(message.ord)


def focus_heading(layer: FocusLayer) -> str:
    return f"▸ focus {layer.depth}: {escape_inline(layer.goal)}"


def thinking_lines(thought: Message) -> list[str]:
    """A thinking block shown before every entry: indented like any content line, so it can
    never stand at column 0 where entries start."""
    first, *rest = split_lines(thought.content)
    return [INDENT + "(thinking) " + escape(first), *(INDENT * 2 + escape(line) for line in rest)]


def attach(
    shown: Sequence[Shown],
    labels: Sequence[str],
    thinking: Sequence[Message],
    marks: Sequence[Checkpoint],
    starts_thread: bool,
) -> tuple[list[Entry], list[str]]:
    """Entries with the thinking and checkpoints that follow each, and the lines to show
    before the first (thinking and marks that precede every entry, when the view starts at the
    thread's beginning)."""
    leading: list[str] = []
    thoughts: dict[int, list[Message]] = {}
    index = 0
    for thought in thinking:
        while index + 1 < len(shown) and shown[index + 1].message.ord <= thought.ord:
            index += 1
        if not shown or thought.ord < shown[0].message.ord:
            leading.extend(thinking_lines(thought))
        else:
            thoughts.setdefault(index, []).append(thought)
    marks_at: dict[int, list[Checkpoint]] = {}
    for mark in marks:
        if mark.after_ord == 0:
            if starts_thread:
                leading.append(checkpoint_line(mark))
            continue
        at = next(
            (i for i, s in enumerate(shown) if _holds(s.message, mark.after_ord)),
            None,
        )
        if at is not None:
            marks_at.setdefault(at, []).append(mark)
    built = [
        Entry(text, s.message, tuple(thoughts.get(i, ())), tuple(marks_at.get(i, ())))
        for i, (s, text) in enumerate(zip(shown, labels, strict=True))
    ]
    return built, leading


def _holds(message: Message, ord_: int) -> bool:
    return message.ord <= ord_ <= message.ord_last


def gap_line(number: int, n: int) -> str:
    """`[11] (summary SQ.3, restored)`: where a restored squash's summary took a number that
    no entry has any more (numbers are never reused), in absolute numbering only."""
    return f"[{number}] (summary SQ.{n}, restored)"


def restored_gaps(
    entries: list[Entry], restored: Sequence[tuple[int, int]], after: int
) -> list[Entry]:
    """Each restored summary's number (from `ThreadReader.restored_summaries`) above the first
    entry past it, unless an entry before spans it or it is not past `after` (where the view
    starts: a gap before the first entry is shown only in a window that starts in it).

    A line above the entry after the gap, not a note on it: the number is fixed once the
    squash is restored, so every line before the first changed entry stays byte-identical."""
    if not restored or not entries:
        return entries
    notes: dict[int, list[str]] = {}
    reached = after
    at = 0
    for number, n in restored:
        while at < len(entries) and entries[at].message.ord < number:
            reached = max(reached, entries[at].message.ord_last)
            at += 1
        if at < len(entries) and number > reached:
            notes.setdefault(at, []).append(gap_line(number, n))
    if not notes:
        return entries
    return [
        replace(entry, headings=(*notes.get(i, ()), *entry.headings))
        for i, entry in enumerate(entries)
    ]


def focus_headings(
    entries: list[Entry], layers: Sequence[FocusLayer], shows_end: bool
) -> tuple[list[Entry], list[str]]:
    """Each open focus layer's goal above its first entry shown; the goal of a layer with no
    entry yet after the last (when the view reaches the end of the thread)."""
    headings: dict[int, list[str]] = {}
    trailing: list[str] = []
    for layer in layers:
        line = focus_heading(layer)
        index = next((i for i, e in enumerate(entries) if e.message.ord >= layer.start_ord), None)
        if index is not None:
            headings.setdefault(index, []).append(line)
        elif shows_end:
            trailing.append(line)
    if not headings:
        return entries, trailing
    return [
        replace(entry, headings=(*entry.headings, *headings.get(i, ())))
        for i, entry in enumerate(entries)
    ], trailing


def merge_runs(
    entries: list[Entry], positions: Sequence[int], numbering: Numbering, tiers: Sequence[str]
) -> tuple[list[Entry], list[str]]:
    """Consecutive assistant and tool messages of one run become one entry spanning them.

    Only entries shown in the same tier merge, and one-line cards never do; a group holds
    adjacent positions only (a filtered view may hide messages between two of a run's), and a
    focus heading starts a new group. Returns the entries and the tier of each.
    """
    merged: list[Entry] = []
    merged_tiers: list[str] = []
    group: list[tuple[Entry, int]] = []
    group_tier = WHOLE
    for entry, position, tier in zip(entries, positions, tiers, strict=True):
        message = entry.message
        mergeable = (
            message.kind == "message"
            and message.role in ("assistant", "tool")
            and message.run_id is not None
            and tier != "line"
        )
        joins = (
            bool(group)
            and mergeable
            and message.run_id == group[-1][0].message.run_id
            and position == group[-1][1] + 1
            and not entry.headings
            and tier == group_tier
        )
        if group and not joins:
            merged.append(_merged(group, numbering))
            merged_tiers.append(group_tier)
            group = []
        if mergeable:
            group.append((entry, position))
            group_tier = tier
        else:
            merged.append(entry)
            merged_tiers.append(tier)
    if group:
        merged.append(_merged(group, numbering))
        merged_tiers.append(group_tier)
    return merged, merged_tiers


def _merged(group: list[tuple[Entry, int]], numbering: Numbering) -> Entry:
    if len(group) == 1:
        return group[0][0]
    first, last = group[0], group[-1]
    if numbering == "position":
        span = f"{first[1]}–{last[1]}"
    else:
        span = f"{first[0].message.ord}–{last[0].message.ord_last}"
    return Entry(
        span,
        first[0].message,
        tuple(t for entry, _ in group for t in entry.thinking),
        tuple(c for entry, _ in group for c in entry.checkpoints),
        members=tuple(entry.message for entry, _ in group),
        headings=first[0].headings,
    )


def stamp(entries: list[Entry]) -> list[Entry]:
    """Times on user messages; replies after a user message indented under it, unstamped;
    system messages as they are; a message recorded without a time gets no stamp."""
    stamped: list[Entry] = []
    under_user = False
    for entry in entries:
        message = entry.message
        if message.role == "user" and message.kind == "message":
            under_user = True
            stamped.append(replace(entry, stamp=minute(message.created_at)))
        elif message.role == "system":
            stamped.append(entry)  # instructions, not an event in time
        elif under_user:
            stamped.append(replace(entry, reply=True))
        else:
            stamped.append(replace(entry, stamp=minute(message.created_at)))
    return stamped


def minute(created_at: str | None) -> str:
    """`YYYY-MM-DD HH:MM` of an ISO-8601 time, as recorded (no zone conversion); "" for none."""
    return created_at[:16].replace("T", " ") if created_at else ""


def sources_block(sources: Sequence[str]) -> list[str]:
    if not sources:
        return []
    return ["Sources:", *(INDENT + escape_inline(line) for line in sources)]


def footer_line(
    session: Session,
    shown: int,
    positions: Sequence[int],
    scope: str | None,
    roles: Sequence[str] = (),
    merged: int | None = None,
    note: str = "",
    brief: bool = False,
) -> str:
    """The view's last line: every figure that changes from one revision to the next (a
    budgeted view of the whole thread, `brief`, gives only the entries, revision and tokens:
    at small budgets the last line is a tenth of the view, and it changes with every append)."""
    parts = [note] if note else []
    if brief:
        parts.append(plural(session.live_count, "entry"))
    elif scope is None:
        parts.append(
            f"{plural(session.recorded, 'message')} in {plural(session.live_count, 'entry')}"
        )
    else:
        what = plural(shown, "entry")
        if roles:
            what = what.replace(" ", f" {' and '.join(roles)} ", 1)
        span = f" at {'position' if len(positions) == 1 else 'positions'} {spans(positions)}"
        parts.append(f"showing {what}{span if positions else ''} of ")
        parts[-1] += plural(session.live_count, "entry")
        parts.append(plural(session.recorded, "message"))
    if merged is not None and merged != shown:
        parts.append(f"runs merged: {shown} entries shown as {merged}")
    lanes = "" if brief else lane_counts({lane: session.lanes.get(lane, 0) for lane in LANES})
    if lanes:
        parts.append(lanes)
    parts.append(f"revision {session.revision}")
    parts.append(format_tokens(session.live_tokens))
    return "· " + " · ".join(parts)


def spans(positions: Sequence[int]) -> str:
    """`4–9`, `2, 6`, or `2, 6, … 40 (7 entries)`: positions in a view's notes, contiguous or
    not, never claiming an entry that is not there."""
    if not positions:
        return ""
    if positions[-1] - positions[0] + 1 == len(positions):
        first, last = positions[0], positions[-1]
        return str(first) if first == last else f"{first}–{last}"
    if len(positions) <= 4:
        return ", ".join(str(p) for p in positions)
    return f"{positions[0]}, {positions[1]}, … {positions[-1]} ({len(positions)} entries)"
