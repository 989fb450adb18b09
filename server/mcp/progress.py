"""Progress of long work: to an MCP client as `notifications/progress`, and to the terminal
of `frs-mcp import` and `export` on stderr (stdout carries their result).

A use case reports progress from inside its write transaction, where nothing but the database
may be awaited (a slow client must not hold the writer's lock). So the callback `with_progress`
gives it only queues the report; a task sends it, and the call waits for that task to drain
before it returns, so every report reaches the client ahead of the result.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from frs.recording import Progress as Report

T = TypeVar("T")
BAR_WIDTH = 30


async def with_progress(ctx: Any, unit: str, work: Callable[[Report], Awaitable[T]]) -> T:
    """`work(report)`, each `report(done, total)` sent to `ctx`'s client as `done` of `total`
    `unit` (the SDK drops them when the client sent no progress token). An exception of `work`
    comes out as it is, not wrapped in an exception group."""
    send, receive = anyio.create_memory_object_stream[tuple[int, int]](math.inf)

    async def forward(reports: MemoryObjectReceiveStream[tuple[int, int]]) -> None:
        async with reports:
            async for done, total in reports:
                await ctx.report_progress(done, total, f"{done:,} of {total:,} {unit}")

    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(forward, receive)
        with send:
            try:
                result = await work(lambda done, total: send.send_nowait((done, total)))
            except Exception as exc:  # re-raised below, once the reports are out
                failure = exc
    if failure is not None:
        raise failure
    return result


class Progress:
    """A bar on stderr when it is a terminal, else a line per quarter (`imported 600/2,400
    messages`) once the work reaches `quiet_below` units; below that, lines would be noise.

    `bar=False` keeps the bar off even on a terminal: an export printed to the same terminal
    would be cut by it.
    """

    def __init__(
        self, total: int, verb: str, unit: str, *, quiet_below: int, bar: bool = True
    ) -> None:
        self.total = total
        self.verb = verb
        self.unit = unit
        self.tty = bar and sys.stderr.isatty()
        self.lines = not self.tty and total >= quiet_below
        self.reported = 0

    def update(self, done: int) -> None:
        if self.tty and self.total:
            filled = BAR_WIDTH * done // self.total
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            print(f"\r[{bar}] {done:,}/{self.total:,} {self.unit}", end="", file=sys.stderr)
            if done == self.total:
                print(file=sys.stderr)
        elif self.lines and done * 4 >= (self.reported + 1) * self.total:
            self.reported = done * 4 // self.total
            print(f"{self.verb} {done:,}/{self.total:,} {self.unit}", file=sys.stderr)
