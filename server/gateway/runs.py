"""OpenAI's flat item lists read as the alternating messages `frs.wire` speaks of.

The Responses API's `input` and Chat Completions' `messages` are flat lists: a call and its
output are items of their own, not blocks of an assistant and a user message. The gateway
groups each run of the model's items (its messages, calls, reasoning) into one assistant
message and each run of the host's (outputs, user messages) into one user message, so the
domain's rules (`frs.rewriting`: whole messages, whole call/result pairs, the open tool loop)
hold as they do for Anthropic; instructions, developer messages, compaction items and any
item the gateway does not know stand alone as "system" messages, which are never recorded,
replaced or moved. A message's span runs from its first item's `{` to its last item's `}`.

`render` turns a plan into splices of whole items: a replaced run becomes one new item (the
wire's `summary_item`), a removed run goes with the separator after it, an insertion adds
an item just before or after a run. Every other character stays as the host sent it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frs.wire import RewritePlan, Span, Splice, WireBlock, WireMessage, WireRole, apply_splices


@dataclass(frozen=True, slots=True)
class Item:
    """One item of the list: which side wrote it, and its blocks (most items are one)."""

    side: WireRole
    span: Span
    blocks: tuple[WireBlock, ...]


def grouped(items: Sequence[Item]) -> tuple[WireMessage, ...]:
    """Runs of user-side and of assistant-side items as one message each; system items
    alone."""
    messages: list[WireMessage] = []
    run: list[Item] = []

    def close() -> None:
        if run:
            blocks = tuple(b for item in run for b in item.blocks)
            span = Span(run[0].span.start, run[-1].span.end)
            messages.append(WireMessage(run[0].side, span, blocks))
            run.clear()

    for item in items:
        if item.side == "system":
            close()
            messages.append(WireMessage("system", item.span, item.blocks))
            continue
        if run and run[0].side != item.side:
            close()
        run.append(item)
    close()
    return tuple(messages)


#: Writes the JSON text of one item carrying summary texts, as `role` ("user" or
#: "assistant"): the same texts give the same bytes every time.
SummaryItem = Callable[[str, tuple[str, ...]], str]


def render(
    body: str, messages: Sequence[WireMessage], plan: RewritePlan, summary_item: SummaryItem
) -> str:
    """The body with the plan applied, item by item."""
    if plan.dropped:  # OpenAI's reasoning binds to no prefix: nothing is ever left out
        raise ValueError("a plan for an OpenAI wire drops blocks")
    splices: list[Splice] = []
    for r in plan.replacements:
        start = messages[r.first].span.start
        if r.role is None:
            if r.last + 1 >= len(messages):
                raise ValueError("a removed span has no message after it")
            splices.append(Splice(Span(start, messages[r.last + 1].span.start), ""))
            continue
        splices.append(
            Splice(Span(start, messages[r.last].span.end), summary_item(r.role, r.texts))
        )
    for ins in plan.insertions:
        message = messages[ins.message]
        if message.role == "system":
            raise ValueError("a summary cannot join a system message")
        item = summary_item(message.role, ins.texts)
        if ins.where == "last":
            at = message.span.end
            splices.append(Splice(Span(at, at), "," + item))
        else:
            at = message.span.start
            splices.append(Splice(Span(at, at), item + ","))
    return apply_splices(body, splices)
