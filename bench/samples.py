"""Synthetic stress texts for the token estimator: content the corpus has little or none of.

Each class is a generator of random text, seeded by its name, so the samples are the same on
every machine and Python version: CJK from the national standards' common-character rows (the
3,755 level-1 hanzi of GB 2312, JIS X 0208 level-1 kanji and kana, KS X 1001 hangul), read
through the standard library's codecs; emoji runs with skin tones, ZWJ families and flags;
digits; base64; hex ids; minified and indented JSON; deeply indented code; whitespace runs;
punctuation art; words of other scripts; random printable ASCII; and, one text each, runs of
every character that makes runs. Random characters are a worst case: real text in these
scripts tokenizes into fewer tokens a character than these samples do.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

#: Sample lengths in characters: tiny texts price the start of a text, long ones the rate.
SIZES = (1, 2, 3, 5, 8, 13, 40, 100, 300, 1_000, 3_000, 10_000)
_SEED = "frs-estimator-1"
_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "from",
    "or",
    "an",
    "at",
    "not",
    "have",
    "but",
    "which",
    "one",
    "all",
    "can",
    "has",
    "their",
    "more",
    "if",
    "will",
    "about",
    "when",
    "what",
    "there",
    "so",
    "into",
    "some",
    "out",
    "up",
    "other",
    "time",
    "only",
    "new",
    "also",
    "like",
    "these",
    "than",
    "then",
    "them",
    "first",
    "any",
    "its",
    "may",
    "could",
)


@dataclass(frozen=True, slots=True)
class Sample:
    kind: str  # the stress class
    text: str


def _decoded(codec: str, rows: range, cells: range = range(0xA1, 0xFF)) -> tuple[str, ...]:
    """Every character a two-byte EUC code table has in `rows` (its lead bytes)."""
    found = []
    for row in rows:
        for cell in cells:
            try:
                found.append(bytes((row, cell)).decode(codec))
            except UnicodeDecodeError:
                continue  # an unassigned cell
    return tuple(found)


_HANZI = _decoded("gb2312", range(0xB0, 0xD8))  # GB 2312 level 1: the common hanzi
_KANJI = _decoded("euc_jp", range(0xB0, 0xD0))  # JIS X 0208 level 1
_HIRAGANA = _decoded("euc_jp", range(0xA4, 0xA5))
_KATAKANA = _decoded("euc_jp", range(0xA5, 0xA6))
_HANGUL = _decoded("euc_kr", range(0xB0, 0xC9))  # KS X 1001: 2,350 common syllables
_EMOJI = tuple(
    chr(code)
    for first, last in ((0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF))
    for code in range(first, last + 1)
) + tuple(chr(code) for code in range(0x1F900, 0x1FA00))
_SYMBOLS = tuple(chr(code) for code in range(0x2600, 0x27C0))  # misc symbols, dingbats
_ALPHABETS = {
    "cyrillic": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "greek": "αβγδεζηθικλμνξοπρστυφχψω",
    "latin accents": "abcdefghijklmnopqrstuvwxyzéèêàâçôûùîïëüöäßñáíóú",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "hebrew": "אבגדהוזחטיכלמנסעפצקרשת",
    "devanagari": "अआइईउऊएऐओऔकखगघङचछजझञटठडढणतथदधनपफबभमयरलवशषसहािीुूेैोौ्ं",
    "thai": "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศสหอะาิีึืุูเแโใไ่้๊๋",
}


def _length(parts: list[str]) -> int:
    return sum(map(len, parts))


def _chinese(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        parts.extend(rng.choice(_HANZI) for _ in range(rng.randint(4, 20)))
        parts.append(rng.choice("，。、；：？！"))
    return "".join(parts)[:size]


def _japanese(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        for _ in range(rng.randint(3, 12)):
            draw = rng.random()
            pool = _KANJI if draw < 0.4 else _HIRAGANA if draw < 0.85 else _KATAKANA
            parts.append(rng.choice(pool))
        parts.append(rng.choice("、。"))
    return "".join(parts)[:size]


def _korean(rng: random.Random, size: int) -> str:
    words: list[str] = []
    while _length(words) + len(words) < size:
        words.append("".join(rng.choice(_HANGUL) for _ in range(rng.randint(1, 5))))
    return " ".join(words)[:size]


def _emoji(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        draw = rng.random()
        if draw < 0.6:
            parts.append(rng.choice(_EMOJI))
        elif draw < 0.7:
            parts.append(rng.choice(_SYMBOLS) + "\ufe0f")  # emoji presentation selector
        elif draw < 0.8:
            parts.append(rng.choice("👍👋🙌👏") + chr(0x1F3FB + rng.randrange(5)))  # skin tone
        elif draw < 0.9:
            parts.append("\u200d".join(rng.choice("👨👩👧👦") for _ in range(rng.randint(2, 4))))
        else:
            parts.append("".join(chr(0x1F1E6 + rng.randrange(26)) for _ in range(2)))  # a flag
    return "".join(parts)[:size]


def _digits(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(size))


def _numbers(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        draw = rng.random()
        if draw < 0.3:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
        elif draw < 0.6:
            parts.append(f"{rng.uniform(-1e4, 1e4):.{rng.randint(1, 8)}f}")
        else:
            parts.append(str(rng.randint(0, 999)))
    return rng.choice([", ", " ", "\n", ","]).join(parts)[:size]


def _base64(rng: random.Random, size: int) -> str:
    raw = rng.randbytes(size * 3 // 4 + 3)
    encode = base64.b64encode if rng.random() < 0.7 else base64.urlsafe_b64encode
    text = encode(raw).decode("ascii")[:size]
    if rng.random() < 0.5:  # wrapped as MIME and PEM wrap it
        text = "\n".join(text[at : at + 76] for at in range(0, len(text), 76))
    return text


def _hex(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        draw = rng.random()
        if draw < 0.4:
            parts.append(rng.randbytes(32).hex())  # a SHA-256
        elif draw < 0.7:
            parts.append(str(uuid.UUID(bytes=rng.randbytes(16))))
        else:
            parts.append(rng.randbytes(20).hex()[: rng.choice([7, 8, 12, 40])])  # a commit id
    return rng.choice([" ", "\n", ", "]).join(parts)[:size]


def _value(rng: random.Random, depth: int) -> object:
    """A random JSON value nested at most `depth` deep."""
    draw = rng.random()
    if depth > 0 and draw < 0.25:
        suffixes = ["", "_id", "Name", "_count", "URL"]
        return {
            rng.choice(_WORDS) + rng.choice(suffixes): _value(rng, depth - 1)
            for _ in range(rng.randint(1, 6))
        }
    if depth > 0 and draw < 0.4:
        return [_value(rng, depth - 1) for _ in range(rng.randint(0, 5))]
    if draw < 0.55:
        return rng.randint(-(10**6), 10**6)
    if draw < 0.65:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
    if draw < 0.72:
        return rng.choice([True, False, None])
    if draw < 0.85:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
    return rng.randbytes(rng.randint(2, 12)).hex()


def _json_minified(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        parts.append(json.dumps(_value(rng, 6), separators=(",", ":")))
    return ",".join(parts)[:size]


def _json_indented(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        parts.append(json.dumps(_value(rng, 8), indent=rng.choice([2, 4])))
    return "\n".join(parts)[:size]


def _code_indented(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    depth = 0
    unit = rng.choice(["    ", "  ", "\t"])
    while _length(lines) < size:
        draw = rng.random()
        name = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}"
        if draw < 0.3 and depth < 16:
            opener = rng.choice(["if ", "for item in ", "while ", "with "])
            lines.append(f"{unit * depth}{opener}{name}:")
            depth += 1
        elif draw < 0.4 and depth:
            depth -= rng.randint(1, depth)
        elif draw < 0.45:
            lines.append("")
        else:
            call = f"{rng.choice(_WORDS)}({rng.randint(0, 99)}, {rng.choice(_WORDS)!r})"
            lines.append(f"{unit * depth}{name} = {call}")
    return "\n".join(lines)[:size]


def _whitespace(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        draw = rng.random()
        if draw < 0.4:
            parts.append(" " * rng.randint(1, 300))
        elif draw < 0.6:
            parts.append("\t" * rng.randint(1, 40))
        elif draw < 0.8:
            parts.append("\n" * rng.randint(1, 20))
        else:
            parts.append("".join(rng.choice(" \t\n\r") for _ in range(rng.randint(1, 50))))
        if rng.random() < 0.3:
            parts.append(rng.choice(_WORDS))
    return "".join(parts)[:size]


def _punctuation(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        draw = rng.random()
        if draw < 0.2:
            parts.append(rng.choice("=-*#~_") * rng.randint(3, 120))  # rules
        elif draw < 0.4:
            cells = rng.choices(["---", ":--", "--:", " x ", " ab "], k=rng.randint(2, 8))
            parts.append("|" + "|".join(cells) + "|")  # a Markdown table row
        elif draw < 0.6:
            branch = rng.choice(["├── ", "└── ", "│   "]) * rng.randint(1, 5)
            parts.append(f"{branch}{rng.choice(_WORDS)}.py")  # a tree listing
        elif draw < 0.8:
            marks = "()[]{}<>.,;:!?@#$%^&*-+=/\\|\"'`~"
            parts.append("".join(rng.choice(marks) for _ in range(rng.randint(1, 30))))
        else:
            tokens = (r"^\s*(\d+)\.(\w+)$", "->", "=>", "!==", "&&", "::", "…", "→", "—", "✓")
            parts.append(rng.choice(tokens))
    return rng.choice(["\n", " ", ""]).join(parts)[:size]


_REPEATABLE = "".join(c for c in string.printable[:94] if not c.isalpha()) + " \t\x00\x1b"
# Long runs: rules, padding and indentation; letters too, which BPE splits into pairs.
_RUNS = " \t-=*#~_.0" + string.ascii_letters


def _repeats(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while _length(parts) < size:
        char = rng.choice(string.printable[:94] + "é中😀—")
        parts.append(char * rng.randint(2, 120))
    return rng.choice([" ", "\n", ""]).join(parts)[:size]


def repeat_runs() -> list[Sample]:
    """Every character that makes runs, alone: short runs of each punctuation, digit, space
    and control character, long runs of _RUNS."""
    short = [char * length for char in _REPEATABLE for length in (2, 3, 4, 7)]
    long = [char * length for char in _RUNS for length in (52, 120)]
    return [Sample("repeated characters", text) for text in short + long]


def _words_of(alphabet: str) -> Callable[[random.Random, int], str]:
    def generate(rng: random.Random, size: int) -> str:
        words: list[str] = []
        while _length(words) + len(words) < size:
            words.append("".join(rng.choice(alphabet) for _ in range(rng.randint(2, 9))))
        return " ".join(words)[:size]

    return generate


def _printable(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(string.printable[:94]) for _ in range(size))


GENERATORS: dict[str, Callable[[random.Random, int], str]] = {
    "cjk chinese": _chinese,
    "cjk japanese": _japanese,
    "cjk korean": _korean,
    "emoji": _emoji,
    "digits": _digits,
    "numbers": _numbers,
    "base64": _base64,
    "hex ids": _hex,
    "json minified": _json_minified,
    "json indented": _json_indented,
    "code indented": _code_indented,
    "whitespace": _whitespace,
    "punctuation": _punctuation,
    "repeated characters": _repeats,
    **{name: _words_of(alphabet) for name, alphabet in _ALPHABETS.items()},
    "printable ascii": _printable,
}


def samples() -> list[Sample]:
    """Every stress class at every length of SIZES; the same list on every run."""
    found: list[Sample] = []
    for kind, generate in GENERATORS.items():
        rng = random.Random(f"{_SEED}:{kind}")  # str seeds hash with SHA-512: stable
        found.extend(Sample(kind, generate(rng, size)) for size in SIZES)
    return found + repeat_runs()
