"""A squash, or a range of entries, as Markdown: what "Copy as Markdown" puts on the clipboard.

Each entry is a heading with its label and role, then its text in a fenced block longer than
any run of backticks inside it, so stored text can never end the block or start a heading.
A squash gives its summary, then every original it replaced, nested squashes opened in turn.
"""

from __future__ import annotations

import re

from frs.annotations import annotate_call
from frs.model import Message
from frs.views.render import ROLE_LABEL, plural
from server.web.pages import tokens
from server.web.thread import Node, Opened

_TICKS = re.compile(r"`+")


def fenced(content: str) -> str:
    longest = max((len(run) for run in _TICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{content}\n{fence}"


def entry_markdown(label: str, message: Message, opened: Opened | None, depth: int = 3) -> str:
    hashes = "#" * min(depth, 6)
    if opened is not None:
        return squash_markdown(label, message, opened, depth)
    role = ROLE_LABEL[message.role] + (f" {message.name}" if message.name else "")
    parts = [
        f"{hashes} [{label}] {role} (M.{message.number}@{message.sha8})",
        fenced(message.content),
    ]
    parts += [f"- `{annotate_call(call)}`" for call in message.tool_calls]
    return "\n\n".join(parts)


def squash_markdown(label: str, message: Message, opened: Opened, depth: int = 2) -> str:
    squash, hashes = opened.squash, "#" * min(depth, 6)
    parts = [
        f"{hashes} [{label}] Summary of {plural(message.covered, 'message')} ({squash.alias}): "
        f"{plural(squash.covered, 'message')}, {tokens(squash.tokens_before)} → "
        f"{tokens(squash.tokens_after)} tokens",
        fenced(message.content),
        f"{hashes}# Originals",
        *(nodes_markdown(opened.members, depth + 2)),
    ]
    if opened.hidden:
        parts.append(f"({plural(opened.hidden, 'more original')} not shown)")
    return "\n\n".join(parts)


def nodes_markdown(nodes: tuple[Node, ...] | list[Node], depth: int = 2) -> list[str]:
    return [entry_markdown(n.entry.label, n.entry.message, n.opened, depth) for n in nodes]
