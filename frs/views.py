"""Views of a thread: which entries a view shows, and how it fits a token budget.

A view reads only what it shows: a window or the last N come from position lookups, and a
budgeted view walks back from the newest entry a chunk at a time and stops when the budget is
spent, so its cost does not grow with the part of the thread it leaves out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from frs.errors import InvalidRequest
from frs.model import (
    LANES,
    Checkpoint,
    FocusLayer,
    Limits,
    Message,
    Numbering,
    PlanStep,
    Session,
)
from frs.ops import check_numbers, check_positions
from frs.ports import ThreadReader
from frs.render import (
    INDENT,
    REPLY_INDENT,
    Entry,
    checkpoint_line,
    escape,
    escape_inline,
    format_tokens,
    lane_counts,
    one_line,
    plural,
    render_entry,
    render_view,
    split_lines,
)
from frs.text import check_text, token_weight

_CHUNK = 64  # entries read per step while a budgeted view walks back
_BUDGET_CARD_CHARS = 300  # the preview cap of entries shrunk to cards
# A budgeted view that cannot show everything whole spends up to these shares of its entry
# budget on whole entries, then cards; one-line cards take the rest, so the view keeps an
# overview of older work.
_ALL_WHOLE = {"whole": 1.0}
_TIERED = {"whole": 0.5, "card": 0.8, "line": 1.0}
_MIN_ENTRY_TOKENS = 40  # room for at least one one-line card
# A thread this short is rendered whole first; only if that exceeds the budget is it shrunk.
_WHOLE_IF_UNDER = 200
_FIT_TRIES = 8  # assemble, measure, adjust the room by the difference: one to three tries
_SLACK_SHARE = 10  # a budgeted view using all but a tenth of its budget is not tried again
_STAMP_TOKENS = token_weight(" [2025-01-02 10:00]")
_REPLY_INDENT_TOKENS = token_weight(REPLY_INDENT)
_NEWLINE = token_weight("\n")  # priced as at the start of a text: its dearest context
# Budget notes name positions; a view numbered absolutely must ask for them explicitly.
_POSITIONS = 'numbering="position", '


@dataclass(frozen=True, slots=True)
class ViewOptions:
    numbering: Numbering | None = None  # None: the session's own mode
    roles: tuple[str, ...] = ()
    last: int | None = None
    start: int | None = None  # `from` in the tools
    end: int | None = None  # `to` in the tools
    show_plan: bool = True
    show_thinking: bool = False
    show_sources: bool = False
    preview_chars: int | None = None
    budget_tokens: int | None = None
    merge_runs: bool = False
    show_times: bool = False
    run_id: str | None = None


def check_view_options(options: ViewOptions) -> None:
    for lane in options.roles:
        if lane not in LANES:
            raise InvalidRequest(f"Unknown role {lane!r} in roles; use any of {', '.join(LANES)}.")
    if options.last is not None and options.last < 1:
        raise InvalidRequest(f"last={options.last}; give a count of at least 1.")
    if options.budget_tokens is not None and options.budget_tokens < 1:
        raise InvalidRequest(f"budget_tokens={options.budget_tokens}; give a positive budget.")
    if options.run_id is not None:
        check_text(options.run_id, "run_id")


@dataclass(frozen=True, slots=True)
class Frame:
    """What surrounds a view's entries. It changes only with the session's revision, so a
    caller may keep it by (session id, revision)."""

    plan: tuple[PlanStep, ...]
    checkpoints: tuple[Checkpoint, ...]
    layers: tuple[FocusLayer, ...]


async def load_frame(reader: ThreadReader, session: Session) -> Frame:
    return Frame(
        tuple(await reader.plan(session.id)),
        tuple(await reader.checkpoints(session.id)),
        tuple(await reader.open_layers(session.id)),
    )


async def render_thread(
    reader: ThreadReader,
    session: Session,
    options: ViewOptions,
    limits: Limits,
    sources: Sequence[str] = (),
    frame: Frame | None = None,
) -> str:
    """The view text for `options`, read through `reader` (one consistent snapshot)."""
    mode = options.numbering or session.numbering
    preview = options.preview_chars or limits.preview_chars
    frame = frame or await load_frame(reader, session)
    plan = frame.plan if options.show_plan else ()
    leading = _sources_block(sources)
    unbounded = not (
        options.start or options.end or options.roles or options.run_id or options.last
    )
    capped = options.budget_tokens is None and unbounded
    if capped:
        # A whole-thread view never exceeds the server's cap (a host's cap on tool output is
        # about 25,000 tokens). A long thread is walked from the end: the walk shows it as it
        # is if it fits (cards shrink long messages), without reading it twice.
        options = replace(options, budget_tokens=limits.view_tokens)
    request = _Request(reader, session, options, mode, preview, plan, leading, frame)
    if capped and (
        session.live_tokens > limits.view_tokens or session.live_count > _WHOLE_IF_UNDER
    ):
        return await _budgeted(request, capped=True)
    budgeted = options.budget_tokens is not None and not (
        options.start or options.end or options.roles or options.run_id
    )
    if budgeted and session.live_count > _WHOLE_IF_UNDER:
        return await _budgeted(request)
    entries, positions, scope = await _select(reader, session, options, mode)
    view = await _plain(request, entries, positions, scope)
    budget = options.budget_tokens
    if budget is None or _weight(view.text.split("\n")) <= budget:
        return view.text
    if session.live_count == 0:
        needed = _tokens(_weight(view.text.split("\n")))
        raise InvalidRequest(
            f"budget_tokens={budget} is below what this view's header needs (~{needed} "
            f"tokens); use at least {needed}."
        )
    if budgeted:
        return await _budgeted(request)
    return _Cut(request, view.trailing, scope).render(view.entries, positions, budget, view.text)


@dataclass(frozen=True, slots=True)
class _Request:
    """One view call: what was asked, and the snapshot and frame it is read from."""

    reader: ThreadReader
    session: Session
    options: ViewOptions
    mode: Numbering
    preview: int
    plan: Sequence[PlanStep]
    leading: list[str]  # lines under the header (the sources block)
    frame: Frame


@dataclass(frozen=True, slots=True)
class _Plain:
    text: str
    entries: list[Entry]  # after merging and stamping
    trailing: list[str]  # lines between the last entry and the footer (an empty layer's goal)


async def _plain(
    request: _Request, entries: list[Message], positions: list[int], scope: str | None
) -> _Plain:
    """The view of `entries` with every option applied and nothing shrunk."""
    reader, session, options, mode = request.reader, request.session, request.options, request.mode
    frame = request.frame
    thinking: list[Message] = []
    if options.show_thinking and entries:
        thinking = await reader.thinking(session.id, entries[0].ord, entries[-1].ord_last)
    if options.show_thinking and not options.roles and (not entries or positions[0] == 1):
        thinking = [*await reader.thinking(session.id, 0, 0), *thinking]
    labels = [label(m, p, mode) for m, p in zip(entries, positions, strict=True)]
    built, before = _attach(entries, labels, thinking, list(frame.checkpoints), scope is None)
    empty = ["(no messages yet: record them with frs_record)"] if session.live_count == 0 else []
    built, trailing = _focus_headings(built, frame.layers, _shows_end(session, positions))
    shown = len(built)
    if options.merge_runs:
        built, _ = _merge_runs(built, positions, mode)
    if options.show_times:
        built = _stamp(built)
    footer = _footer(session, shown, positions, scope, options.roles, merged=len(built))
    text = render_view(
        session.title,
        session.goal,
        request.plan,
        [*request.leading, *empty, *before],
        built,
        "\n".join([*trailing, footer]),
        request.preview,
    )
    return _Plain(text, built, trailing)


def label(message: Message, position: int, mode: Numbering) -> str:
    if mode == "position":
        return str(position)
    if message.ord_last != message.ord:
        return f"{message.ord}–{message.ord_last}"
    return str(message.ord)


def _sources_block(sources: Sequence[str]) -> list[str]:
    if not sources:
        return []
    return ["Sources:", *(INDENT + escape_inline(line) for line in sources)]


async def _select(
    reader: ThreadReader, session: Session, options: ViewOptions, mode: Numbering
) -> tuple[list[Message], list[int], str | None]:
    """The entries a view shows, their positions, and a note of the window (None: all)."""
    sid, live = session.id, session.live_count
    lanes = options.roles
    if options.run_id is not None:
        entries = await reader.run_entries(sid, options.run_id)
        entries, positions = _keep_lanes(
            entries, await reader.positions_of(sid, [m.ord for m in entries]), lanes
        )
        if options.last is not None:
            entries, positions = entries[-options.last :], positions[-options.last :]
        return entries, positions, f"run {options.run_id}"
    if options.start is not None or options.end is not None:
        lo = options.start if options.start is not None else 1
        if live == 0 and lo == 1:
            return [], [], None  # `from=1` on an empty thread: nothing to show, not an error
        # A view is a read: a window running past the end shows up to the end (a range to
        # squash is exact instead). One starting past the end is a mistake worth saying.
        if mode == "absolute":
            top = session.next_number - 1
            _check_start(lo, options.end, top, "number")
            if options.end is not None and options.end < lo:
                check_numbers(session, lo, options.end)  # names from and to as given
            hi = min(options.end, top) if options.end is not None else top
            check_numbers(session, lo, hi)
            if lanes:
                entries = await reader.lane_entries(sid, lanes, lo, hi)
            else:
                entries = await reader.entries_between(sid, lo, hi)
            # A summary that starts before `from` and reaches into the window is shown whole.
            cover = await reader.entry_covering(sid, lo)
            straddles = cover is not None and cover.ord < lo <= cover.ord_last
            if cover is not None and straddles and (not lanes or cover.lane in lanes):
                entries.insert(0, cover)
            positions = await reader.positions_of(sid, [m.ord for m in entries])
            scope: str | None = f"numbers {lo}–{hi}"
        else:
            _check_start(lo, options.end, live, "position")
            if options.end is not None and options.end < lo:
                check_positions(session, lo, options.end)  # names from and to as given
            hi = min(options.end, live) if options.end is not None else live
            check_positions(session, lo, hi)
            entries = await reader.entries_at(sid, lo, hi - lo + 1)
            positions = list(range(lo, lo + len(entries)))
            entries, positions = _keep_lanes(entries, positions, lanes)
            # A window over every position is the whole thread, and says so.
            whole = lo == 1 and hi == live and not lanes and options.last is None
            scope = None if whole else f"positions {lo}–{hi}"
        if options.last is not None:
            entries, positions = entries[-options.last :], positions[-options.last :]
        return entries, positions, scope
    if options.last is not None:
        if lanes:
            # A role subset has at most `live` entries; and `last` may not fit an SQL integer.
            entries = await reader.last_entries(sid, min(options.last, live), lanes)
            positions = await reader.positions_of(sid, [m.ord for m in entries])
        else:
            count = min(options.last, live)
            # Newest first down the index: no position lookup needed at the end of the thread.
            entries = await reader.last_entries(sid, count, None) if count else []
            positions = list(range(live - count + 1, live + 1))
        return entries, positions, f"last {options.last}"
    entries = await reader.entries_at(sid, 1, live) if live else []
    positions = list(range(1, len(entries) + 1))
    if lanes:
        entries, positions = _keep_lanes(entries, positions, lanes)
        return entries, positions, "role filter"
    return entries, positions, None


def _check_start(start: int, end: int | None, top: int, unit: str) -> None:
    if top == 0 and start > 1:
        raise InvalidRequest(
            f"from={start}: the thread has no entries yet. Record messages with frs_record."
        )
    if start > top and (end is None or end >= start):
        raise InvalidRequest(
            f"from={start} is past the end: the last {unit} is {top}. View from 1 to {top}, "
            "or give last=N for the newest entries."
        )


def _keep_lanes(
    entries: list[Message], positions: list[int], lanes: Sequence[str]
) -> tuple[list[Message], list[int]]:
    if not lanes:
        return entries, positions
    kept = [(m, p) for m, p in zip(entries, positions, strict=True) if m.lane in lanes]
    return [m for m, _ in kept], [p for _, p in kept]


def _footer(
    session: Session,
    shown: int,
    positions: Sequence[int],
    scope: str | None,
    roles: Sequence[str] = (),
    merged: int | None = None,
) -> str:
    parts: list[str] = []
    if scope is None:
        parts.append(
            f"{plural(session.recorded, 'message')} in {plural(session.live_count, 'entry')}"
        )
    else:
        what = plural(shown, "entry")
        if roles:
            what = what.replace(" ", f" {' and '.join(roles)} ", 1)
        span = f" at positions {positions[0]}–{positions[-1]}" if positions else ""
        parts.append(f"showing {what}{span} of {plural(session.live_count, 'entry')}")
        parts.append(plural(session.recorded, "message"))
    if merged is not None and merged != shown:
        parts.append(f"runs merged: {shown} entries shown as {merged}")
    lanes = lane_counts({lane: session.lanes.get(lane, 0) for lane in LANES})
    if lanes:
        parts.append(lanes)
    parts.append(f"revision {session.revision}")
    parts.append(format_tokens(session.live_tokens))
    return "· " + " · ".join(parts)


def _attach(
    entries: list[Message],
    labels: list[str],
    thinking: list[Message],
    marks: list[Checkpoint],
    whole: bool,
) -> tuple[list[Entry], list[str]]:
    """Entries with the thinking and checkpoints that follow each; leading lines before all."""
    leading: list[str] = []
    thoughts: dict[int, list[Message]] = {}
    index = 0
    for thought in thinking:
        while index + 1 < len(entries) and entries[index + 1].ord <= thought.ord:
            index += 1
        if not entries or thought.ord < entries[0].ord:
            lines = split_lines(thought.content)
            leading.append("(thinking) " + escape(lines[0]))
            leading.extend(INDENT + escape(line) for line in lines[1:])
        else:
            thoughts.setdefault(index, []).append(thought)
    marks_at: dict[int, list[Checkpoint]] = {}
    for mark in marks:
        if mark.after_ord == 0:
            if whole or (entries and entries[0].ord == 1):
                leading.append(checkpoint_line(mark))
            continue
        for i, entry in enumerate(entries):
            if entry.ord <= mark.after_ord <= entry.ord_last:
                marks_at.setdefault(i, []).append(mark)
                break
    built = [
        Entry(text, entry, tuple(thoughts.get(i, ())), tuple(marks_at.get(i, ())))
        for i, (entry, text) in enumerate(zip(entries, labels, strict=True))
    ]
    return built, leading


def _shows_end(session: Session, positions: Sequence[int]) -> bool:
    return not positions or positions[-1] == session.live_count


def _focus_headings(
    entries: list[Entry], layers: Sequence[FocusLayer], shows_end: bool
) -> tuple[list[Entry], list[str]]:
    """Each open focus layer's goal above its first entry; an empty layer's after the last."""
    headings: dict[int, list[str]] = {}
    trailing: list[str] = []
    for layer in layers:
        line = _heading(layer)
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


def _merge_runs(
    entries: list[Entry],
    positions: Sequence[int],
    mode: Numbering,
    tiers: Sequence[str] | None = None,
) -> tuple[list[Entry], list[str]]:
    """Consecutive assistant and tool messages of one run become one entry spanning them.

    With `tiers` (a budgeted view), only entries shown in the same tier merge, and one-line
    cards never do; the tier of each resulting entry is returned beside it.
    """
    merged: list[Entry] = []
    merged_tiers: list[str] = []
    group: list[tuple[Entry, int]] = []
    group_tier = "whole"

    def flush() -> None:
        if group:
            merged_tiers.append(group_tier)
        if len(group) == 1:
            merged.append(group[0][0])
        elif group:
            first, last = group[0], group[-1]
            if mode == "position":
                span = f"{first[1]}–{last[1]}"
            else:
                span = f"{first[0].message.ord}–{last[0].message.ord_last}"
            merged.append(
                Entry(
                    span,
                    first[0].message,
                    tuple(t for entry, _ in group for t in entry.thinking),
                    tuple(c for entry, _ in group for c in entry.checkpoints),
                    members=tuple(entry.message for entry, _ in group),
                    headings=first[0].headings,
                )
            )
        group.clear()

    for index, (entry, position) in enumerate(zip(entries, positions, strict=True)):
        message = entry.message
        tier = tiers[index] if tiers is not None else "whole"
        mergeable = (
            message.kind == "message"
            and message.role in ("assistant", "tool")
            and message.run_id is not None
            and tier != "line"
        )
        # A group holds adjacent positions only (a filtered view may hide messages between
        # two of a run's), and a focus heading starts a new group: a span never covers what
        # the view does not show, nor crosses the start of a layer.
        joins = (
            bool(group)
            and mergeable
            and message.run_id == group[-1][0].message.run_id
            and position == group[-1][1] + 1
            and not entry.headings
            and tier == group_tier
        )
        if group and not joins:
            flush()
        if mergeable:
            group.append((entry, position))
            group_tier = tier
        else:
            merged.append(entry)
            merged_tiers.append(tier)
    flush()
    return merged, merged_tiers


def _stamp(entries: list[Entry]) -> list[Entry]:
    """Times on user messages; replies after a user message indented under it, unstamped;
    system messages as they are."""
    stamped: list[Entry] = []
    under_user = False
    for entry in entries:
        if entry.message.role == "user" and entry.message.kind == "message":
            under_user = True
            stamped.append(replace(entry, stamp=_minute(entry.message.created_at)))
        elif entry.message.role == "system":
            stamped.append(entry)  # instructions, not an event in time
        elif under_user:
            stamped.append(replace(entry, reply=True))
        else:
            stamped.append(replace(entry, stamp=_minute(entry.message.created_at)))
    return stamped


def _minute(created_at: str) -> str:
    """`YYYY-MM-DD HH:MM` of an ISO-8601 time, as recorded (no zone conversion)."""
    return created_at[:16].replace("T", " ")


# -- budgets --------------------------------------------------------------------------------


def _weight(lines: Sequence[str]) -> float:
    """Estimated tokens of the lines joined by newlines, counting one newline after each: never
    less than the estimate of the joined text, since the estimator's weight is subadditive."""
    return sum(map(token_weight, lines)) + len(lines) * _NEWLINE


