"""Helpers for domain tests: a ReasoningService over the real SQLite store, and message builders.

`open_service` is an async context manager used in the test body (`async with
open_service(path) as service:`), so the database is opened and closed by the test's own task.
The clock is fixed, so rendered text is reproducible.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from frs import Limits, NewMessage, ReasoningService, ToolCall, ViewOptions
from storage import SqliteStore, open_database

NOW = "2025-01-01T00:00:00.000000Z"


@asynccontextmanager
async def open_service(
    path: str | os.PathLike[str], limits: Limits | None = None
) -> AsyncIterator[ReasoningService]:
    """A service on the SQLite file at `path` (created and migrated), closed on exit."""
    async with open_database(path) as db:
        yield ReasoningService(SqliteStore(db), limits=limits, clock=lambda: NOW)


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


async def view_lines(service: ReasoningService, **options: object) -> list[str]:
    """The view without its volatile footer line."""
    text = await service.view(ViewOptions(**options))  # type: ignore[arg-type]
    return text.split("\n")[:-1]


def entry_lines(view: str) -> list[str]:
    """The lines of a view that start an entry (`[n] ...` at column 0)."""
    return [line for line in view.split("\n") if line.startswith("[")]
