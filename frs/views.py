"""Views of a thread: which entries a view shows, and how it fits a token budget.

A view reads only what it shows: a window or the last N come from position lookups, and a
budgeted view walks back from the newest entry a chunk at a time and stops when the budget is
spent, so its cost does not grow with the part of the thread it leaves out.
"""

from __future__ import annotations

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
from frs.text import check_text

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
    if options.budget_tokens is None and unbounded and session.live_tokens > limits.view_tokens:
        # A whole-thread view never exceeds the server's cap (a host's cap on tool output is
        # about 25,000 tokens); the view says so and how to see more.
        options = replace(options, budget_tokens=limits.view_tokens)
    budgeted = options.budget_tokens is not None and not (
        options.start or options.end or options.roles or options.run_id
    )
    if budgeted and session.live_count > _WHOLE_IF_UNDER:
        return await _budgeted(reader, session, options, mode, preview, plan, leading, frame)
    entries, positions, scope = await _select(reader, session, options, mode)
    thinking: list[Message] = []
    if options.show_thinking and entries:
        thinking = await reader.thinking(session.id, entries[0].ord, entries[-1].ord_last)
    if options.show_thinking and not options.roles and (not entries or positions[0] == 1):
        thinking = [*await reader.thinking(session.id, 0, 0), *thinking]
    marks = list(frame.checkpoints)
    labels = [label(m, p, mode) for m, p in zip(entries, positions, strict=True)]
    built, before = _attach(entries, labels, thinking, marks, whole=scope is None)
    leading.extend(before)
    if session.live_count == 0:
        leading.append("(no messages yet: record them with frs_record)")
    layers = frame.layers
    built, trailing = _focus_headings(built, layers, shows_end=_shows_end(session, positions))
    shown = len(built)
    if options.merge_runs:
        built = _merge_runs(built, positions, mode)
    if options.show_times:
        built = _stamp(built)
    footer = _footer(session, shown, positions, scope, options.roles, merged=len(built))
    if trailing:
        footer = "\n".join([*trailing, footer])
    text = render_view(session.title, session.goal, plan, leading, built, footer, preview)
    if budgeted and _tokens_of_bytes(_bytes(text.split("\n"))) > (options.budget_tokens or 0):
        return await _budgeted(
            reader, session, options, mode, preview, plan, _sources_block(sources), frame
        )
    if options.budget_tokens is not None:
        return _trim_to_budget(text, options.budget_tokens)
    return text


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
        if live == 0 and options.end is None:
            return [], [], None  # `from=1` on an empty thread: nothing to show, not an error
        if mode == "absolute":
            lo = options.start if options.start is not None else 1
            hi = options.end if options.end is not None else max(session.next_number - 1, 1)
            check_numbers(session, lo, hi)
            if lanes:
                entries = await reader.lane_entries(sid, lanes, lo, hi)
            else:
                entries = await reader.entries_between(sid, lo, hi)
                cover = await reader.entry_covering(sid, lo)
                if cover is not None and cover.ord < lo <= cover.ord_last:
                    entries.insert(0, cover)
            positions = await reader.positions_of(sid, [m.ord for m in entries])
            scope: str | None = f"numbers {lo}–{hi}"
        else:
            lo = options.start if options.start is not None else 1
            hi = options.end if options.end is not None else live
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
        line = f"▸ focus {layer.depth}: {escape_inline(layer.goal)}"
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


def _merge_runs(entries: list[Entry], positions: Sequence[int], mode: Numbering) -> list[Entry]:
    """Consecutive assistant and tool messages of one run become one entry spanning them."""
    merged: list[Entry] = []
    group: list[tuple[Entry, int]] = []

    def flush() -> None:
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

    for entry, position in zip(entries, positions, strict=True):
        message = entry.message
        mergeable = (
            message.kind == "message"
            and message.role in ("assistant", "tool")
            and message.run_id is not None
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
        )
        if group and not joins:
            flush()
        if mergeable:
            group.append((entry, position))
        else:
            merged.append(entry)
    flush()
    return merged


def _stamp(entries: list[Entry]) -> list[Entry]:
    """Times on user messages; replies after a user message indented under it, unstamped."""
    stamped: list[Entry] = []
    under_user = False
    for entry in entries:
        if entry.message.role == "user" and entry.message.kind == "message":
            under_user = True
            stamped.append(replace(entry, stamp=_minute(entry.message.created_at)))
        elif under_user:
            stamped.append(replace(entry, reply=True))
        else:
            stamped.append(replace(entry, stamp=_minute(entry.message.created_at)))
    return stamped


def _minute(created_at: str) -> str:
    """`YYYY-MM-DD HH:MM` of an ISO-8601 time, as recorded (no zone conversion)."""
    return created_at[:16].replace("T", " ")


# -- budgets --------------------------------------------------------------------------------


def _bytes(lines: Sequence[str]) -> int:
    """UTF-8 size of the lines joined by newlines, counting one newline after each."""
    return sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines)


def _tokens_of_bytes(size: int) -> int:
    return (size + 3) // 4


