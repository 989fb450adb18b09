"""Domain failures become tool errors the model can read; nothing else may reach it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

from frs import FrsError, NotFound


@contextmanager
def tool_errors() -> Iterator[None]:
    """Turn domain failures into tool errors the model can read and act on."""
    try:
        yield
    except FrsError as exc:
        raise ToolError(str(exc)) from exc


@contextmanager
def resource_errors() -> Iterator[None]:
    """In resources, a missing session or alias is a -32602 naming the URI."""
    try:
        yield
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
