"""Search's trigram index kept off the write path (PostgreSQL, schema version 8).

A recorded message is queued in `search_pending` by a trigger, in the statement that records
it; search scans what waits there (`storage.postgres.search`), so it finds a message from its
commit on. `SearchIndexer` moves what waits into `search_texts`, whose GIN trigram index search
reads, in transactions of its own after the writes: once they pause for `QUIET` seconds, or
`LAG` seconds after the first one at the latest, so a burst of writes (an import) is not slowed
by its own indexing and the queue a search scans stays short. Each move takes its rows with
`skip locked`: the instances on one database share the queue, and a message is indexed once,
by whichever instance comes first; one that stops with rows queued leaves them for the next.

Why: keeping the trigram index on `messages` itself made a 5-message step 3.5× slower and a
1,000-message batch 2.3× (BENCHMARKS.md, "Search").
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

log = logging.getLogger(__name__)

#: Seconds without a write before what they queued is indexed.
QUIET = 0.25
#: Seconds after a write by which what it queued is being indexed, however busy the writers.
LAG = 5.0
#: Messages indexed per transaction.
CHUNK = 1_000
#: One transaction: the oldest queued messages this instance can lock, out of the queue and
#: into `search_texts` (a message deleted meanwhile is dropped from the queue only); how many.
_MOVE = (
    "with taken as (delete from search_pending where message_id in (select message_id"
    " from search_pending order by message_id limit $1 for update skip locked)"
    " returning message_id), put as (insert into search_texts (message_id, session_id, folded)"
    ' select m.id, m.session_id, lower(m.content collate "C") from messages m'
    " join taken on taken.message_id = m.id on conflict (message_id) do nothing)"
    " select count(*) from taken"
)


class SearchIndexer:
    """Indexes what the writes of this process queue (`wrote`), after them (`run`)."""

    def __init__(self, db: Any) -> None:
        self.db = db  # a PgDatabase (whose `fetch` runs one statement in its own transaction)
        self._wrote = anyio.Event()
        self._wrote.set()  # at start: what an earlier run, or a migration, left queued

    def wrote(self) -> None:
        """A write committed: index what it queued, soon."""
        self._wrote.set()

    async def run(self) -> None:
        """Index after each pause in the writes, until cancelled; a failure is logged and the
        next write tries again."""
        while True:
            await self._wrote.wait()
            await self._settle()
            try:
                await self.index_queued()
            except Exception as exc:  # the database went away: what waits stays searchable
                log.warning("search indexing stopped for now (%s); the next write retries", exc)

    async def _settle(self) -> None:
        """Return once the writes pause for `QUIET` seconds, or `LAG` after the first."""
        deadline = anyio.current_time() + LAG
        while True:
            self._wrote = anyio.Event()
            left = deadline - anyio.current_time()
            if left <= 0:
                return
            with anyio.move_on_after(min(QUIET, left)):
                await self._wrote.wait()
                continue
            return

    async def index_queued(self) -> int:
        """Index every message queued now (and what is queued meanwhile); how many."""
        done = 0
        while moved := (await self.db.fetch(_MOVE, CHUNK))[0][0]:
            done += moved
        return done
