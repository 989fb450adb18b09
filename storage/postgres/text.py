"""Text as PostgreSQL stores it: U+0000 escaped, since PostgreSQL text cannot hold it.

The connection codec (`storage.postgres.database`) applies it to every text parameter and
column; array elements bypass codecs, so a text array is escaped where it is built.
"""

from __future__ import annotations

import re

# PostgreSQL text cannot hold U+0000, which the port stores (frs.text.check_text allows it).
# Every text value crosses the wire escaped: U+E000 (a private-use character) introduces an
# escape, U+0000 becomes U+E000 U+E001 and U+E000 itself U+E000 U+E000. The map is one to one,
# so equality in SQL still matches; only the order of texts holding either character moves.
_ESCAPE, _ESCAPED_NUL = "\ue000", "\ue000\ue001"
_UNESCAPE = re.compile("\ue000(.)", re.DOTALL)


def encode_text(value: str) -> str:
    if "\x00" not in value and _ESCAPE not in value:
        return value
    return value.replace(_ESCAPE, _ESCAPE * 2).replace("\x00", _ESCAPED_NUL)


def decode_text(value: str) -> str:
    if _ESCAPE not in value:
        return value
    return _UNESCAPE.sub(lambda m: "\x00" if m.group(1) == "\ue001" else m.group(1), value)
