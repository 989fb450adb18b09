"""A thread's view: the compact numbered text a model reads back, made by one pipeline.

`render_thread` is the one way in; the options go down these modules, each using only those
below it:

    thread.py      `render_thread`: the selection shown whole, or handed to the budget
    budgets.py     the budgeted view: the frame sized, the pinned task, assembly, the last line
    candidates.py  a budgeted view's entries, read from the newest back, sized per tier,
                   written out in the tiers fitted
    fitting.py     the tier each candidate gets: arithmetic on sizes, no text (`place`, then
                   `Placement.spend`); how a room is shared out (`Shape`), `Sizer`
    selection.py   the entries the options select, the call (`Request`: its entries dressed
                   as the options ask), its `Frame`
    options.py     `ViewOptions`, the one options type, and `check_view_options`
    layout.py      what surrounds the entries: labels, thinking, marks, headings, runs, footer
    render.py      an entry as text (whole, card, one line, group line) and the view's frame

One name per quantity, all the way down:

- `budget`: estimated tokens the whole view may take: `ViewOptions.budget_tokens`, or on a
  view of the whole thread the server's cap (`Limits.view_tokens`).
- `room`: what the entries get of the budget once the frame (header, marker, focus headings,
  footer at its widest, restored-gap lines) is taken off. `place` shares it out, once per
  room: a share to each head, one room per region of the view (`Shape.whole`, `.card`,
  `.line`, `.group`), and what the regions leave to the band.
- `spare`: what the frame, sized at its widest, and the sizes' rounding left unused in an
  assembled view; the band alone may take it (`Placement.spend`), so no region's start moves
  for it.
- `size`: estimated tokens one entry adds in one tier (`Sizer.size`); lines become tokens in
  one place, `candidates.weigh`.
- `minimum`: the least budget the view could be fitted into, named in the error for a budget
  below it.
- `preview_chars`: characters of a message shown before it becomes a card
  (`ViewOptions.preview_chars`, else `Limits.preview_chars`); a budgeted view's cards show at
  most `candidates.CARD_CHARS`.
- `numbering`: "position" or "absolute" (`ViewOptions.numbering`, else the session's own).
- `position`: 1-based, where an entry sits now; `number` (`Message.ord`): permanent; `index`:
  0-based among the candidates; `anchor`: where a candidate sits for blocks and groups.
- `tier`: "whole", "card", "line" (a one-line card) or "group" (one line for `PER_GROUP`
  entries); a `Fit`, held as `fitted`, gives each candidate its tier.
"""

from frs.views.options import ViewOptions, check_view_options
from frs.views.selection import Frame, load_frame
from frs.views.thread import render_thread

__all__ = ["Frame", "ViewOptions", "check_view_options", "load_frame", "render_thread"]
