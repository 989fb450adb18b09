"""A thread's view: the entries the options select, shown whole, or fitted to a budget.

`render_thread` is the one way a view is made. Without a budget, the selection is shown as it
is; the whole thread always has one (the server's cap), and a thread that fits it is still
shown as it is. Everything else goes through `frs.views.budgets`.
"""

from __future__ import annotations

from collections.abc import Sequence

from frs.model import Limits, Session
from frs.ports import ThreadReader
from frs.text import estimate_tokens
from frs.views.budgets import budgeted, fits_whole
from frs.views.candidates import Candidates
from frs.views.layout import Shown, footer_line
from frs.views.options import ViewOptions
from frs.views.render import render_view
from frs.views.selection import Frame, Request, Selection, load, load_frame, select

#: A selection of at most this many entries is rendered whole first, and fitted only if that
#: is over its budget; a longer one is fitted from the newest entry back at once.
WHOLE_IF_UNDER = 200


async def render_thread(
    reader: ThreadReader,
    session: Session,
    options: ViewOptions,
    limits: Limits,
    sources: Sequence[str] = (),
    frame: Frame | None = None,
) -> str:
    """The view text for `options`, read through `reader` (one consistent snapshot)."""
    frame = frame or await load_frame(reader, session)
    request = Request.of(reader, session, options, limits, sources, frame)
    selection = await select(request)
    budget = options.budget_tokens
    if budget is None and options.whole_thread and options.last is None:
        # A view of the whole thread never exceeds the server's cap (a host's cap on tool
        # output is about 25,000 tokens); a thread under it is shown as it is.
        budget = limits.view_tokens
    if budget is None:
        return await plain(request, selection, await load(request, selection))
    candidates = Candidates(request, selection)
    # A selection that fits is shown as it is. A long one is checked from its newest entry
    # back first, only as far as the budget reaches.
    if selection.count <= WHOLE_IF_UNDER or await fits_whole(candidates, budget):
        whole = await plain(request, selection, await load(request, selection))
        if estimate_tokens(whole) <= budget:
            return whole
    return await budgeted(request, candidates, budget, pin=options.whole_thread)


async def plain(request: Request, selection: Selection, shown: list[Shown]) -> str:
    """The view of `shown` with every option applied and nothing shrunk."""
    session = request.session
    thinking = []
    if request.options.show_thinking and shown:
        lo, hi = shown[0].message.ord, shown[-1].message.ord_last
        thinking = await request.reader.thinking(session.id, lo, hi)
    starts = not request.options.roles and (not shown or shown[0].position == 1)
    if request.options.show_thinking and starts:
        thinking = [*await request.reader.thinking(session.id, 0, 0), *thinking]
    whole = ["whole"] * len(shown)
    dressed = await request.dressed(shown, whole, thinking, selection.scope is None or starts)
    empty = ["(no messages yet: record them with frs_record)"] if session.live_count == 0 else []
    positions = [s.position for s in shown]
    shows = len(dressed.entries)
    footer = footer_line(
        session, dressed.count, positions, selection.scope, request.options.roles, shows
    )
    return render_view(
        session.title,
        session.goal,
        request.plan,
        [*request.leading, *empty, *dressed.before],
        dressed.entries,
        "\n".join([*dressed.after, footer]),
        request.preview_chars,
    )
