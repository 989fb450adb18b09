"""The view options: the one type every caller fills in (tools, resources, runtimes, bench).

A field is a request, not a promise about the text: `budget_tokens` is the `budget` the view is
fitted into, `preview_chars` and `numbering` default to the server's and the session's own
(`frs.views.selection.Request` fills them in). The names of what they become are in `frs.views`.
"""

from __future__ import annotations

from dataclasses import dataclass

from frs.errors import InvalidRequest
from frs.model import LANES, Numbering
from frs.text import check_text


@dataclass(frozen=True, slots=True)
class ViewOptions:
    """What a view shows, as the tools and `frs.viewing.view` take it; every field
    optional. `check_view_options` rejects what no view can honour."""

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

    @property
    def whole_thread(self) -> bool:
        """No window, role or run filter: the view is of the thread itself (perhaps its end)."""
        return not (self.start or self.end or self.roles or self.run_id)


def check_view_options(options: ViewOptions) -> None:
    """Raise `InvalidRequest` naming the first option out of its range; nothing is read."""
    for lane in options.roles:
        if lane not in LANES:
            raise InvalidRequest(f"Unknown role {lane!r} in roles; use any of {', '.join(LANES)}.")
    if options.last is not None and options.last < 1:
        raise InvalidRequest(f"last={options.last}; give a count of at least 1.")
    if options.budget_tokens is not None and options.budget_tokens < 1:
        raise InvalidRequest(f"budget_tokens={options.budget_tokens}; give a positive budget.")
    if options.run_id is not None:
        check_text(options.run_id, "run_id")
