"""Which entries a view may show: the selection the options make, and its frame.

A view reads only what it shows: a window or the last N come from position lookups, and the
whole thread over a budget is read lazily, from the newest entry back, only as far as the
budget reaches (`frs.views.candidates`). `last=N` is exact, so its first entry moves with every
append; `from=` a fixed position is the window a prompt cache keeps (the tool's description
says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frs.checks import check_numbers, check_positions
from frs.errors import InvalidRequest
from frs.model import Checkpoint, FocusLayer, Limits, Message, Numbering, PlanStep, Session
from frs.ports import ThreadReader
from frs.views.layout import (
    Dressed,
    Shown,
    attach,
    focus_headings,
    label,
    merge_runs,
    restored_gaps,
    sources_block,
    stamp,
)
from frs.views.options import ViewOptions
from frs.views.render import render_view


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


@dataclass(frozen=True, slots=True)
class Request:
    """One view call: what was asked, and the snapshot and frame it is read from."""

    reader: ThreadReader
    session: Session
    options: ViewOptions
    numbering: Numbering
    preview_chars: int
    plan: Sequence[PlanStep]
    leading: list[str]  # lines under the header (the sources block)
    frame: Frame

    @classmethod
    def of(
        cls,
        reader: ThreadReader,
        session: Session,
        options: ViewOptions,
        limits: Limits,
        sources: Sequence[str],
        frame: Frame,
    ) -> Request:
        return cls(
            reader,
            session,
            options,
            options.numbering or session.numbering,
            options.preview_chars or limits.preview_chars,
            frame.plan if options.show_plan else (),
            sources_block(sources),
            frame,
        )

    def shows_gaps(self) -> bool:
        """Whether the view says why a number is missing (`frs.views.layout.restored_gaps`): in
        absolute numbering, when no filter hides entries anyway."""
        options = self.options
        return self.numbering == "absolute" and not options.roles and options.run_id is None

    def starts_after(self, first: int) -> int:
        """The number a view whose first entry starts at ord `first` shows nothing up to: the
        one before `from` in an absolute window (a gap where it starts is explained)."""
        start = self.options.start
        return first - 1 if start is None or self.numbering != "absolute" else min(start, first) - 1

    async def restored(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The restored summaries numbered lo..hi, when the view shows gaps."""
        if not self.shows_gaps() or hi < lo:
            return []
        return await self.reader.restored_summaries(self.session.id, lo, hi)

    async def dressed(
        self,
        shown: Sequence[Shown],
        tiers: Sequence[str],
        thinking: Sequence[Message],
        starts_thread: bool,
        after: int | None = None,
        layers: Sequence[FocusLayer] | None = None,
    ) -> Dressed:
        """`shown` in `tiers` with every decoration the options ask for, in one order for
        plain and budgeted views: labels, thinking and checkpoints, the numbers restored
        summaries left (past `after`, else past where the view starts), the focus `layers`
        (else every open one), merged runs, time stamps."""
        gaps: list[tuple[int, int]] = []
        if shown and self.shows_gaps():
            after = self.starts_after(shown[0].message.ord) if after is None else after
            gaps = await self.restored(after + 1, shown[-1].message.ord)
        labels = [label(s.message, s.position, self.numbering) for s in shown]
        built, before = attach(shown, labels, thinking, self.frame.checkpoints, starts_thread)
        built = restored_gaps(built, gaps, after or 0)  # without gaps, `after` goes unread
        ends = not shown or shown[-1].position == self.session.live_count
        layers = self.frame.layers if layers is None else layers
        built, trailing = focus_headings(built, layers, ends)
        count = len(built)
        merged = list(tiers)
        if self.options.merge_runs:
            built, merged = merge_runs(built, [s.position for s in shown], self.numbering, merged)
        if self.options.show_times:
            built = stamp(built)
        return Dressed(before, built, merged, trailing, count)

    def header(self) -> list[str]:
        """The title line, goal, plan and sources: the view's first lines."""
        session = self.session
        return render_view(
            session.title, session.goal, self.plan, self.leading, [], "", self.preview_chars
        ).split("\n")[:-1]


