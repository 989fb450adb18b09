"""Samples and their summaries: medians and tail percentiles of repeated timings.

Every timing is wall-clock `perf_counter` around one awaited call, in milliseconds. Percentiles
use the nearest-rank rule on the sorted samples, so p99 of 100 samples is the largest but one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


def percentile(sorted_samples: list[float], q: float) -> float:
    """Nearest-rank percentile `q` (0..100) of already sorted samples."""
    if not sorted_samples:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_samples)))
    return sorted_samples[rank - 1]


@dataclass(slots=True)
class Samples:
    """Timings of one operation, in milliseconds."""

    ms: list[float] = field(default_factory=list)

    async def time(self, call: Callable[[], Awaitable[Any]]) -> Any:
        start = time.perf_counter()
        result = await call()
        self.ms.append((time.perf_counter() - start) * 1000)
        return result

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.ms)
        if not ordered:
            return {"n": 0}
        return {
            "n": len(ordered),
            "p50": round(statistics.median(ordered), 4),
            "p90": round(percentile(ordered, 90), 4),
            "p99": round(percentile(ordered, 99), 4),
            "min": round(ordered[0], 4),
            "max": round(ordered[-1], 4),
            "mean": round(statistics.fmean(ordered), 4),
        }


def ratio(numerator: float | None, denominator: float | None, digits: int = 3) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    if math.isnan(numerator) or math.isnan(denominator):
        return None
    return round(numerator / denominator, digits)