def _tokens(weight: float) -> int:
    return math.ceil(weight)


async def _budgeted(request: _Request, capped: bool = False) -> str:
    """The newest entries whole, older ones as cards, then one-line cards, the rest omitted.

    `capped`: the server's cap, not the caller's budget: a thread that fits whole is shown
    as it is, without a budget note.
    """
    session, options, frame = request.session, request.options, request.frame
    budget = options.budget_tokens or 0
    live = session.live_count
    most = options.last if options.last is not None else live
    # Reserve the widest the note and footer can get, and every open layer's heading, so the
    # chosen entries fit at the first try; the note is sized for any budget, so the minimum
    # it names is itself accepted.
    widest_note = _budget_note(10**12, live, live, live, (1, live), request.mode)
    widest_footer = _footer(
        session, live, [live, live], "budget", merged=live - 1 if options.merge_runs else None
    )
    skeleton = render_view(
        session.title,
        session.goal,
        request.plan,
        request.leading,
        [],
        widest_footer,
        request.preview,
    )
    headings = [_heading(layer) for layer in frame.layers]
    fixed = _weight([*skeleton.split("\n"), widest_note, *headings])
    room = budget - fixed
    sizer = _Sizer(request)
    # Room for at least the newest entry as a one-line card, which non-ASCII text can make
    # several times the usual reserve: the minimum named is one that shows an entry.
    newest = (await sizer.chunk(max(1, live - _CHUNK + 1), live))[-1:] if live else []
    needed = max(_MIN_ENTRY_TOKENS, sizer.size(live, newest[0], "line") if newest else 0)
    if room < needed:
        minimum = _tokens(fixed + needed)
        raise InvalidRequest(
            f"budget_tokens={budget} is below what the view's header and footer and its newest "
            f"entry as a one-line card need (~{minimum} tokens); use at least {minimum}."
        )
    limit = budget
    best, best_size = None, 0.0
    for _ in range(_FIT_TRIES):
        # First the newest entries whole back to the start: a thread that fits is shown as it
        # is. Only if it does not are older entries shrunk, tier by tier.
        chosen, complete = await _walk(sizer, most, room, _ALL_WHOLE)
        if complete and capped and chosen and chosen[0][0] == 1:
            whole = await _plain(
                request, [message for _, message, _ in chosen], [at for at, _, _ in chosen], None
            )
            if _weight(whole.text.split("\n")) <= limit:
                return whole.text
            capped = False  # the extras (thinking, say) push it over: fit it like any budget
        if not complete:
            chosen, _ = await _walk(sizer, most, room, _TIERED)
        text = await _assemble(sizer, chosen, budget, most)
        # Entries are sized one by one; merged runs, stamps and thinking make the assembled
        # view smaller or larger than that sum. Over: shrink the room by the excess, and by
        # at least the oldest entry shown, so the next try shows less. Well under (runs
        # merged): grow it by the slack, unless nothing more could be shown.
        size = _weight(text.split("\n"))
        if size > limit:
            oldest = sizer.size(*chosen[0]) if chosen else 0.0
            room -= max(size - limit, oldest)
            if room < needed:
                break
            continue
        if size > best_size:
            best, best_size = text, size
        if complete or limit - size <= limit // _SLACK_SHARE:
            break
        room += limit - size
    if best is not None:
        return best
    # Nothing fitted in the tries: the newest entry as a one-line card always does (the
    # check above sized it, and the frame was reserved).
    newest_only = [(live, newest[0], "line")]
    return await _assemble(sizer, newest_only, budget, most)


