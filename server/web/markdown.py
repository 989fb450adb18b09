"""A squash, or a range of entries, as Markdown: what "Copy as Markdown" puts on the clipboard.

Each entry is a heading with its label and role, then its text in a fenced block longer than
any run of backticks inside it, so stored text can never end the block or start a heading.
A squash gives its summary, then its originals, nested squashes opened in turn.

An answer is bounded as a thread page is (`server.web.thread`): a text shows its head and tail
(`WHOLE_CHARS`), and the originals, and a range's entries, stop once they hold `PAGE_CHARS`
characters; each cut is told by a line "… N characters left out; the full text: <how>" (the
alias `get_alias` reads, or the URL of the next part). A range of entries holding one 20 MB
squash once answered 20 MB.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from frs.annotations import annotate_call
from frs.model import Message
from frs.views.render import plural, role_label
from server.web.pages import capped, tokens
from server.web.thread import WHOLE_CHARS, Budget, Node, Opened

_TICKS = re.compile(r"`+")

#: The URL of a squash's Markdown from its `start`th original (1-based): where the rest is.
PartUrl = Callable[[int, int], str]


def fenced(content: str) -> str:
    longest = max((len(run) for run in _TICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{content}\n{fence}"


def text_markdown(message: Message) -> list[str]:
    """The fenced text, at most `WHOLE_CHARS` of it, and the line saying what is left out."""
    parts = [fenced(capped(message.content))]
    if len(message.content) > WHOLE_CHARS:
        parts.append(
            f"… {len(message.content) - WHOLE_CHARS:,} characters left out; the full text: "
            f"get_alias M.{message.number}@{message.sha8} (frs-mcp's tools)."
        )
    return parts


def entry_markdown(
    label: str, message: Message, opened: Opened | None, part_url: PartUrl, depth: int = 3
) -> str:
    hashes = "#" * min(depth, 6)
    if opened is not None:
        return squash_markdown(label, message, opened, part_url, depth)
    role = role_label(message, str)
    parts = [
        f"{hashes} [{label}] {role} (M.{message.number}@{message.sha8})",
        *text_markdown(message),
    ]
    parts += [f"- `{annotate_call(call)}`" for call in message.tool_calls]
    return "\n\n".join(parts)


def squash_markdown(
    label: str, message: Message, opened: Opened, part_url: PartUrl, depth: int = 2
) -> str:
    squash, hashes = opened.squash, "#" * min(depth, 6)
    parts = [
        f"{hashes} [{label}] Summary of {plural(message.covered, 'message')} ({squash.alias}): "
        f"{plural(squash.covered, 'message')}, {tokens(squash.tokens_before)} → "
        f"{tokens(squash.tokens_after)} tokens",
        *text_markdown(message),
        f"{hashes}# Originals" + (f" from number {opened.skipped + 1:,}" if opened.skipped else ""),
        *(nodes_markdown(opened.members, part_url, depth + 2)),
    ]
    if opened.hidden:
        more = plural(opened.hidden, "more original")
        size = f"{opened.hidden_chars:,} characters ({more})" if opened.hidden_chars else more
        parts.append(
            f"… {size} left out; the full text: {part_url(squash.n, opened.next_member)}, "
            f"or get_alias {squash.alias} (frs-mcp's tools)."
        )
    return "\n\n".join(parts)


def nodes_markdown(nodes: Sequence[Node], part_url: PartUrl, depth: int = 2) -> list[str]:
    return [
        entry_markdown(n.entry.label, n.entry.message, n.opened, part_url, depth) for n in nodes
    ]


def range_markdown(
    nodes: Sequence[Node], first: int, last: int, part_url: PartUrl, range_url: PartUrl
) -> str:
    """Entries at positions `first`..`last` (`nodes`, in order), as many as `PAGE_CHARS` of
    their texts hold (their opened originals have a budget of their own, `load_page`'s); the
    rest is named with `range_url(from, to)`."""
    budget, shown = Budget(), 0
    for node in nodes:
        if not budget.spend(node.entry.message):
            break
        shown += 1
    parts = nodes_markdown(nodes[:shown], part_url)
    if shown < len(nodes):
        rest = sum(len(n.entry.message.content) for n in nodes[shown:])
        start = first + shown
        parts.append(
            f"… {rest:,} characters left out (positions {start}–{last}); the full text: "
            f"{range_url(start, last)}"
        )
    return "\n\n".join(parts) + "\n"
