"""Two processes, one file: two stdio servers (two hosts on one laptop) write one database.

Both start at once on a fresh file (so they race to migrate it), then two clients per server
write concurrently: one pair into a shared session, one client each into its own. No confirmed
write may be lost, no client may see "database is locked" (SQLite's busy timeout makes writers
wait their turn), and each client must see a session's revisions strictly increase.
"""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from tests.robust.audit import Acknowledged, check_acknowledged, check_database, open_file
from tests.robust.wire import Wire
from tests.robust.workload import Worker

CALLS = 60  # per client

pytestmark = pytest.mark.slow


class TestTwoProcessesOneFile:
    async def test_two_servers_writing_concurrently_lose_nothing(
        self, tmp_path: Path, database: Path | str
    ) -> None:
        db = database
        rng = random.Random(7)
        shared = [Worker("shared", random.Random(rng.random()), guard=True) for _ in range(2)]
        own = [Worker(f"own-{k}", random.Random(rng.random())) for k in range(2)]
        async with (
            Wire.spawn(["--db", str(db)], tmp_path, stderr_name="a.err") as a,
            Wire.spawn(["--db", str(db)], tmp_path, stderr_name="b.err") as b,
        ):
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.initialize)
                tg.start_soon(b.initialize)
            async with anyio.create_task_group() as tg:
                for wire, workers in ((a, (shared[0], own[0])), (b, (shared[1], own[1]))):
                    for worker in workers:
                        tg.start_soon(worker.run, wire, CALLS)
            logs = a.stderr() + b.stderr()

        assert shared[0].session_id == shared[1].session_id, "get-or-create made two sessions"
        everyone = [*shared, *own]
        for worker in everyone:
            assert worker.tally.calls == CALLS + 2, f"{worker.conversation} stopped early"
        assert "database is locked" not in logs
        assert "Traceback" not in logs

        acked = Acknowledged()
        for worker in everyone:
            acked.merge(worker.acked)
        check_database(db)
        check_acknowledged(db, acked)

        # Every confirmed write to the shared session has its own revision, and nothing else
        # moved it: the revision is exactly the number of confirmed writes.
        confirmed = [*shared[0].revisions, *shared[1].revisions]
        assert len(set(confirmed)) == len(confirmed), "two writes were confirmed one revision"
        with open_file(db) as conn:
            (revision,) = conn.execute(
                "select revision from sessions where id = ?", (shared[0].session_id,)
            ).fetchone()
        assert sorted(confirmed) == list(range(1, revision + 1))
        assert shared[0].revisions, "the first server confirmed no write to the shared session"
        assert shared[1].revisions, "the second server confirmed no write to the shared session"
        stale = sum("Stale revision" in text for w in shared for text in w.tally.refusals)
        print(
            f"{sum(w.tally.calls for w in everyone)} calls; shared session at revision {revision}; "
            f"{stale} stale-revision refusals; "
            f"{sum(w.tally.refused for w in everyone)} refusals in all"
        )