async def _assemble(
    sizer: _Sizer, chosen: list[tuple[int, Message, str]], budget: int, most: int
) -> str:
    """The budgeted view of the chosen entries, with every option the caller asked for."""
    request = sizer.request
    session, options, mode, frame = request.session, request.options, request.mode, request.frame
    positions = [at for at, _, _ in chosen]
    entries = [message for _, message, _ in chosen]
    tiers = [tier for _, _, tier in chosen]
    starts = bool(positions) and positions[0] == 1
    thinking: list[Message] = []
    if options.show_thinking:
        if starts:
            thinking.extend(await request.reader.thinking(session.id, 0, 0))
        for message, tier in zip(entries, tiers, strict=True):
            if tier == "whole":  # cards and one-line cards leave thinking out
                thinking.extend(sizer.thoughts.get(message.ord, ()))
    labels = [label(m, p, mode) for m, p in zip(entries, positions, strict=True)]
    built, before = _attach(entries, labels, thinking, list(frame.checkpoints), whole=starts)
    built, trailing = _focus_headings(built, frame.layers, shows_end=True)
    shown = len(built)
    if options.merge_runs:
        built, tiers = _merge_runs(built, positions, mode, tiers)
    if options.show_times:
        built = _stamp(built)
    first = positions[0] if positions else session.live_count + 1
    # Positions before the first shown that the view would show but for the budget: with
    # `last`, only those among the last N.
    floor = max(1, session.live_count - most + 1)
    omitted = (floor, first - 1) if first > floor else None
    note = _budget_note(
        budget, tiers.count("whole"), tiers.count("card"), tiers.count("line"), omitted, mode
    )
    footer = _footer(session, shown, positions, "budget", merged=len(built))
    header = render_view(
        session.title, session.goal, request.plan, request.leading, [], "", request.preview
    )
    lines = header.split("\n")
    lines = [*lines[:-1], note, *before]
    for entry, tier in zip(built, tiers, strict=True):
        lines.extend(sizer.lines(entry, tier))
    lines.extend([*trailing, footer])
    return "\n".join(lines)


