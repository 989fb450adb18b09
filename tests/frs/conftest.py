"""Helpers for domain tests: an `Env` over the real SQLite store, and message builders.

`open_env` is an async context manager used in the test body (`async with open_env(path) as
env:`), so the database is opened and closed by the test's own task.
The clock is fixed, so rendered text is reproducible.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from hypothesis import strategies as st

from frs import Env, Limits, Message, NewMessage, ToolCall, ViewOptions, viewing
from frs.facts import Exchange, exchanges
from frs.text import estimate_tokens, message_body, sha256_hex
from storage import SqliteStore, open_database

NOW = "2025-01-01T00:00:00.000000Z"


@asynccontextmanager
async def open_env(
    path: str | os.PathLike[str], limits: Limits | None = None
) -> AsyncIterator[Env]:
    """A service on the SQLite file at `path` (created and migrated), closed on exit."""
    async with open_database(path) as db:
        yield Env(SqliteStore(db), limits=limits or Limits(), clock=lambda: NOW)


def user(content: str) -> NewMessage:
    return NewMessage("user", content)


def assistant(content: str, *calls: tuple[str, str, dict[str, object]]) -> NewMessage:
    """An assistant message; each call is (id, name, arguments)."""
    return NewMessage(
        "assistant",
        content,
        tool_calls=tuple(ToolCall(i, n, json.dumps(a)) for i, n, a in calls),
    )


def tool(call_id: str, content: str, name: str = "bash") -> NewMessage:
    return NewMessage("tool", content, name=name, tool_call_id=call_id)


def thinking(content: str) -> NewMessage:
    return NewMessage("assistant", content, kind="thinking")


async def view_lines(env: Env, **options: object) -> list[str]:
    """The view without its volatile footer line."""
    text = await viewing.view(env, ViewOptions(**options))  # type: ignore[arg-type]
    return text.split("\n")[:-1]


def entry_lines(view: str) -> list[str]:
    """The lines of a view that start an entry (`[n] ...` at column 0)."""
    return [line for line in view.split("\n") if line.startswith("[")]


class Thread:
    """A thread's entries built in memory, as a store hands them back: numbered from 1 in
    order, each result paired with the latest earlier call of its id (`answers`). Thinking
    is not numbered; a summary takes a new number and the place of the numbers it names."""

    def __init__(self) -> None:
        self.entries: list[Message] = []
        self._next = 1
        self._made: dict[str, int] = {}

    def _add(self, role: str, content: str, **fields: Any) -> Thread:
        kind = fields.pop("kind", "message")
        calls = tuple(fields.pop("tool_calls", ()))
        number = None if kind == "thinking" else self._next
        first = fields.pop("ord", number if number is not None else self._next - 1)
        body = message_body(content, calls)
        self.entries.append(
            Message(
                number=number,
                ord=first,
                ord_last=fields.pop("ord_last", first),
                role=role,  # type: ignore[arg-type]  # the tests use the four roles
                kind=kind,
                content=content,
                sha256=sha256_hex(body),
                tokens=estimate_tokens(body),
                live=number is not None,
                created_at=None,
                tool_calls=calls,
                **fields,
            )
        )
        if number is not None:
            self._made.update((call.id, number) for call in calls)
            self._next += 1
        return self

    def user(self, content: str) -> Thread:
        return self._add("user", content)

    def assistant(self, content: str, *calls: tuple[str, str, object]) -> Thread:
        """An assistant message; each call is (id, name, arguments: an object, or raw text)."""
        made = [ToolCall(i, n, a if isinstance(a, str) else json.dumps(a)) for i, n, a in calls]
        return self._add("assistant", content, tool_calls=made)

    def tool(self, call_id: str, content: str, name: str | None = None) -> Thread:
        answers = self._made.get(call_id)
        return self._add("tool", content, tool_call_id=call_id, name=name, answers=answers)

    def thinking(self, content: str) -> Thread:
        return self._add("assistant", content, kind="thinking")

    def summary(self, content: str, first: int, last: int, squash: int) -> Thread:
        """A summary of the originals numbered first..last (already squashed away): it takes
        the next number after them, and their place."""
        covered = last - first + 1
        self._next = max(self._next, last + 1)
        return self._add(
            "assistant",
            content,
            kind="summary",
            ord=first,
            ord_last=last,
            covered=covered,
            squash_n=squash,
            squash_sha256="0" * 64,
        )


# Text that looks like what hosts send: statuses, errors, paths, newlines, quotes, backticks.
_PIECES = st.sampled_from(
    [
        "Exit code 1",
        "<returncode>2</returncode>",
        "ValueError: bad",
        "12:    raise ValueError",
        "src/a.py",
        "/r/b/c.ts",
        "\n",
        "`",
        '"',
        " → M.3 ok",
        " · ",
        "⏎",
        "ok",
        "(error)",
        "3 passed",
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=8).map("".join)
_NAMES = st.sampled_from(
    ["Bash", "Read", "Edit", "shell", "apply_patch", "str_replace_editor", "Grep", "custom_tool"]
)
_ARGUMENTS = st.one_of(
    st.dictionaries(
        st.sampled_from(["command", "cmd", "file_path", "path", "pattern", "content", "x"]),
        st.one_of(_TEXT, st.lists(_TEXT, max_size=3), st.integers()),
        max_size=3,
    ),
    _TEXT,
)


@st.composite
def random_exchanges(draw: st.DrawFn) -> list[Exchange]:
    """Finished exchanges of a few calls each, of the tools hosts name, with arguments and
    results made of what hosts send (statuses, errors, paths, newlines, our own markers)."""
    thread = Thread().user(draw(_TEXT))
    for index in range(draw(st.integers(1, 6))):
        count = draw(st.integers(1, 3))
        calls = [(f"c{index}-{n}", draw(_NAMES), draw(_ARGUMENTS)) for n in range(count)]
        thread.assistant(draw(_TEXT), *calls)
        for call_id, _, _ in calls:
            thread.tool(call_id, draw(_TEXT))
    return exchanges(thread.entries)
