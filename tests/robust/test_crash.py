"""Crash safety: stdio servers are SIGKILLed at random instants while they record and squash.

Each round starts `frs-mcp --db F` on the same file, lets two clients write into two sessions,
and kills the process at a random instant (some rounds while it is still starting). After every
round the file must pass `PRAGMA integrity_check`, hold every write whose response reached a
client, and keep its invariants; at the end every active squash must still be restorable, and
the thread must then show every original message in order. Set FRS_CRASH_SEED to replay a run
(with the same FRS_CRASH_ROUNDS).
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import anyio
import pytest

from tests.robust.audit import (
    Acknowledged,
    Target,
    check_acknowledged,
    check_database,
    has_sessions,
    open_file,
)
from tests.robust.wire import ServerGone, Wire, text_of
from tests.robust.workload import Worker

# Each round is a new process killed at a new random instant (a new seed every run); 16 rounds
# cover start, migration and writing many times over, in half the time 32 took.
# FRS_CRASH_ROUNDS sets another count (the README's figures are from a run of 32).
ROUNDS = int(os.environ.get("FRS_CRASH_ROUNDS") or 16)
WORKERS = 2
_HEADER = re.compile(r"^\[(\d+(?:–\d+)?)\] ([^:]+): (.*)$")

pytestmark = pytest.mark.slow


async def _round(db: Target, home: Path, workers: list[Worker], rng: random.Random) -> str:
    """One server life: start, write, SIGKILL at a random instant. Returns when it was killed."""
    early = rng.random() < 0.25  # measured from the spawn: may land during start or migration
    delay = rng.uniform(0.0, 1.2) if early else rng.uniform(0.02, 0.3)
    async with Wire.spawn(["--db", str(db)], home) as wire, anyio.create_task_group() as tg:

        async def kill_later() -> None:
            await anyio.sleep(delay)
            wire.kill()

        if early:
            tg.start_soon(kill_later)
        try:
            await wire.initialize()
        except ServerGone:
            return "during start"
        if not early:
            tg.start_soon(kill_later)
        for worker in workers:
            tg.start_soon(worker.run, wire)
    return "early" if early else "while writing"


async def _restore_everything(db: Target, home: Path, acked: Acknowledged) -> int:
    """Through a fresh server: the view numbers the entries 1..N; undo every active squash,
    newest first; then every original message is back, in number order, as it was recorded.
    Returns the squashes undone."""
    undone = 0
    async with Wire.spawn(["--db", str(db)], home) as wire:
        await wire.initialize()
        with open_file(db) as conn:
            sessions = [sid for (sid,) in conn.execute("select id from sessions")]
        for session_id in sessions:
            # A window from 1: a whole-thread view over the server's cap would be budgeted.
            before = await wire.call_tool("frs_view_thread", {"session_id": session_id, "from": 1})
            labels = [
                found.group(1)
                for found in map(_HEADER.match, text_of(before).splitlines())
                if found
            ]
            with open_file(db) as conn:
                (live,) = conn.execute(
                    "select live_count from sessions where id = ?", (session_id,)
                ).fetchone()
            assert labels == [str(p) for p in range(1, live + 1)], "positions are not 1..N"
            answer = await wire.request(
                "resources/read", {"uri": f"frs://sessions/{session_id}/squashes"}
            )
            log = json.loads(answer["result"]["contents"][0]["text"])["squashes"]
            active = [q["alias"] for q in log if not q["restored"]]
            for alias in reversed(active):  # a later squash may hold an earlier one's summary
                result = await wire.call_tool(
                    "frs_restore", {"alias": alias, "session_id": session_id}
                )
                assert not result.get("isError"), f"{alias} is not restorable: {text_of(result)}"
                undone += 1
            result = await wire.call_tool(
                "frs_view_thread",
                {
                    "numbering": "absolute",
                    "preview_chars": 100_000,
                    "session_id": session_id,
                    "from": 1,
                },
            )
            assert not result.get("isError"), text_of(result)
            shown: dict[int, str] = {}
            for line in text_of(result).splitlines():
                header = _HEADER.match(line)
                if header:
                    assert "–" not in header.group(1), f"a summary is left: {line}"
                    assert not header.group(2).startswith("Summary"), line
                    shown[int(header.group(1))] = header.group(3)
            with open_file(db) as conn:
                originals = [
                    number
                    for (number,) in conn.execute(
                        "select number from messages where session_id = ? and kind = 'message'"
                        " order by number",
                        (session_id,),
                    )
                ]
            assert list(shown) == originals, f"session {session_id}: not every original is back"
            for (sid, number), content in acked.messages.items():
                if sid == session_id:
                    assert shown[number] == content, f"M.{number} reads {shown[number]!r}"
    return undone


class TestCrashSafety:
    async def test_sigkill_at_random_instants_loses_no_confirmed_write(
        self, tmp_path: Path, database: Target
    ) -> None:
        seed = int(os.environ.get("FRS_CRASH_SEED") or random.randrange(2**32))
        print(f"FRS_CRASH_SEED={seed}")
        rng = random.Random(seed)
        db = database
        workers = [Worker(f"w{k}", random.Random(rng.random())) for k in range(WORKERS)]
        kills: dict[str, int] = {}
        for round_ in range(ROUNDS):
            when = await _round(db, tmp_path, workers, rng)
            kills[when] = kills.get(when, 0) + 1
            if not has_sessions(db):
                continue  # killed before the database (or its schema) was created
            acked = Acknowledged()
            for worker in workers:
                acked.merge(worker.acked)
            try:
                check_database(db)
                check_acknowledged(db, acked)
            except AssertionError as exc:
                raise AssertionError(f"round {round_} (seed {seed}): {exc}") from exc

        acked = Acknowledged()
        for worker in workers:
            acked.merge(worker.acked)
        assert acked.messages, "no write was ever confirmed: the rounds were too short"
        undone = await _restore_everything(db, tmp_path, acked)
        check_database(db)
        check_acknowledged(db, acked)
        calls = sum(w.tally.calls for w in workers)
        print(
            f"{ROUNDS} rounds, kills {kills}, {calls} calls, {len(acked.messages)} messages, "
            f"{len(acked.squashes)} squashes and {len(acked.restores)} restores confirmed; "
            f"{undone} squashes undone at the end"
        )