def _heading(layer: FocusLayer) -> str:
    return f"▸ focus {layer.depth}: {escape_inline(layer.goal)}"


class _Sizer:
    """A budgeted view's entries and their size per tier, each read and rendered once,
    however many walks the view takes."""

    def __init__(self, request: _Request) -> None:
        self.request = request
        self.session, self.options = request.session, request.options
        self.mode, self.preview = request.mode, request.preview
        self.marks = request.frame.checkpoints
        self.thoughts: dict[int, list[Message]] = {}  # thinking blocks by their entry's ord
        self._chunks: dict[int, list[Message]] = {}
        self._sizes: dict[tuple[int, str], float] = {}
        self._lines: dict[tuple[int, str], list[str]] = {}  # by (ord, tier)

    async def chunk(self, start: int, end: int) -> list[Message]:
        if start not in self._chunks:
            chunk = await self.request.reader.entries_at(self.session.id, start, end - start + 1)
            self._chunks[start] = chunk
            if self.options.show_thinking and chunk:
                found = await self.request.reader.thinking(
                    self.session.id, chunk[0].ord, chunk[-1].ord_last
                )
                # Each block goes with the newest entry at or before it, as `_attach` places it.
                index = 0
                for thought in found:
                    while index + 1 < len(chunk) and chunk[index + 1].ord <= thought.ord:
                        index += 1
                    self.thoughts.setdefault(chunk[index].ord, []).append(thought)
        return self._chunks[start]

    def size(self, at: int, message: Message, tier: str) -> float:
        """The entry's estimated tokens in `tier`, with room for a stamp or a reply's indent."""
        key = (at, tier)
        if key not in self._sizes:
            mine = tuple(m for m in self.marks if message.ord <= m.after_ord <= message.ord_last)
            thoughts = tuple(self.thoughts.get(message.ord, ())) if tier == "whole" else ()
            entry = Entry(label(message, at, self.mode), message, thoughts, mine)
            lines = self._lines[(message.ord, tier)] = _tier_lines(entry, tier, self.preview)
            size = _weight(lines)
            if self.options.show_times:
                size += max(_STAMP_TOKENS, _REPLY_INDENT_TOKENS * len(lines))
            self._sizes[key] = size
        return self._sizes[key]

    def lines(self, entry: Entry, tier: str) -> list[str]:
        """The entry's lines in `tier`: as sized, unless the view added to it (a heading, a
        stamp, a merged run), which `size` left out."""
        plain = not (entry.headings or entry.stamp or entry.reply or entry.members)
        sized = self._lines.get((entry.message.ord, tier)) if plain else None
        return sized if sized is not None else _tier_lines(entry, tier, self.preview)


