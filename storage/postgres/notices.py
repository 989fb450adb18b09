"""Notices between the instances on one PostgreSQL database: its LISTEN/NOTIFY on one channel.

What a notice says is the sender's business (`server.mcp.events` sends the changes its clients
made, for the listeners other instances serve); here it is text, at most `MAX_NOTICE` bytes.
`Notices.send` notifies on a pooled connection, all that waits in one statement, after the
change it tells of has committed. `Notices.listening` listens on a connection of its own (not
a pooled one: LISTEN belongs to the connection, and the pool's are lent to any caller), and
reconnects when it is lost. PostgreSQL delivers a notice to every connection listening when it
commits, the sender's own included, and keeps none for a connection that was not listening
then: what is sent while an instance reconnects is not told to it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio

from storage.postgres.database import CONNECT_TIMEOUT, PgDatabase, beside, scrub

log = logging.getLogger(__name__)

CHANNEL = "frs_changes"
#: PostgreSQL refuses a payload of 8,000 bytes or more.
MAX_NOTICE = 7_999
#: Seconds between two attempts to listen again, doubling up to `RETRY_MAX`.
RETRY_FIRST, RETRY_MAX = 0.5, 30.0
_SEND = f"select pg_notify('{CHANNEL}', notice) from unnest($1::text[]) as notice"


class Notices:
    """Notices on `CHANNEL` of the database `db` holds a pool on."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    async def send(self, notices: Sequence[str]) -> None:
        """Notify every listening connection (this process's own too) of each of `notices`,
        in order, in one statement; raises `StoreError` if the database cannot be reached."""
        if notices:
            await self.db.fetch(_SEND, list(notices))

    @asynccontextmanager
    async def listening(self, receive: Callable[[str], None]) -> AsyncIterator[None]:
        """Call `receive(notice)` for every notice on the channel while inside, on the event
        loop (it must return at once); the connection is closed on exit."""
        listened = anyio.Event()
        async with beside(partial(self._listen, receive, listened)):
            # The first listen is in place before the caller goes on (or has failed, and is
            # being retried), so a change made right after start-up is heard.
            with anyio.move_on_after(CONNECT_TIMEOUT):
                await listened.wait()
            yield

    async def _listen(self, receive: Callable[[str], None], listened: anyio.Event) -> None:
        """Listen until cancelled, connecting again whenever the connection is lost."""
        import asyncpg

        failures = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)
        delay = RETRY_FIRST
        while True:
            try:
                await self._listen_once(asyncpg, receive, listened)
                delay = RETRY_FIRST
                log.warning("lost the connection that hears other instances' changes; again")
            except failures as exc:
                listened.set()
                log.warning(
                    "cannot hear other instances' changes (%s); trying again in %g s",
                    scrub(str(exc) or type(exc).__name__, self.db.path),
                    delay,
                )
                await anyio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    async def _listen_once(
        self, asyncpg: Any, receive: Callable[[str], None], listened: anyio.Event
    ) -> None:
        """Listen on one new connection until it is lost."""

        def heard(_conn: Any, _pid: int, _channel: str, notice: str) -> None:
            receive(notice)

        lost = anyio.Event()
        conn = await asyncpg.connect(self.db.path, timeout=CONNECT_TIMEOUT)
        try:
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(CHANNEL, heard)
            listened.set()
            await lost.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await _close(conn)


async def _close(conn: Any) -> None:
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            await conn.close()
    except Exception:
        conn.terminate()
