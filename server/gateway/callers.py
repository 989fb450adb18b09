"""Who a request to the gateway comes from, as far as its conversations go (`frs.owners`): a
digest of the credential it sends its provider, and one of its system prompt. The key itself
is never kept, nor logged: a digest of it is all a thread's key holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from frs.owners import Caller, digest
from frs.wire.matching import canonical
from frs.wire.requests import WireRequest

#: Where a host puts its provider credential, the first found wins: Anthropic's key header, a
#: bearer token (OpenAI's key, a subscription's OAuth token), Azure OpenAI's and Gemini's keys.
CREDENTIAL_HEADERS = ("x-api-key", "authorization", "api-key", "x-goog-api-key")
#: The top-level fields that hold a system prompt: Anthropic's, the Responses API's.
SYSTEM_FIELDS = ("system", "instructions")


def caller_of(headers: Mapping[str, str], tenant_says: bool) -> Caller:
    """The caller of a request (`headers` named in lower case). With the gateway's tokens the
    tenant says who it is (`tenant_says`); else the credential does, and callers that send
    none are one caller."""
    if tenant_says:
        return Caller(None)
    for name in CREDENTIAL_HEADERS:
        value = headers.get(name, "").strip()
        if value:
            return Caller(digest(name, value))
    return Caller(digest(""))


def system_of(text: str, request: WireRequest) -> str:
    """A digest of a request's system prompt: its `SYSTEM_FIELDS` (read from the body outside
    its messages, a small part of it) and its system and developer messages, in order."""
    span = request.messages_span
    parts: list[str] = []
    if span is not None:
        outside = json.loads(text[: span.start] + "null" + text[span.end :])
        if isinstance(outside, dict):
            parts += [canonical(outside.get(name)) for name in SYSTEM_FIELDS]
    parts += [text[m.span.start : m.span.end] for m in request.messages if m.role == "system"]
    return digest(*parts)
