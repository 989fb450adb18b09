"""Oversized tool arguments refused on their sizes alone, before any of them is validated.

The SDK validates a tool's arguments item by item (pydantic) on the event loop before the tool
runs, so a 4 MiB batch of 232,000 tiny messages cost 2 s of everyone's time before the domain's
5,000-message limit refused it. This middleware sees the raw arguments first and applies the
domain's size rules (`frs.checks`) to their counts and lengths: `len()` of a list or a string
is free, so an oversized request is refused in microseconds, with the text the domain would
give. Everything else about the arguments is still checked where it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.types import CallToolResult, TextContent

from frs import FrsError, Limits
from frs.checks import check_batch_size, check_message_size, check_plan_size, check_ranges_size

log = logging.getLogger(__name__)


def _messages(arguments: dict[str, Any], limits: Limits) -> None:
    messages = arguments.get("messages")
    if not isinstance(messages, list):
        return
    check_batch_size(len(messages), limits)
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content, calls = message.get("content"), message.get("tool_calls")
        chars = len(content) if isinstance(content, str) else 0
        count = len(calls) if isinstance(calls, list) else 0
        check_message_size(chars, count, f"messages[{index}]", limits)


def _listed(
    key: str, check: Callable[[int, Limits], None]
) -> Callable[[dict[str, Any], Limits], None]:
    def bound(arguments: dict[str, Any], limits: Limits) -> None:
        value = arguments.get(key)
        if isinstance(value, list):
            check(len(value), limits)

    return bound


#: Per tool, what may be refused on size alone.
BOUNDS: dict[str, Callable[[dict[str, Any], Limits], None]] = {
    "frs_record": _messages,
    "frs_plan": _listed("steps", check_plan_size),
    "frs_compress_range": _listed("ranges", check_ranges_size),
}


def oversized(name: object, arguments: object, limits: Limits) -> str | None:
    """The refusal of a tools/call whose arguments are too large, or None."""
    bound = BOUNDS.get(name) if isinstance(name, str) else None
    if bound is None or not isinstance(arguments, dict):
        return None
    try:
        bound(arguments, limits)
    except FrsError as exc:
        return str(exc)
    return None


def bounds_middleware(limits: Limits) -> Any:
    """A server middleware answering an oversized tools/call with a tool error, as the tool
    itself would, before the SDK validates its arguments."""

    async def middleware(ctx: Any, call_next: Any) -> Any:
        params = ctx.params if ctx.method == "tools/call" else None
        if isinstance(params, dict):
            refusal = oversized(params.get("name"), params.get("arguments"), limits)
            if refusal is not None:
                log.info("Tool %r refused on size: %r", params.get("name"), refusal)
                text = f"Error executing tool {params['name']}: {refusal}"
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)

    return middleware
