"""Several instances, one database: three `frs-mcp --transport streamable-http` servers on one
PostgreSQL database behind haproxy (plain round robin), as README "Several instances"
configures them (issue 14, item 5).

32 clients at once: 24 work in sessions of their own (the load suite's mix), 8 race on one
session in rounds: they get-or-create it together, record together, then all squash positions
1–2 with the same `expected_revision` (exactly one wins, the others are told the revision is
stale), and now and then all restore the winner's squash the same way. The clients speak the
Python SDK's default (the stateless 2026-07-28 protocol), so any instance answers any request.
Afterwards: the racing session's acknowledged operations, replayed in revision order on a
reference model, give the thread the database holds; revisions are contiguous; every
acknowledged write is there; no connection is idle in a transaction. A second test kills one
instance with SIGKILL in the middle of writes: nothing acknowledged is lost.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.haproxy import config, free_port, haproxy
from tests.pg import Cluster
from tests.pgsync import SyncPg
from tests.robust.audit import Acknowledged, check_acknowledged, check_database
from tests.robust.test_load import LoadClient
from tests.robust.wire import http_process

INSTANCES = 3
RACERS = 8
OWN = 24
ROUNDS = 10
OWN_CALLS = 40
KILL_AFTER = 150  # messages acknowledged before the kill, and again after it

pytestmark = pytest.mark.slow


@asynccontextmanager
async def cluster_of_instances(
    dsn: str, folder: Path
) -> AsyncIterator[tuple[str, list[anyio.abc.Process]]]:
    """Three instances on `dsn` (started at once: they race to migrate) behind haproxy; yields
    the balanced URL and the processes."""
    async with AsyncExitStack() as stack:
        started: list[tuple[int, anyio.abc.Process]] = [(0, None)] * INSTANCES  # type: ignore[list-item]

        front = free_port()

        async def start(i: int) -> None:
            args = ["--transport", "streamable-http", "--db", dsn, "--log-level", "WARNING",
                    "--allowed-host", f"127.0.0.1:{front}"]  # fmt: skip
            started[i] = await stack.enter_async_context(
                http_process(args, folder, stderr_name=f"instance{i}.err")
            )

        async with anyio.create_task_group() as group:
            for i in range(INSTANCES):
                group.start_soon(start, i)
        port = await stack.enter_async_context(haproxy([p for p, _ in started], folder, front))
        yield f"http://127.0.0.1:{port}/mcp", [process for _, process in started]


def idle_in_transaction(dsn: str) -> int:
    with SyncPg(dsn) as conn:
        row = conn.execute(
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and state like 'idle in transaction%'"
        ).fetchone()
    assert row is not None
    return int(row[0])


def structured(result: Any) -> dict[str, Any]:
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    assert result.structured_content is not None, text
    return dict(result.structured_content)


@dataclass
class Race:
    """The racing session and every operation acknowledged on it, by revision."""

    session: str = ""
    done: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # revision: operation
    acked: Acknowledged = field(default_factory=Acknowledged)

    def ack(self, revision: int, operation: tuple[Any, ...]) -> None:
        assert revision not in self.done, f"revision {revision} acknowledged twice"
        self.done[revision] = operation


async def round_of(index: int, round_: int, client: Client, race: Race) -> None:
    contents = [f"r{round_} c{index} m{k} " + "word " * 30 for k in range(2)]
    messages = [{"role": "user", "content": text} for text in contents]
    done = structured(
        await client.call_tool("frs_record", {"messages": messages, "session_id": race.session})
    )
    race.ack(done["revision"], ("record", tuple(done["numbers"])))
    for number, text in zip(done["numbers"], contents, strict=True):
        race.acked.messages[(race.session, number)] = text


async def race_squash(client: Client, race: Race, k: int, revision: int, out: list[str]) -> None:
    result = await client.call_tool(
        "frs_compress_range",
        {
            "from": 1,
            "to": 2,
            "summary": f"squashed by {k}",
            "session_id": race.session,
            "expected_revision": revision,
        },
    )
    if result.is_error:
        text = result.content[0].text  # type: ignore[union-attr]
        assert "Stale revision" in text, text
        out.append("stale")
        return
    done = structured(result)
    n = int(done["alias"].split("@")[0].removeprefix("SQ."))
    race.ack(done["revision"], ("squash", n, f"squashed by {k}"))
    race.acked.squashes[(race.session, n)] = f"squashed by {k}"
    out.append(f"won SQ.{n}")


async def race_restore(client: Client, race: Race, n: int, revision: int, out: list[str]) -> None:
    result = await client.call_tool(
        "frs_restore",
        {"alias": f"SQ.{n}", "session_id": race.session, "expected_revision": revision},
    )
    if result.is_error:
        text = result.content[0].text  # type: ignore[union-attr]
        assert "Stale revision" in text, text
        out.append("stale")
        return
    done = structured(result)
    race.ack(done["revision"], ("restore", n))
    race.acked.restores.add((race.session, n))
    out.append("won")


def replay(done: dict[int, tuple[Any, ...]]) -> list[int]:
    """The live entries' numbers after the operations, in revision order, on a plain model:
    records take the next numbers, a squash's summary the one after, a restore puts its
    members back in place of its summary."""
    entries: list[int] = []
    members: dict[int, tuple[int, list[int]]] = {}  # squash n: (summary number, members)
    next_number = 1
    for revision in sorted(done):
        operation = done[revision]
        if operation[0] == "record":
            numbers = list(operation[1])
            assert numbers == list(range(next_number, next_number + len(numbers))), revision
            entries += numbers
            next_number += len(numbers)
        elif operation[0] == "squash":
            members[operation[1]] = (next_number, entries[:2])
            entries[:2] = [next_number]
            next_number += 1
        else:
            summary, held = members[operation[1]]
            at = entries.index(summary)
            entries[at : at + 1] = held
    return entries


class TestSeveralInstances:
    async def test_three_instances_behind_haproxy_race_and_agree_with_the_model(
        self, pg_cluster: Cluster, tmp_path: Path
    ) -> None:
        dsn = pg_cluster.create_database()
        race = Race()
        acked = Acknowledged()
        own = [LoadClient(index, acked, calls=OWN_CALLS) for index in range(OWN)]
        winners: list[list[str]] = []
        async with cluster_of_instances(dsn, tmp_path) as (url, _):
            clients = [Client(url) for _ in range(RACERS)]
            async with AsyncExitStack() as stack:
                for client in clients:
                    await stack.enter_async_context(client)
                async with anyio.create_task_group() as group:
                    for loader in own:
                        group.start_soon(loader.run, url)
                    await run_races(clients, race, winners)
            assert idle_in_transaction(dsn) == 0
        # Exactly one winner for every squash and restore raced on one revision.
        assert len(winners) == ROUNDS + ROUNDS // 3
        for outcome in winners:
            assert len([o for o in outcome if o != "stale"]) == 1, outcome
            assert outcome.count("stale") == RACERS - 1, outcome
        # Contiguous revisions, each acknowledged once; the model gives the stored thread.
        with SyncPg(dsn) as conn:
            revision, live = conn.execute(
                "select revision, live_count from sessions where id = ?", (race.session,)
            ).fetchone() or (0, 0)
            stored = [
                number
                for (number,) in conn.execute(
                    "select number from messages where session_id = ? and live = 1 order by ord",
                    (race.session,),
                )
            ]
        assert sorted(race.done) == list(range(1, revision + 1))
        assert stored == replay(race.done)
        assert live == len(stored)
        acked.merge(race.acked)
        check_database(dsn)
        check_acknowledged(dsn, acked)

    async def test_a_killed_instance_loses_nothing_acknowledged(
        self, pg_cluster: Cluster, tmp_path: Path
    ) -> None:
        dsn = pg_cluster.create_database()
        acked = Acknowledged()
        failed = [0]
        async with cluster_of_instances(dsn, tmp_path) as (url, processes):
            async with anyio.create_task_group() as group:
                for index in range(16):
                    group.start_soon(writer, url, index, acked, failed)
                # Counted, not timed: as many writes as the machine's speed allows in a second
                # or so, loaded or not.
                await acknowledged(acked, KILL_AFTER)
                processes[1].kill()  # SIGKILL, in the middle of writes
                # The others go on through the two instances left.
                await acknowledged(acked, len(acked.messages) + KILL_AFTER)
                group.cancel_scope.cancel()
            with anyio.fail_after(30):  # the killed instance's transactions end with it
                while idle_in_transaction(dsn):  # noqa: ASYNC110 - polling another process
                    await anyio.sleep(0.1)
        assert acked.messages
        assert failed[0] < 1000, "the clients could not go on after the kill"
        check_database(dsn)
        check_acknowledged(dsn, acked)


async def acknowledged(acked: Acknowledged, count: int) -> None:
    """Return once `count` messages are acknowledged (the writers run meanwhile)."""
    with anyio.fail_after(60):
        while len(acked.messages) < count:  # noqa: ASYNC110 - the writers are other tasks
            await anyio.sleep(0.05)


async def run_races(clients: list[Client], race: Race, winners: list[list[str]]) -> None:
    """Start together (get-or-create), then ROUNDS rounds: all record, all squash on one
    revision, every third round all restore the squash just made on one revision."""
    async with anyio.create_task_group() as group:
        for client in clients:
            group.start_soon(start_racing, client, race)
    for round_ in range(ROUNDS):
        async with anyio.create_task_group() as group:
            for index, client in enumerate(clients):
                group.start_soon(round_of, index, round_, client, race)
        revision = max(race.done)
        outcome: list[str] = []
        async with anyio.create_task_group() as group:
            for k, client in enumerate(clients):
                group.start_soon(race_squash, client, race, k, revision, outcome)
        winners.append(outcome)
        if round_ % 3 == 2:
            (won,) = [o for o in outcome if o.startswith("won")]
            n = int(won.removeprefix("won SQ."))
            outcome = []
            async with anyio.create_task_group() as group:
                for client in clients:
                    group.start_soon(race_restore, client, race, n, revision + 1, outcome)
            winners.append(outcome)


async def start_racing(client: Client, race: Race) -> None:
    started = structured(
        await client.call_tool(
            "frs_session",
            {"action": "start", "title": "race", "interface": "race", "conversation": "one"},
        )
    )
    race.session = race.session or started["session_id"]
    assert started["session_id"] == race.session, "get-or-create made two sessions"


async def writer(url: str, index: int, acked: Acknowledged, failed: list[int]) -> None:
    """Record into its own session until cancelled; a call that fails (its instance died under
    it) is neither acknowledged nor retried; a new connection goes on."""
    rng = random.Random(index)
    session = ""
    sequence = 0
    while True:
        try:
            async with Client(url) as client:
                if not session:
                    started = structured(
                        await client.call_tool(
                            "frs_session",
                            {"action": "start", "title": f"w{index}", "interface": "kill",
                             "conversation": str(index)},
                        )
                    )  # fmt: skip
                    session = started["session_id"]
                while True:
                    contents = [f"w{index} s{sequence + k}" for k in range(rng.randint(1, 3))]
                    sequence += len(contents)
                    done = structured(
                        await client.call_tool(
                            "frs_record",
                            {"messages": [{"role": "user", "content": t} for t in contents],
                             "session_id": session},
                        )
                    )  # fmt: skip
                    for number, text in zip(done["numbers"], contents, strict=True):
                        acked.messages[(session, number)] = text
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            failed[0] += 1
            await anyio.sleep(0.05)


def test_the_readme_shows_the_haproxy_configuration_this_test_runs() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert config(8765, [8801, 8802, 8803]).rstrip("\n") in readme