async def _walk(
    sizer: _Sizer, most: int, room: float, shares: dict[str, float]
) -> tuple[list[tuple[int, Message, str]], bool]:
    """Entries from the newest back, each in the largest tier that still fits its share of
    `room` tokens; oldest first, and whether the walk reached position 1 (or `most`)."""
    tiers = list(shares)
    chosen: list[tuple[int, Message, str]] = []  # (position, message, tier), newest first
    used, tier = 0.0, 0
    position = sizer.session.live_count
    while position >= 1 and len(chosen) < most:
        # Chunks start at fixed positions, so a second walk finds the first one's reads.
        start = max(1, position - _CHUNK + 1)
        chunk = await sizer.chunk(start, position)
        for at, message in zip(range(position, start - 1, -1), reversed(chunk), strict=True):
            while True:
                name = tiers[tier]
                cost = sizer.size(at, message, name)
                if used + cost <= room * shares[name]:
                    chosen.append((at, message, name))
                    used += cost
                    break
                if tier == len(tiers) - 1:
                    return chosen[::-1], False
                tier += 1
            if len(chosen) >= most:
                break
        position = start - 1
    return chosen[::-1], position < 1 or len(chosen) >= most


def _tier_lines(entry: Entry, tier: str, preview: int) -> list[str]:
    if tier == "line":
        line = one_line(entry)
        if entry.reply:
            line = REPLY_INDENT + line
        return [*entry.headings, line, *(checkpoint_line(m) for m in entry.checkpoints)]
    return render_entry(entry, preview if tier == "whole" else min(preview, _BUDGET_CARD_CHARS))


