"""Domain failures become tool errors the model can read; nothing else may reach it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

from frs import FrsError, InvalidRequest, NotFound, SessionNotFound, StoreConflict, StoreError


@contextmanager
def tool_errors() -> Iterator[None]:
    """Turn domain failures into tool errors the model can read and act on."""
    try:
        yield
    except StoreConflict as exc:
        # Another writer changed what this call was decided on (a race the call lost).
        raise ToolError(
            f"The database refused the write: {exc}. Nothing was changed. Another client "
            "changed this session at the same moment; read it again and call again."
        ) from exc
    except StoreError as exc:
        # The store failed, not the request (a full disk, a read-only file, a lock held past
        # the busy timeout); the transaction was rolled back.
        raise ToolError(
            f"The database failed: {exc}. Nothing was changed. Check that the disk has room "
            "and that the database file is writable, then call again."
        ) from exc
    except FrsError as exc:
        raise ToolError(str(exc)) from exc
    except UnicodeEncodeError as exc:
        # The domain checks every text it stores or looks up; this catches one it missed, so
        # the model still gets an error it can act on instead of an opaque failure.
        raise ToolError(
            "An argument contains an unpaired surrogate (a half of a UTF-16 pair), which is "
            "not valid Unicode text. Send valid UTF-8 text."
        ) from exc


@contextmanager
def resource_errors() -> Iterator[None]:
    """In resources, a missing session or alias, or a malformed one, is a -32602 naming the
    URI (the SDK maps its not-found error, and only that one, to invalid params)."""
    try:
        yield
    except SessionNotFound as exc:
        # The domain's hint speaks of tool arguments; a resource reader lists sessions by URI.
        raise ResourceNotFoundError(
            f"No session {exc.session_id!r}. Read frs://sessions for the sessions there are."
        ) from exc
    except (NotFound, InvalidRequest) as exc:
        raise ResourceNotFoundError(str(exc)) from exc


_PYDANTIC_HEAD = re.compile(r"^Error executing tool (\S+): \d+ validation errors? for \S+$")
_PYDANTIC_DETAIL = re.compile(
    r"^  (.*?)(?: \[type=[^,\]]+(?:, input_value=(.*?))?(?:, input_type=\w+)?\])?$"
)


def friendly_validation(text: str) -> str | None:
    """pydantic's report on bad arguments, rewritten for a model: each field path with what was
    wrong (and the value given), then the next step; None if `text` is not such a report."""
    lines = text.split("\n")
    head = _PYDANTIC_HEAD.match(lines[0]) if lines else None
    if head is None:
        return None
    problems: list[str] = []
    path: str | None = None
    for line in lines[1:]:
        if line.startswith("    For further information"):
            continue
        if not line.startswith(" "):
            path = line
            continue
        found = _PYDANTIC_DETAIL.match(line)
        if found is None or path is None:
            return None
        message, given = found.group(1), found.group(2)
        message = message.removeprefix("Value error, ")  # our validators' own words follow
        shown = f" (got {given})" if given and len(given) <= 60 else ""
        problems.append(f"{path}: {message}{shown}")
    if not problems:
        return None
    return (
        f"Error executing tool {head.group(1)}: invalid arguments: {'; '.join(problems)}. "
        "Fix these and call again; the tool's input schema gives every field's type and range."
    )


async def validation_middleware(ctx: Any, call_next: Any) -> Any:
    """Rewrites argument-validation failures of tools/call into `friendly_validation` text."""
    result = await call_next(ctx)
    if ctx.method == "tools/call" and isinstance(result, dict) and result.get("isError"):
        for block in result.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "text":
                friendly = friendly_validation(block.get("text", ""))
                if friendly is not None:
                    block["text"] = friendly
    return result
