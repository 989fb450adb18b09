"""What the log never shows: MCP session ids.

A Streamable HTTP session id (32 hex digits) or an SSE stream's id (a UUID) is, until the
session ends, a handle on it: whoever reads the log could send requests on it. The SDK logs
them (at INFO when a session opens, is refused or expires; uvicorn's access log at DEBUG shows
the SSE `session_id` query), so every line is masked on its way out, ours and theirs alike;
nothing of ours needs a 32-digit hex number or a UUID. The SDK's lines for a tool or a
resource that failed (at INFO) would carry the error's text and the resource's URI, and with
them an frs session id (`No session '…'`, `frs://sessions/…/thread`): they keep the tool's
name and the URI's shape only; the client was told the rest.
"""

from __future__ import annotations

import logging
import re

_SESSION_IDS = re.compile(
    r"\b[0-9a-fA-F]{32}\b"
    r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
MASK = "<session id>"
_SDK_LOGGER = "mcp.server.mcpserver.server"
_FAILED = {"Tool %r failed: %r": "Tool %r failed; the client was told why"}
_RESOURCE_FAILED = "Resource %r failed: %r"
_FRS_SESSION = re.compile(r"(frs://sessions/)[^/?#\s]+")


class HideSessionIds(logging.Filter):
    """Masks session ids in a record's message; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == _SDK_LOGGER and isinstance(record.args, tuple) and record.args:
            if record.msg in _FAILED:
                record.msg, record.args = _FAILED[record.msg], record.args[:1]
            elif record.msg == _RESOURCE_FAILED:
                uri = _FRS_SESSION.sub(r"\1" + MASK, str(record.args[0]))
                record.msg, record.args = "Resource %r failed; the client was told why", (uri,)
        message = record.getMessage()
        masked = _SESSION_IDS.sub(MASK, message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def hide_session_ids() -> None:
    """Put `HideSessionIds` on every handler of the root logger (where every line ends up)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, HideSessionIds) for f in handler.filters):
            handler.addFilter(HideSessionIds())
