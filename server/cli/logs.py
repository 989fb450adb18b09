"""What the log never shows: MCP session ids, and credentials.

A Streamable HTTP session id (32 hex digits) or an SSE stream's id (a UUID) is, until the
session ends, a handle on it: whoever reads the log could send requests on it. The SDK logs
them (at INFO when a session opens, is refused or expires; uvicorn's access log at DEBUG shows
the SSE `session_id` query), so every line is masked on its way out, ours and theirs alike;
nothing of ours needs a 32-digit hex number or a UUID. The SDK's lines for a tool or a
resource that failed (at INFO) would carry the error's text and the resource's URI, and with
them an frs session id (`No session '…'`, `frs://sessions/…/thread`): they keep the tool's
name and the URI's shape only; the client was told the rest.

A credential is masked the same way, at every level (`HideCredentials`): a key in a query
string (`?api-key=…`, `?key=…`, `?token=…`: the gateway forwards a host's query, and the HTTP
client logs each request's URL at INFO, uvicorn's access log each target at DEBUG), a bearer
token, and a header that carries one, wherever a library quotes it.
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


#: Query parameters that carry a secret (Gemini's `key`, Azure's `api-key`, OAuth's `code`...).
_SECRET_PARAMS = (
    r"api[-_]?key|key|token|access[-_]?token|id[-_]?token|refresh[-_]?token|auth|"
    r"authorization|secret|client[-_]?secret|password|passwd|sig|signature|code|x-frs-token"
)
_CREDENTIALS = re.compile(
    rf"(?i)(?P<param>[?&;](?:{_SECRET_PARAMS})=)[^&;\s\"'#]+"
    r"|(?P<bearer>\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]+"
    r"|(?P<header>\b(?:x-api-key|api-key|x-goog-api-key|x-frs-token|authorization|cookie)"
    r"['\"]?\s*[:=,]\s*(?:b(?=['\"]))?['\"]?(?:(?:bearer|basic)\s+)?)[^'\"\s,)]+"
)
SECRET_MASK = "<redacted>"


class HideCredentials(logging.Filter):
    """Masks credentials in a record's message (`_CREDENTIALS`); never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = _CREDENTIALS.sub(_mask, message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def _mask(found: re.Match[str]) -> str:
    kept = found.group("param") or found.group("bearer") or found.group("header") or ""
    if found.group(0)[len(kept) :] == "***":  # masked already (`storage.postgres.redact`)
        return found.group(0)
    return kept + SECRET_MASK


def hide_session_ids() -> None:
    """Put `HideSessionIds` on every handler of the root logger (where every line ends up)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, HideSessionIds) for f in handler.filters):
            handler.addFilter(HideSessionIds())


def hide_credentials() -> None:
    """Put `HideCredentials` on every handler of the root logger (where every line ends up)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, HideCredentials) for f in handler.filters):
            handler.addFilter(HideCredentials())
