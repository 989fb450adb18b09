"""Progress of long tool calls, relayed to the client as `notifications/progress`.

The service reports progress from inside its write transaction, where nothing but the database
may be awaited (a slow client must not hold the writer's lock). So the callback it gets only
queues the report; a task of the relay sends it, and the relay waits for that task to drain
before the tool returns, so every report reaches the client ahead of the result.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from frs.service import Progress

T = TypeVar("T")


async def with_progress(ctx: Any, unit: str, work: Callable[[Progress], Awaitable[T]]) -> T:
    """`work(progress)`, each `progress(done, total)` sent to `ctx`'s client as `done` of `total`
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
