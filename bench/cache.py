"""Kept prefix: how much of a view a host's prompt cache can reuse after the thread grows.

A prompt cache reuses the longest unchanged prefix of what a host sends. For each thread size
and view we render the view, append messages the way an agent does (by turns: a user message,
then an assistant call with its result), render it again, and count the bytes of the first view
that are a byte-identical prefix of the second: after 1 append and after 10. Each figure is the
median over `trials` starting points; a thread of a few hundred messages restarts from its base
each trial (after 0, 1, 2, … extra appends, so every phase of the view's blocks is met), a long
thread just keeps growing (a few hundred messages do not change its size).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.threads import TextPool, build_database
from frs import Env, NewMessage, SessionId, ToolCall, ViewOptions, recording, viewing
from frs.text import estimate_tokens
from storage import SqliteStore, open_database

SIZES = (300, 10_000, 100_000)
VIEWS: dict[str, ViewOptions] = {
    "default (capped at 20,000)": ViewOptions(),
    "budget_tokens=4000": ViewOptions(budget_tokens=4000),
    "budget_tokens=1000": ViewOptions(budget_tokens=1000),
}
FRESH_UNDER = 1_000  # threads this small restart from their base for every trial
TARGETS = {"after_1": 0.90, "after_10": 0.75}


def kept(before: str, after: str) -> int:
    """Bytes of `before` that are a byte-identical prefix of `after`."""
    a, b = before.encode(), after.encode()
    limit = min(len(a), len(b))
    low, high = 0, limit
    while low < high:  # the longest common prefix, by bisection over bytes
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def turn(pool: TextPool, k: int) -> list[NewMessage]:
    """Append number `k`: a user message, or an assistant call answered by its result."""
    if k % 2 == 0:
        return [NewMessage("user", pool.user[k % len(pool.user)])]
    name, arguments = pool.calls[k % len(pool.calls)]
    call_id = f"cache-{k}"
    return [
        NewMessage(
            "assistant",
            pool.assistant[k % len(pool.assistant)],
            tool_calls=(ToolCall(call_id, name, arguments),),
        ),
        NewMessage("tool", pool.results[k % len(pool.results)], name=name, tool_call_id=call_id),
    ]


async def _trial(
    env: Env, session: SessionId, pool: TextPool, start: int
) -> dict[str, tuple[float, float, int]]:
    """Per view: kept share after 1 and after 10 appends, and the view's estimated tokens."""
    before = {name: await viewing.view(env, options, session) for name, options in VIEWS.items()}
    await recording.record(env, turn(pool, start), session)
    one = {name: await viewing.view(env, options, session) for name, options in VIEWS.items()}
    for k in range(start + 1, start + 10):
        await recording.record(env, turn(pool, k), session)
    ten = {name: await viewing.view(env, options, session) for name, options in VIEWS.items()}
    return {
        name: (
            kept(before[name], one[name]) / len(before[name].encode()),
            kept(before[name], ten[name]) / len(before[name].encode()),
            estimate_tokens(before[name]),
        )
        for name in VIEWS
    }


async def measure_size(folder: Path, pool: TextPool, size: int, trials: int) -> dict[str, Any]:
    base = folder / f"cache-{size}.db"
    (session,) = await build_database(base, pool, size)
    rows: list[dict[str, tuple[float, float, int]]] = []
    started = time.perf_counter()
    if size < FRESH_UNDER:
        for trial in range(trials):
            copy = folder / f"cache-{size}-trial.db"
            shutil.copyfile(base, copy)
            async with open_database(copy) as db:
                env = Env(SqliteStore(db))
                for k in range(trial):  # the phase: this trial starts `trial` appends later
                    await recording.record(env, turn(pool, 1000 + k), session)
                rows.append(await _trial(env, session, pool, 2000 + 10 * trial))
    else:
        async with open_database(base) as db:
            env = Env(SqliteStore(db))
            for trial in range(trials):
                rows.append(await _trial(env, session, pool, 10 * trial))
    views = {}
    for name in VIEWS:
        after_1 = [row[name][0] for row in rows]
        after_10 = [row[name][1] for row in rows]
        views[name] = {
            "after_1": round(statistics.median(after_1), 3),
            "after_10": round(statistics.median(after_10), 3),
            "after_1_min": round(min(after_1), 3),
            "after_10_min": round(min(after_10), 3),
            "tokens": int(statistics.median(row[name][2] for row in rows)),
        }
    return {"trials": trials, "seconds": round(time.perf_counter() - started, 1), "views": views}


async def run(
    folder: Path, pool: TextPool, trials: int, sizes: tuple[int, ...] = SIZES
) -> dict[str, Any]:
    return {str(size): await measure_size(folder, pool, size, trials) for size in sizes}


def main() -> None:
    """`python -m bench.cache [TRIALS] [SIZE ...]`: print the table (for tuning by hand)."""
    import sys

    import anyio

    from bench.corpus import load_corpus

    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    sizes = tuple(int(s) for s in sys.argv[2:]) or SIZES
    pool = TextPool.from_corpus(load_corpus())
    with tempfile.TemporaryDirectory() as folder:
        result = anyio.run(run, Path(folder), pool, trials, sizes)
    for size, figures in result.items():
        for name, view in figures["views"].items():
            one, ten = view["after_1"], view["after_10"]
            print(
                f"{size:>7} {name:<28} after 1: {one:.1%} (min {view['after_1_min']:.1%})"
                f"  after 10: {ten:.1%} (min {view['after_10_min']:.1%})"
                f"  ~{view['tokens']:,} tokens"
            )


if __name__ == "__main__":
    main()
