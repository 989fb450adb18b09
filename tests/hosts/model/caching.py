"""Prompt-cache breakpoints as the Anthropic API documents them: what the tests' upstream refuses.

A request may set at most four breakpoints (`cache_control`), counted over `tools`, `system`,
every message's blocks (a tool result's own content blocks too) and a top-level automatic one,
which "uses one of the 4 available breakpoint slots"; and a 1-hour entry "must appear before
any 5-minute cache entries", in prompt order (tools, system, messages; the automatic one lands
on the last block). Either break is a 400.

Page: https://platform.claude.com/docs/en/build-with-claude/prompt-caching ("You can define up
to 4 cache breakpoints", automatic caching, "Mixing different TTLs").
"""

from __future__ import annotations

from typing import Any

LIMIT = 4


def breakpoints(payload: dict[str, Any]) -> list[str]:
    """The lifetimes ("5m", "1h") of a request's breakpoints, in prompt order."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            marker = value.get("cache_control")
            if isinstance(marker, dict):
                found.append("1h" if marker.get("ttl") == "1h" else "5m")
            if isinstance(value.get("content"), list):
                walk(value["content"])

    walk(payload.get("tools"))
    walk(payload.get("system"))
    walk(payload.get("messages"))
    automatic = payload.get("cache_control")
    if isinstance(automatic, dict):
        found.append("1h" if automatic.get("ttl") == "1h" else "5m")
    return found


def check(payload: dict[str, Any]) -> str | None:
    """The API's 400 message for the request's breakpoints, or None when it takes them."""
    found = breakpoints(payload)
    if len(found) > LIMIT:
        return (
            f"A maximum of {LIMIT} blocks with cache_control may be provided. Found {len(found)}."
        )
    if "5m" in found and "1h" in found[found.index("5m") :]:
        return "a cache_control block with ttl='1h' must not come after one with ttl='5m'"
    return None
