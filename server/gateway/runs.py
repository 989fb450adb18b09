"""OpenAI's flat item lists read as the alternating messages `frs.wire` speaks of.

The Responses API's `input` and Chat Completions' `messages` are flat lists: a call and its
output are items of their own, not blocks of an assistant and a user message. The gateway
groups each run of the model's items (its messages, calls, reasoning) into one assistant
message and each run of the host's (outputs, user messages) into one user message, so the
domain's rules (`frs.wire.rewriting`: whole messages, whole call/result pairs, the open tool loop)
hold as they do for Anthropic; instructions, developer messages, compaction items and any
item the gateway does not know stand alone as "system" messages, which are never recorded,
replaced or moved. A message's span runs from its first item's `{` to its last item's `}`.

`render` turns a plan into splices of whole items: a replaced run becomes one new item (the
wire's `summary_item`), a removed run goes with the separator after it, an insertion adds
an item just before or after a run. Every other character stays as the host sent it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frs.wire.requests import (
    Parsed,
    RewritePlan,
    Span,
    Splice,
    WireBlock,
    WireMessage,
    WireRole,
    apply_splices,
    common_prefix,
)


@dataclass(frozen=True, slots=True)
class Item:
    """One item of the list: which side wrote it, and its blocks (most items are one)."""

    side: WireRole
    span: Span
    blocks: tuple[WireBlock, ...]


def kept(body: str, previous: Parsed | None) -> tuple[WireMessage, ...]:
    """The previous request's leading messages that `body` repeats exactly, at the same place:
    a message is kept when the whole message after it is inside the shared prefix too (so no
    item of its side can have been added to it)."""
    if previous is None or len(previous.request.messages) < 2:
        return ()
    shared = common_prefix(body, previous.body)
    messages = previous.request.messages
    out: list[WireMessage] = []
    for message, following in itertools.pairwise(messages):
        if following.span.end > shared:
            break
        out.append(message)
    return tuple(out)


class Reader:
    """Reads the items of a list, taking over the messages `kept` where they start (one
    whole message read as one step of the list) and reading the rest with `read_item`."""

    def __init__(
        self, kept: Sequence[WireMessage], read_item: Callable[[str, int], tuple[Item, int]]
    ) -> None:
        self.kept = kept
        self.read_item = read_item
        self.items: list[Item | WireMessage] = []
        self._used = 0

    def __call__(self, text: str, at: int) -> tuple[object, int]:
        if self._used < len(self.kept) and self._used == len(self.items):
            message = self.kept[self._used]
            if message.span.start == at:
                self._used += 1
                self.items.append(message)
                return message, message.span.end
        item, end = self.read_item(text, at)
        self.items.append(item)
        return item, end


def grouped(items: Sequence[Item | WireMessage]) -> tuple[WireMessage, ...]:
    """Runs of user-side and of assistant-side items as one message each; system items
    alone; messages taken over from the previous request as they are."""
    messages: list[WireMessage] = []
    run: list[Item] = []

    def close() -> None:
        if run:
            blocks = tuple(b for item in run for b in item.blocks)
            span = Span(run[0].span.start, run[-1].span.end)
            messages.append(WireMessage(run[0].side, span, blocks))
            run.clear()

    for item in items:
        if isinstance(item, WireMessage):
            close()
            messages.append(item)
            continue
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
