"""What a squash costs and saves where a provider caches the prompt's prefix.

A prompt cache bills a prefix it already holds at `CACHE_READ` of the input price and one it
must write at `CACHE_WRITE` (Anthropic's 5-minute cache: 0.1× and 1.25×). Squashing S tokens
into a summary of Σ with T tokens after them breaks the cache at the squash once: that call
writes Σ+T instead of reading S+T, about `CACHE_WRITE·(Σ+T) − CACHE_READ·(S+T)` more, and every
later call reads S−Σ fewer tokens, `CACHE_READ·(S−Σ)` less. An old span with much after it
pays back only after many calls; a recent one at once.
"""

from __future__ import annotations

CACHE_READ = 0.1
CACHE_WRITE = 1.25
#: A squash that needs more later calls than this to pay back is worth a word to the model.
SLOW_PAYBACK_CALLS = 10
#: ... and writes at least this many tokens after it again: below it, the break is noise.
SLOW_PAYBACK_TOKENS = 1_000


def squash_cost(squashed: int, summary: int, following: int) -> float:
    """The one-off extra cost, in input-token units, of the call that first sends it."""
    return CACHE_WRITE * (summary + following) - CACHE_READ * (squashed + following)


def squash_saving(squashed: int, summary: int) -> float:
    """What every later call saves, in input-token units."""
    return CACHE_READ * (squashed - summary)


def payback_calls(squashed: int, summary: int, following: int) -> float | None:
    """Later calls until the squash has paid for its cache break (0 when it costs nothing
    extra); None when it never does (a summary no smaller than what it replaced)."""
    saving = squash_saving(squashed, summary)
    if saving <= 0:
        return None
    return max(squash_cost(squashed, summary, following), 0.0) / saving