async def _budgeted(
    reader: ThreadReader,
    session: Session,
    options: ViewOptions,
    mode: Numbering,
    preview: int,
    plan: Sequence[PlanStep],
    leading: list[str],
    frame: Frame,
) -> str:
    """The newest entries whole, older ones as cards, then one-line cards, the rest omitted."""
    budget = options.budget_tokens or 0
    live = session.live_count
    newest = live
    most = options.last if options.last is not None else live
    # Reserve the widest the note and footer can get, so the chosen entries always fit; the
    # note is sized for any budget, so the minimum it names is itself accepted.
    widest_note = _budget_note(10**12, live, live, live, live, live)
    widest_footer = _footer(session, live, [live, live], "budget")
    skeleton = render_view(session.title, session.goal, plan, leading, [], widest_footer, preview)
    fixed = _bytes([*skeleton.split("\n"), widest_note])
    room = budget * 4 - fixed
    if room < _MIN_ENTRY_TOKENS * 4:
        minimum = _tokens_of_bytes(fixed) + _MIN_ENTRY_TOKENS
        raise InvalidRequest(
            f"budget_tokens={budget} is below what the view's header and footer need "
            f"(~{_tokens_of_bytes(fixed)} tokens); use at least {minimum}."
        )
    marks = frame.checkpoints
    # First try the newest entries whole back to the start: a thread that fits is shown as
    # it is. Only if it does not are older entries shrunk, tier by tier.
    sizer = _Sizer(reader, session, mode, preview, marks)
    chosen, complete = await _walk(sizer, most, room, _ALL_WHOLE)
    if not complete:
        chosen, _ = await _walk(sizer, most, room, _TIERED)
    first = chosen[0][0] if chosen else newest + 1
    tiers = [t for _, _, t in chosen]
    note = _budget_note(
        budget, tiers.count("whole"), tiers.count("card"), tiers.count("line"), first - 1, live
    )
    lines = [*skeleton.split("\n")[:-1], note]
    for at, message, t in chosen:
        lines.extend(sizer.lines(at, message, t))
    positions = [at for at, _, _ in chosen]
    lines.append(_footer(session, len(chosen), positions, "budget"))
    return "\n".join(lines)


class _Sizer:
    """A budgeted view's entries and their lines per tier, each read and rendered once,
    however many walks the view takes."""

    def __init__(
        self,
        reader: ThreadReader,
        session: Session,
        mode: Numbering,
        preview: int,
        marks: Sequence[Checkpoint],
    ) -> None:
        self.reader, self.session = reader, session
        self.mode, self.preview, self.marks = mode, preview, marks
        self._chunks: dict[int, list[Message]] = {}
        self._lines: dict[tuple[int, str], list[str]] = {}

    async def chunk(self, start: int, end: int) -> list[Message]:
        if start not in self._chunks:
            self._chunks[start] = await self.reader.entries_at(
                self.session.id, start, end - start + 1
            )
        return self._chunks[start]

    def lines(self, at: int, message: Message, tier: str) -> list[str]:
        key = (at, tier)
        if key not in self._lines:
            self._lines[key] = _entry_lines(message, at, self.mode, tier, self.preview, self.marks)
        return self._lines[key]


async def _walk(
    sizer: _Sizer, most: int, room: int, shares: dict[str, float]
) -> tuple[list[tuple[int, Message, str]], bool]:
    """Entries from the newest back, each in the largest tier that still fits its share of
    `room` bytes; oldest first, and whether the walk reached position 1 (or `most`)."""
    tiers = list(shares)
    chosen: list[tuple[int, Message, str]] = []  # (position, message, tier), newest first
    used, tier = 0, 0
    position = sizer.session.live_count
    while position >= 1 and len(chosen) < most:
        # Chunks start at fixed positions, so a second walk finds the first one's reads.
        start = max(1, position - _CHUNK + 1)
        chunk = await sizer.chunk(start, position)
        for at, message in zip(range(position, start - 1, -1), reversed(chunk), strict=True):
            while True:
                name = tiers[tier]
                cost = _bytes(sizer.lines(at, message, name))
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


def _entry_lines(
    message: Message,
    position: int,
    mode: Numbering,
    tier: str,
    preview: int,
    marks: Sequence[Checkpoint],
) -> list[str]:
    mine = tuple(m for m in marks if message.ord <= m.after_ord <= message.ord_last)
    entry = Entry(label(message, position, mode), message, (), mine)
    if tier == "line":
        return [one_line(entry), *(checkpoint_line(m) for m in mine)]
    cap = preview if tier == "whole" else min(preview, _BUDGET_CARD_CHARS)
    return render_entry(entry, cap)


def _budget_note(budget: int, whole: int, cards: int, lines: int, omitted: int, live: int) -> str:
    parts = [f"Budget ~{budget:,} tokens: {whole} entries whole"]
    if cards:
        parts.append(f"{cards} shrunk to cards")
    if lines:
        parts.append(f"{lines} to one-line cards")
    text = ", ".join(parts)
    if omitted:
        text += (
            f"; positions 1–{omitted} ({omitted:,} entries) omitted: "
            f"frs_view_thread(from=1, to={omitted}) shows them"
        )
    return text


def _trim_to_budget(text: str, budget: int) -> str:
    """A window or role view over budget: keep the head and footer, cut entries from the top."""
    lines = text.split("\n")
    if _tokens_of_bytes(_bytes(lines)) <= budget:
        return text
    # The header is the title and the goal and plan lines that follow it, nothing else.
    head = [lines[0]]
    for line in lines[1:3]:
        if not line.startswith(("Goal: ", "Plan: ")):
            break
        head.append(line)
    footer = lines[-1]
    body = lines[len(head) : -1]
    cut = 0
    note = f"… {len(body)} lines cut to fit budget_tokens={budget}"  # the widest it can be
    while body and _tokens_of_bytes(_bytes([*head, note, *body, footer])) > budget:
        body = body[1:]
        cut += 1
    while body and body[0].startswith(" "):  # never start inside an entry
        body = body[1:]
        cut += 1
    result = [*head, f"… {cut} lines cut to fit budget_tokens={budget}", *body, footer]
    if _tokens_of_bytes(_bytes(result)) > budget:
        raise InvalidRequest(
            f"budget_tokens={budget} is below what the view's header and footer need; use at "
            f"least {_tokens_of_bytes(_bytes([*head, footer])) + _MIN_ENTRY_TOKENS}."
        )
    return "\n".join(result)