def _budget_note(
    budget: int,
    whole: int,
    cards: int,
    lines: int,
    omitted: tuple[int, int] | None,
    mode: Numbering = "position",
) -> str:
    parts = [f"Budget ~{budget:,} tokens: {plural(whole, 'entry')} whole"]
    if cards:
        parts.append(f"{cards} shrunk to cards")
    if lines:
        parts.append(f"{lines} to one-line cards")
    text = ", ".join(parts)
    if omitted is not None:
        lo, hi = omitted
        text += (
            f"; positions {lo}–{hi} ({hi - lo + 1:,} {'entry' if lo == hi else 'entries'}) "
            "omitted: "
            f"frs_view_thread({_POSITIONS if mode == 'absolute' else ''}from={lo}, to={hi}) "
            "shows them"
        )
    return text


class _Cut:
    """A window, role or run view over its budget: its oldest entries are cut, and the view
    says how many, which, and the call that shows them."""

    def __init__(self, request: _Request, trailing: list[str], scope: str | None) -> None:
        self.request, self.trailing, self.scope = request, trailing, scope
        self.session, self.options, self.mode = request.session, request.options, request.mode

    def render(self, built: list[Entry], positions: list[int], budget: int, uncut: str) -> str:
        """`uncut`: the view as it was, over the budget."""
        limit = budget
        if not built:
            needed = _tokens(_weight(uncut.split("\n")))
            raise InvalidRequest(
                f"budget_tokens={budget} is below what this view's header and footer need "
                f"(~{needed} tokens); use at least {needed}."
            )
        sizes = [_weight(render_entry(entry, self.request.preview)) for entry in built]
        widest = self._view([], [positions[-1]] * len(positions), budget, built, len(positions))
        frame = _weight(widest.split("\n"))
        # At least one entry goes: the view with all of them (and no note) was over.
        kept = 1
        while kept < len(built) and frame + sum(sizes[kept:]) > limit:
            kept += 1
        if kept == len(built):
            minimum = _tokens(frame + sizes[-1])
            raise InvalidRequest(
                f"budget_tokens={budget} is too small for even the newest entry of this view "
                f"with its header and footer; use at least {minimum}."
            )
        while True:  # the widest note and footer were reserved, so this fits at once
            count = sum(len(entry.members) or 1 for entry in built[:kept])
            text = self._view(built[kept:], positions[count:], budget, built[:kept], count)
            if _weight(text.split("\n")) <= limit or kept == len(built) - 1:
                return text
            kept += 1

    def _view(
        self, kept: list[Entry], shown: list[int], budget: int, cut: list[Entry], count: int
    ) -> str:
        # Cut, a window over the whole thread no longer shows all of it: count what it shows.
        scope = self.scope or "cut"
        footer = _footer(self.session, len(shown), shown, scope, self.options.roles, len(kept))
        return render_view(
            self.session.title,
            self.session.goal,
            self.request.plan,
            [*self.request.leading, self._note(budget, cut, count)],
            kept,
            "\n".join([*self.trailing, footer]),
            self.request.preview,
        )

    def _note(self, budget: int, cut: list[Entry], count: int) -> str:
        entries = [m for entry in cut for m in (entry.members or (entry.message,))]
        text = f"Budget ~{budget:,} tokens: the oldest {plural(count, 'entry')} of this view cut"
        if self.options.run_id is not None or not entries:
            return text
        options = self.options
        if self.mode == "absolute":
            lo, hi = entries[0].ord, entries[-1].ord_last
        else:
            lo, hi = _first_label(cut[0]), _last_label(cut[-1])
        args = [f"from={lo}", f"to={hi}"]
        if options.roles:
            args.append("roles=[" + ", ".join(f'"{r}"' for r in options.roles) + "]")
        if options.numbering is not None:
            args.append(f'numbering="{options.numbering}"')
        return f"{text}: frs_view_thread({', '.join(args)}) shows them"


def _first_label(entry: Entry) -> int:
    return int(entry.label.split("–")[0])


def _last_label(entry: Entry) -> int:
    return int(entry.label.split("–")[-1])
