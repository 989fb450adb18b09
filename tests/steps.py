"""Counting what a read costs: SQLite's virtual-machine steps on a store's read connection.

A test that proves a read does not grow with the thread compares two counts (a small thread
and a big one) instead of timing them. The counter is SQLite's progress handler, called every
`EVERY` steps, so a count is in hundreds of steps. It is installed through `Database.snapshot`,
the public way to the read connection, and stays on that connection for every later read.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage import Database

EVERY = 100  # steps between two calls of the handler


@dataclass(slots=True)
class Steps:
    """The steps counted (in units of `EVERY`) since the counter was installed or reset."""

    counted: int = 0

    def reset(self) -> None:
        """Start over: what came before (a warm-up call) is not counted."""
        self.counted = 0

    def _tick(self) -> int:
        self.counted += 1
        return 0  # go on with the statement


async def count_steps(db: object) -> Steps:
    """Count, from now on, the steps of every read of `db` (a SQLite store: PostgreSQL has no
    step counter)."""
    assert isinstance(db, Database), "the step counter is SQLite's"
    steps = Steps()
    async with db.snapshot() as conn:
        await conn.set_progress_handler(steps._tick, EVERY)
    return steps
