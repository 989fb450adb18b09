"""Rules for stored text: what is accepted, how it is hashed, how its tokens are estimated.

Token estimate: UTF-8 bytes / 4, rounded up. English runs about 4 characters a token; CJK
characters take 3 bytes and about one token; emoji 4 bytes and about one token. One rule for
the header, the budget and the squash accounting, so they always agree.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

from frs.errors import InvalidContent
from frs.model import ToolCall

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def token_weight(text: str) -> float:
    """The estimate of `text`'s tokens before rounding; additive, so a view's estimate is the
    sum of its lines' (each with its newline)."""
    return len(text.encode("utf-8", "surrogatepass")) / 4


def estimate_tokens(text: str) -> int:
    """Tokens of `text` by the project's one estimator, rounded up."""
    return math.ceil(token_weight(text))


def message_body(content: str, tool_calls: tuple[ToolCall, ...] = ()) -> str:
    """The full text of a message: what `get_alias("M.n")` pages, hashes and counts.

    Tool calls follow the content, one `[tool_use:NAME id=ID]` line and the arguments each, so
    a Write call carrying a whole file is as reachable (and as counted) as a tool result.
    """
    parts = [content] if content else []
    parts.extend(f"[tool_use:{call.name} id={call.id}]\n{call.arguments}" for call in tool_calls)
    return "\n".join(parts)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_text(text: str, what: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (an unpaired surrogate); NUL is allowed."""
    if text.isascii():  # the common case, ~50x faster than the search
        return
    found = _SURROGATE.search(text)
    if found:
        raise InvalidContent(
            f"{what} contains an unpaired surrogate U+{ord(found.group()):04X} at character "
            f"{found.start()}, which is not valid Unicode text. Send valid UTF-8 (encode binary "
            "data, e.g. as base64)."
        )


def minify_json(text: str) -> str:
    """`text` without insignificant whitespace if it is JSON, else unchanged."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return text
    try:
        return json.dumps(json.loads(stripped), ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return text
