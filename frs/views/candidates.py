"""A view's candidate entries as a budgeted view reads them: a chunk at a time, from the
newest back, each rendered once per tier and sized in estimated tokens; and written out, once
fitted, as the head's one-line cards, group lines, or entries dressed as the options ask.

Sizes are `frs.text.token_weight` sums, additive, so the sum of an entry's lines is what it
adds to the view; `weigh` is the one place lines become tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from frs.model import FocusLayer, Message
from frs.text import TOKEN_UNIT, token_units, token_weight
from frs.views.fitting import Tier
from frs.views.layout import Shown, focus_heading, gap_line, label
from frs.views.render import (
    REPLY_INDENT,
    Entry,
    checkpoint_line,
    group_line,
    one_line,
    render_entry,
)
from frs.views.selection import Request, Selection

#: A card's preview in budgeted views, shorter than the server's preview cap.
CARD_CHARS = 300
#: The first words a one-line card shows.
LINE_CHARS = 56
_NEWLINE = token_weight("\n")  # the newline a view's first line ends with
_CHUNK = 64  # entries read at a time as the walk goes back
_STAMP = " [2025-01-02 10:00]"


class Candidates:
    """A selection's entries, read a chunk at a time as the walk asks for them, each rendered
    once per tier however often the walk sizes it."""

    def __init__(self, request: Request, selection: Selection) -> None:
        self.request, self.selection = request, selection
        self.count = selection.count
        self._shown: dict[int, Shown] = dict(enumerate(selection.shown or ()))
        self._thoughts: dict[int, list[Message]] = {}
        self._read: set[int] = set()  # chunks read (thinking included)
        self._lines: dict[tuple[int, Tier], list[str]] = {}
        self._sizes: dict[tuple[int, Tier], float] = {}
        self._groups: dict[tuple[int, int], str] = {}

    def position(self, index: int) -> int:
        if self.selection.shown is not None:
            return self.selection.shown[index].position
        return self.selection.first + index

    def positions(self, lo: int, hi: int) -> Sequence[int]:
        """The positions of candidates `lo`..`hi - 1`: a range for a stretch of the thread,
        which names 100,000 left-out positions without listing them."""
        if self.selection.shown is None:
            return range(self.selection.first + lo, self.selection.first + hi)
        return [s.position for s in self.selection.shown[lo:hi]]

    def anchor(self, index: int) -> int:
        return self.selection.first + index if self.selection.shown is None else index + 1

    async def shown(self, index: int) -> Shown:
        chunk = index // _CHUNK if self.selection.shown is None else 0
        if chunk not in self._read:
            await self._read_chunk(chunk)
        return self._shown[index]

    def thoughts(self, index: int) -> list[Message]:
        return self._thoughts.get(index, [])

    async def _read_chunk(self, chunk: int) -> None:
        selection = self.selection
        if selection.shown is None:
            lo, hi = chunk * _CHUNK, min(self.count, (chunk + 1) * _CHUNK)
            found = await self.request.reader.entries_at(
                self.request.session.id, selection.first + lo, hi - lo
            )
            for offset, message in enumerate(found):
                self._shown[lo + offset] = Shown(selection.first + lo + offset, message)
        else:
            lo, hi = 0, self.count
        self._read.add(chunk)
        if self.request.options.show_thinking and hi > lo:
            await self._read_thinking(lo, hi)

    async def _read_thinking(self, lo: int, hi: int) -> None:
        """Each thinking block goes with the newest candidate at or before it."""
        first, last = self._shown[lo].message, self._shown[hi - 1].message
        found = await self.request.reader.thinking(
            self.request.session.id, first.ord, last.ord_last
        )
        index = lo
        for thought in found:
            while index + 1 < hi and self._shown[index + 1].message.ord <= thought.ord:
                index += 1
            self._thoughts.setdefault(index, []).append(thought)

    async def size(self, index: int, tier: Tier) -> float:
        key = (index, tier)
        if key not in self._sizes:
            lines = self._lines[key] = self._render(await self.shown(index), index, tier)
            size = weigh(lines)
            if self.request.options.show_times:
                # Room for a stamp on the first line, or a reply's indent on every line.
                size += max(token_weight(_STAMP), len(lines) * token_weight(REPLY_INDENT))
            self._sizes[key] = size
        return self._sizes[key]

    def _render(self, shown: Shown, index: int, tier: Tier) -> list[str]:
        request, message = self.request, shown.message
        marks = tuple(
            m for m in request.frame.checkpoints if message.ord <= m.after_ord <= message.ord_last
        )
        thoughts = tuple(self.thoughts(index)) if tier == "whole" else ()
        entry = Entry(label(message, shown.position, request.numbering), message, thoughts, marks)
        return tier_lines(entry, tier, request.preview_chars)

    async def group_size(self, lo: int, hi: int) -> float:
        return weigh([await self.group(lo, hi)])

    async def group(self, lo: int, hi: int) -> str:
        """The group line for the candidates at `lo`..`hi`."""
        key = (lo, hi)
        if key not in self._groups:
            members = [(await self.shown(index)).message for index in range(lo, hi + 1)]
            if self.request.numbering == "position":
                first, last = self.position(lo), self.position(hi)
            else:
                first, last = members[0].ord, members[-1].ord_last
            span = str(first) if first == last else f"{first}–{last}"
            self._groups[key] = group_line(span, members)
        return self._groups[key]

    def lines(self, entry: Entry, index: int, tier: Tier) -> list[str]:
        """An entry's lines as sized, unless the view added to it (a heading, a stamp, a merged
        run), which sizing left out or reserved."""
        plain = not (entry.headings or entry.stamp or entry.reply or entry.members)
        sized = self._lines.get((index, tier)) if plain else None
        return sized if sized is not None else tier_lines(entry, tier, self.request.preview_chars)

    async def head_lines(
        self, lo: int, head: int, placed: list[FocusLayer]
    ) -> tuple[list[str], list[FocusLayer]]:
        """Candidates `lo`..`head - 1` as one-line cards, as the line region showed them, each open
        layer's goal (unless already `placed`) above its first; and the layers placed so far."""
        lines: list[str] = []
        placed = list(placed)
        gaps: list[tuple[int, int]] = []
        reached = 0
        if head > lo and self.request.shows_gaps():
            if lo:
                reached = (await self.shown(lo - 1)).message.ord_last
            else:
                reached = self.request.starts_after((await self.shown(0)).message.ord)
            gaps = await self.request.restored(
                reached + 1, (await self.shown(head - 1)).message.ord
            )
        for index in range(lo, head):
            shown = await self.shown(index)
            await self.size(index, "line")  # renders and keeps the lines
            while gaps and gaps[0][0] < shown.message.ord:
                number, n = gaps.pop(0)
                if number > reached:
                    lines.append(gap_line(number, n))
            if gaps:
                reached = max(reached, shown.message.ord_last)
            for layer in self.request.frame.layers:
                if layer not in placed and layer.start_ord <= shown.message.ord_last:
                    placed.append(layer)
                    lines.append(focus_heading(layer))
            entry = Entry(
                label(shown.message, shown.position, self.request.numbering), shown.message
            )
            lines.extend(self.lines(entry, index, "line"))
        return lines, placed

    async def group_lines(self, lo: int, hi: int, size: int) -> list[str]:
        """The group lines of candidates `lo`..`hi - 1`, each with the checkpoints inside."""
        lines: list[str] = []
        index = lo
        while index < hi:
            end = index
            block = (self.anchor(index) - 1) // size
            while end + 1 < hi and (self.anchor(end + 1) - 1) // size == block:
                end += 1
            lines.append(await self.group(index, end))
            first = (await self.shown(index)).message.ord
            last = (await self.shown(end)).message.ord_last
            marks = (m for m in self.request.frame.checkpoints if first <= m.after_ord <= last)
            lines.extend(checkpoint_line(m) for m in marks)
            index = end + 1
        return lines

    async def entry_lines(
        self, indexes: range, shown_as: Sequence[str]
    ) -> tuple[list[str], list[str], tuple[int, int]]:
        """The lines of the candidates at `indexes`, shown one by one in the tiers `shown_as`,
        decorated as the options ask; the lines after them; and how many entries they are,
        before and after merging."""
        top = indexes.start
        shown = [await self.shown(i) for i in indexes]
        thinking = [
            t
            for i, tier in zip(indexes, shown_as, strict=True)
            if tier == "whole"
            for t in self.thoughts(i)
        ]
        starts = top == 0 and self.selection.starts_thread
        if self.request.options.show_thinking and starts and not self.request.options.roles:
            thinking = [
                *await self.request.reader.thinking(self.request.session.id, 0, 0),
                *thinking,
            ]
        after = None
        if top and self.request.shows_gaps():
            after = (await self.shown(top - 1)).message.ord_last
        first_ord = shown[0].message.ord if shown else 10**18
        in_view = [
            layer for layer in self.request.frame.layers if layer.start_ord >= first_ord or not top
        ]
        dressed = await self.request.dressed(shown, shown_as, thinking, starts, after, in_view)
        index_of = {s.message.ord: i for i, s in zip(indexes, shown, strict=True)}
        lines = list(dressed.before)
        for entry, tier in zip(dressed.entries, dressed.tiers, strict=True):
            lines.extend(self.lines(entry, index_of[entry.message.ord], tier))  # type: ignore[arg-type]
        return lines, dressed.after, (dressed.count, len(dressed.entries))


def tier_lines(entry: Entry, tier: Tier, preview_chars: int) -> list[str]:
    if tier == "line":
        line = one_line(entry, LINE_CHARS)
        if entry.reply:
            line = REPLY_INDENT + line
        shrunk = [*entry.headings, line, *(checkpoint_line(m) for m in entry.checkpoints)]
        # A message as short as its one-line card ("yes", "ok") is shown as it is.
        whole = render_entry(entry, min(preview_chars, CARD_CHARS))
        return whole if weigh(whole) <= weigh(shrunk) else shrunk
    return render_entry(entry, preview_chars if tier == "whole" else min(preview_chars, CARD_CHARS))


def weigh(lines: Sequence[str]) -> float:
    """Estimated tokens `lines` add to a view below its first line: each line after a newline
    and followed by one. The estimator weighs each byte by the one before it, so these sizes
    add up to the view's own estimate exactly, but for its first line (priced at its dearest
    where it starts the view): `budgets` keeps a token for that."""
    if not lines:
        return 0.0
    return token_units("\n" + "\n".join(lines) + "\n") / TOKEN_UNIT - _NEWLINE
