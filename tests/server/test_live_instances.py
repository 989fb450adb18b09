"""Live updates across instances (issue 32): two real `frs-mcp` processes on one PostgreSQL
database, clients of two tenants. A client listening on instance A hears a change another
client of its tenant makes through instance B, in both protocol eras, exactly as if it had been
made on A; a client of the other tenant following the same session id on A hears nothing. An
instance whose listening connection is lost listens again and hears what is made after.

The instances tell each other through PostgreSQL's notifications (`storage.postgres.notices`);
the merging and the caps are those of one instance (`server.mcp.events`), tested there.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from tests.clients.frs_process import FrsProcess, frs_http
from tests.pg import Cluster
from tests.pgsync import SyncPg
from tests.server.test_live import WAIT, Sentinel, call, say, start, updated
from tests.server.test_live_transports import SECRETS, connect, listening

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

HTTP = "streamable-http"
#: How a backend that LISTENs on the channel shows in pg_stat_activity.
LISTENERS = (
    "select pid from pg_stat_activity where datname = current_database() and query like 'LISTEN%'"
)


@pytest.fixture(scope="module")
def database(pg_cluster: Cluster) -> str:
    return pg_cluster.create_database()


@pytest.fixture(scope="module")
def instances(
    database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[FrsProcess, FrsProcess]]:
    """Instances A and B on one database, both tenants on each."""
    home = tmp_path_factory.mktemp("instances")
    tokens = home / "tokens"
    tokens.write_text("".join(f"{name} {secret}\n" for name, secret in SECRETS.items()))
    tokens.chmod(0o600)
    args = ("--transport", HTTP, "--tokens", str(tokens))
    with frs_http(database, *args) as a, frs_http(database, *args) as b:
        yield a, b


def listening_backends(dsn: str) -> set[int]:
    with SyncPg(dsn) as conn:
        return {pid for (pid,) in conn.execute(LISTENERS)}


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_a_listener_on_one_instance_hears_a_write_made_through_another(
    instances: tuple[FrsProcess, FrsProcess], era: str
) -> None:
    a, b = instances
    async with connect(b, HTTP, "alice") as alice, connect(b, HTTP, "bob") as bob:
        sid = await start(alice, "alice's")
        alice_sentinel = Sentinel(alice, await start(alice, "alice's sentinel"))
        bob_sentinel = Sentinel(bob, await start(bob, "bob's sentinel"))
        async with (
            listening(a, HTTP, "alice", era, alice_sentinel, sid) as heard_by_alice,
            # Bob follows alice's session id on A (as if he had guessed it).
            listening(a, HTTP, "bob", era, bob_sentinel, sid) as heard_by_bob,
        ):
            await say(alice, sid, "one " * 20, "two " * 20)
            recorded = updated(sid, "thread", "messages", "anthropic")
            assert await alice_sentinel.heard(heard_by_alice) == recorded
            squash = {"from": 1, "to": 2, "summary": "one, two", "session_id": sid}
            await call(alice, "frs_compress_range", **squash)
            squashed = updated(sid, "thread", "messages", "anthropic", "squashes")
            assert await alice_sentinel.heard(heard_by_alice) == squashed
            await start(alice, "alice's new")
            assert await alice_sentinel.heard(heard_by_alice) == {ResourcesListChanged()}

            assert await bob_sentinel.heard(heard_by_bob) == set()

            await start(bob, "bob's new")  # bob's change reaches bob on A, not alice
            assert await bob_sentinel.heard(heard_by_bob) == {ResourcesListChanged()}
            assert await alice_sentinel.heard(heard_by_alice) == set()


async def test_a_write_on_the_listeners_own_instance_is_told_once(
    instances: tuple[FrsProcess, FrsProcess],
) -> None:
    """Its own notice comes back to the instance that made the change: not told twice."""
    a, _ = instances
    async with connect(a, HTTP, "alice") as alice:
        sid = await start(alice, "mine")
        sentinel = Sentinel(alice, await start(alice, "sentinel"))
        async with listening(a, HTTP, "alice", "2025-11-25", sentinel, sid) as inbox:
            await say(alice, sid, "hello")
            await say(alice, sentinel.session_id, "sentinel")
            heard = []
            with anyio.fail_after(WAIT):
                async for event in inbox:  # in order, none merged (2025: one per notification)
                    if event == ResourceUpdated(uri=sentinel.uri):
                        break
                    heard.append(event)
            assert sorted(heard, key=str) == sorted(
                updated(sid, "thread", "messages", "anthropic"), key=str
            )


async def test_an_instance_that_loses_its_listening_connection_listens_again(
    instances: tuple[FrsProcess, FrsProcess], database: str
) -> None:
    a, b = instances
    before = listening_backends(database)
    assert len(before) == 2  # one per instance
    with SyncPg(database) as conn:
        conn.execute("select pg_terminate_backend(pid) from pg_stat_activity where pid = any(?)",
                     (sorted(before),))  # fmt: skip
    with anyio.fail_after(WAIT):  # both reconnect, each on a new backend
        while len(listening_backends(database) - before) < 2:  # noqa: ASYNC110 - other processes
            await anyio.sleep(0.05)
    async with connect(b, HTTP, "alice") as alice:
        sid = await start(alice, "after the loss")
        sentinel = Sentinel(alice, await start(alice, "sentinel"))
        async with listening(a, HTTP, "alice", "2026-07-28", sentinel, sid) as heard:
            await say(alice, sid, "still heard")
            assert await sentinel.heard(heard) == updated(sid, "thread", "messages", "anthropic")
    assert a.count("lost the connection that hears other instances' changes") == 1
    assert b.count("lost the connection that hears other instances' changes") == 1