@dataclass(frozen=True, slots=True)
class Selection:
    """The entries a view may show, oldest first. `shown` is None for a stretch of the thread
    that is read lazily (positions `first`..`first + count - 1`); `scope` names a window for
    the footer (None: the whole thread)."""

    shown: list[Shown] | None
    first: int
    count: int
    scope: str | None

    @property
    def starts_thread(self) -> bool:
        return self.scope is None or (self.shown is None and self.first == 1)


async def select(request: Request) -> Selection:
    """The entries the options ask for, before any budget applies."""
    reader, session, options = request.reader, request.session, request.options
    sid, live, lanes = session.id, session.live_count, options.roles
    if options.run_id is not None:
        entries = await reader.run_entries(sid, options.run_id)
        positions = await reader.positions_of(sid, [m.ord for m in entries])
        shown = [Shown(p, m) for p, m in zip(positions, entries, strict=True)]
        shown = [s for s in shown if not lanes or s.message.lane in lanes]
        if options.last is not None:
            shown = shown[-options.last :]
        return Selection(shown, 0, len(shown), f"run {options.run_id}")
    if options.start is not None or options.end is not None:
        return await _window(request)
    if options.last is not None:
        if lanes:
            # A role subset has at most `live` entries; and `last` may not fit an SQL integer.
            entries = await reader.last_entries(sid, min(options.last, live), lanes)
            positions = await reader.positions_of(sid, [m.ord for m in entries])
            shown = [Shown(p, m) for p, m in zip(positions, entries, strict=True)]
            return Selection(shown, 0, len(shown), f"last {options.last}")
        count = min(options.last, live)
        return Selection(None, live - count + 1, count, f"last {options.last}")
    if lanes:
        entries = await reader.entries_between(sid, 0, session.next_number, lanes)
        positions = await reader.positions_of(sid, [m.ord for m in entries])
        shown = [Shown(p, m) for p, m in zip(positions, entries, strict=True)]
        return Selection(shown, 0, len(shown), "role filter")
    return Selection(None, 1, live, None)


async def _window(request: Request) -> Selection:
    """`from`/`to`: a read, so a window running past the end shows up to the end (a range to
    squash is exact instead); one starting past the end is a mistake worth saying."""
    reader, session, options = request.reader, request.session, request.options
    sid, live, lanes = session.id, session.live_count, options.roles
    lo = options.start if options.start is not None else 1
    if live == 0 and lo == 1:
        return Selection([], 0, 0, None)  # `from=1` on an empty thread: nothing, not an error
    if request.numbering == "absolute":
        top = session.next_number - 1
        _check_start(lo, options.end, top, "number")
        if options.end is not None and options.end < lo:
            check_numbers(session, lo, options.end)  # names from and to as given
        hi = min(options.end, top) if options.end is not None else top
        check_numbers(session, lo, hi)
        if lanes:
            entries = await reader.entries_between(sid, lo, hi, lanes)
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
        # A window over every position is the whole thread, and says so.
        whole = lo == 1 and hi == live and not lanes and options.last is None
        scope = None if whole else f"positions {lo}–{hi}"
    shown = [Shown(p, m) for p, m in zip(positions, entries, strict=True)]
    shown = [s for s in shown if not lanes or s.message.lane in lanes]
    if options.last is not None:
        shown = shown[-options.last :]
    return Selection(shown, 0, len(shown), scope)


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


async def load(request: Request, selection: Selection) -> list[Shown]:
    """Every entry of the selection (a lazy stretch read in one go)."""
    if selection.shown is not None:
        return selection.shown
    if not selection.count:
        return []
    entries = await request.reader.entries_at(request.session.id, selection.first, selection.count)
    return [Shown(selection.first + i, m) for i, m in enumerate(entries)]
