"""Rules for stored text: what is accepted, how it is hashed, how its tokens are estimated.

Token estimate: every UTF-8 byte gets a weight by its class and its context, the class of the
byte before it ("start" for the first byte, "repeat" after the same byte); the weights are
summed (`token_weight`) and rounded up (`estimate_tokens`). No tokenizer runs: a few passes
over the whole buffer (`bytes.translate`, integer shifts, Adler-32 as the byte sum), about 6 µs
for a 1 KB message. One estimator for the header, the budget and the squash accounting.

Classes (CLASSES): lowercase, uppercase, digit, space, newline, tab and controls, JSON
punctuation `"{}[]:,`, joiners `_-./\\`, other punctuation; the lead byte of a 2-byte character
(accented Latin, Greek, Cyrillic, Hebrew, Arabic), of a 3-byte one (CJK, kana, Hangul, Indic,
fullwidth forms), of one in U+2000-U+2FFF (dashes, arrows, box drawing, symbols), of a 4-byte
one (emoji); continuation bytes. Content classes fall out of them: prose is letters after
spaces and letters; code adds joiners, punctuation and indentation (space after space, cheap);
JSON is mostly its punctuation class; digits cost by the digit and the run start; CJK, emoji
and other scripts by their lead and continuation bytes.

Coefficients (`_WEIGHTS`) are what `python -m bench.calibrate` printed: a linear program over
every message and whole views of the 12 transcripts in tests/data/corpus, plus the stress texts
of bench/samples.py (random common CJK, emoji, digits, base64, hex, JSON, indented code,
whitespace, other scripts, repeated characters), minimizing the mean overshoot against
o200k_base and cl100k_base (the messages' weighted 1.5, the views' 1) with no text counted
below either. Measured there: none undercounted; mean overshoot 14.9% (o200k_base) and 13.8%
(cl100k_base) on messages, 13.2% and 10.7% on views; far more on CJK (+117% / +54%), emoji and
rare text, priced for the dearest characters. Runs of random letters of one case
("qzxkvw...") are a known blind spot.

The weight is subadditive, weight(a + b) <= weight(a) + weight(b): the start of a text is
priced as the dearest context of its class. A sum over a view's lines is therefore never less
than the view's weight. Weights are integers in 1/TOKEN_UNIT token, so sums are exact.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib

from frs.errors import InvalidContent
from frs.model import ToolCall

_SURROGATE = re.compile(r"[\ud800-\udfff]")

#: Contexts of a byte: the class of the byte before it, "start" before the first byte, and
#: "repeat" when the byte before is the same byte. A byte's own class is one of CLASSES[1:-1].
CLASSES = (
    "start",
    "lower",
    "upper",
    "digit",
    "space",
    "newline",
    "control",
    "json",
    "joiner",
    "symbol",
    "lead2",
    "lead3",
    "lead3 symbols",
    "lead4",
    "continuation",
    "repeat",
)
#: Weights are integers in units of 1/TOKEN_UNIT token.
TOKEN_UNIT = 256
_REPEAT = 15

# Printed by `python -m bench.calibrate`; do not edit by hand. Row: a byte's class (CLASSES[1:-1]);
# column: its context (CLASSES). Units: 1/TOKEN_UNIT token.
_WEIGHTS: tuple[tuple[int, ...], ...] = (
    # context: start, lower, upper, digit, space, newline, control, json, joiner, symbol,
    #   lead2, lead3, lead3 symbols, lead4, continuation, repeat
    (255, 25, 255, 255, 141, 255, 86, 255, 204, 255, 255, 255, 255, 255, 0, 125),  # lower
    (255, 255, 125, 255, 0, 0, 0, 255, 130, 255, 255, 255, 255, 255, 0, 255),  # upper
    (255, 255, 213, 141, 255, 116, 255, 169, 255, 119, 255, 255, 255, 255, 0, 102),  # digit
    (255, 24, 101, 255, 255, 126, 0, 244, 0, 157, 255, 255, 255, 255, 229, 14),  # space
    (255, 255, 65, 255, 0, 171, 255, 255, 0, 117, 255, 255, 255, 255, 0, 200),  # newline
    (255, 0, 0, 255, 0, 255, 255, 255, 0, 255, 255, 255, 255, 255, 255, 214),  # control
    (255, 0, 255, 255, 0, 175, 0, 3, 0, 59, 255, 255, 255, 255, 0, 86),  # json
    (255, 175, 0, 255, 255, 255, 0, 255, 0, 72, 255, 255, 255, 255, 255, 255),  # joiner
    (255, 184, 255, 255, 0, 217, 255, 255, 255, 255, 255, 255, 255, 255, 255, 86),  # symbol
    (161, 145, 161, 161, 161, 161, 161, 161, 161, 161, 161, 161, 161, 161, 154, 161),  # lead2
    (255, 255, 255, 255, 255, 255, 255, 0, 255, 255, 255, 255, 255, 255, 9, 255),  # lead3
    (255, 0, 0, 255, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 255),  # lead3 symbols
    (64, 64, 64, 64, 0, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64),  # lead4
    (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 4, 255, 255, 0),  # continuation
)


def _class_of(byte: int) -> int:
    """The index in CLASSES of one UTF-8 byte."""
    if byte >= 0x80:
        return _class_of_non_ascii(byte)
    char = chr(byte)
    if "a" <= char <= "z":
        return 1
    if "A" <= char <= "Z":
        return 2
    if "0" <= char <= "9":
        return 3
    if char == " ":
        return 4
    if char in "\n\r":
        return 5
    if byte < 0x20 or byte == 0x7F:
        return 6
    if char in '"{}[]:,':
        return 7
    if char in "_-./\\":
        return 8
    return 9


def _class_of_non_ascii(byte: int) -> int:
    if byte < 0xC0:
        return 14
    if byte < 0xE0:
        return 10
    if byte == 0xE2:  # U+2000-U+2FFF
        return 12
    if byte < 0xF0:
        return 11
    return 13


_CLASS_TABLE = bytes(_class_of(byte) for byte in range(256))
_REPEAT_TABLE = bytes([_REPEAT]) + bytes(255)  # a byte equal to the one before: 0 -> repeat


def _pair_table(weights: tuple[tuple[int, ...], ...]) -> bytes:
    """Weights indexed by a pair code, (class << 4) | context."""
    table = bytearray(256)
    for cls, row in enumerate(weights, start=1):
        table[cls << 4 : (cls << 4) + 16] = bytes(row)
    return bytes(table)


_PAIR_WEIGHTS = _pair_table(_WEIGHTS)
# zlib's Adler-32 keeps 1 + the sum of its input's bytes, modulo 65,521, in its low 16 bits: the
# fastest byte sum in the standard library. Chunks this long never reach the modulus.
_SUM_CHUNK = 65_519 // max(1, *_PAIR_WEIGHTS)


def class_pairs(data: bytes) -> bytes:
    """One pair code per byte of `data`, (its class << 4) | its context: the index of CLASSES
    of the byte before, 0 (start) for the first byte, 15 (repeat) after the same byte."""
    if not data:
        return b""
    size = len(data)
    classes = int.from_bytes(data.translate(_CLASS_TABLE), "big")
    raw = int.from_bytes(data, "big")
    # Each byte XOR the one before is 0 for a repeat; 0xFF, which UTF-8 never holds, stands
    # before the first byte, so that one is never a repeat.
    before = (raw >> 8) | (0xFF << (8 * size - 8))
    repeats = int.from_bytes((raw ^ before).to_bytes(size, "big").translate(_REPEAT_TABLE), "big")
    # Classes fit in 4 bits, so shifting the whole number moves every byte's class into the
    # high nibble of its own byte, and the previous byte's class into the low nibble; a repeat
    # sets all four low bits.
    return ((classes << 4) | (classes >> 8) | repeats).to_bytes(size, "big")


def _byte_sum(data: bytes) -> int:
    if len(data) <= _SUM_CHUNK:
        return (zlib.adler32(data) & 0xFFFF) - 1
    view = memoryview(data)
    return sum(
        (zlib.adler32(view[start : start + _SUM_CHUNK]) & 0xFFFF) - 1
        for start in range(0, len(data), _SUM_CHUNK)
    )


#: Characters weighed at once: `class_pairs` holds about ten numbers as long as its input, so
#: a long text is weighed a slice at a time (a 30 MB request body took 290 MB more at once).
_PAIR_SLICE = 1 << 20


def token_units(text: str) -> int:
    """`token_weight(text)` in integer units of 1/TOKEN_UNIT token: exact to sum."""
    if len(text) <= _PAIR_SLICE:
        data = text.encode("utf-8", "surrogatepass")
        return _byte_sum(class_pairs(data).translate(_PAIR_WEIGHTS))
    # A byte's pair code depends on the byte before it only: each slice after the first is
    # read after the last byte of the one before, whose own code (counted there) is dropped,
    # so the slices' sums add up to the whole's exactly.
    total, before = 0, b""
    for start in range(0, len(text), _PAIR_SLICE):
        data = text[start : start + _PAIR_SLICE].encode("utf-8", "surrogatepass")
        pairs = class_pairs(before + data)[len(before) :]
        total += _byte_sum(pairs.translate(_PAIR_WEIGHTS))
        before = data[-1:]
    return total


def token_weight(text: str) -> float:
    """Estimated tokens of `text`, unrounded; subadditive: the weight of a concatenation is at
    most the sum of its parts' weights, so a budget can add up the weights of lines."""
    return token_units(text) / TOKEN_UNIT


def estimate_tokens(text: str) -> int:
    """Tokens of `text` by the project's one estimator: `token_weight` rounded up. Never fewer
    than o200k_base or cl100k_base count on the calibration corpus."""
    return -(-token_units(text) // TOKEN_UNIT)


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


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last one `…` when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
