"""Each tenant's share of PostgreSQL's pool (issue 23): one tenant's slow store calls once held
the whole pool and another tenant waited for it (12 searches held a pool of 10, another
tenant's view waited 7.9 s). With `server.mcp.pool.PoolShare` a tenant holds at most its share
and waits for its own calls; the rest of the pool stays free for the others.

On the run's real PostgreSQL cluster: a pool of 4 shared by two tenants, 2 each. The slow calls
are snapshots held open until the test lets them go, so nothing is timed.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from frs.model import LOCAL_TENANT
from server.mcp.deps import open_deps
from server.mcp.pool import PoolShare, calling_as, pool_share
from server.settings import Settings
from storage.postgres import PgStore, open_postgres
from tests.pg import Cluster

pytestmark = pytest.mark.slow

POOL = 4


class TestPoolShares:
    def test_each_tenant_gets_the_pool_less_an_eighth_divided(self) -> None:
        assert pool_share(10, 1) == 9
        assert pool_share(10, 2) == 4
        assert pool_share(4, 2) == 2
        assert pool_share(4, 9) == 1  # more tenants than connections: one each

    async def test_another_tenants_call_completes_while_one_holds_its_whole_share(
        self, pg_cluster: Cluster
    ) -> None:
        """Alice makes five slow calls at once on a pool of four: two hold connections (her
        share), three wait for hers; bob's call meanwhile gets a connection and completes.
        Without the shares her calls took all four and bob waited for one."""
        async with open_postgres(pg_cluster.create_database(), size=POOL) as pg:
            shared = PoolShare(PgStore(pg), pool_share(POOL, 2), POOL)
            holding, most, done = 0, 0, 0
            at_share, gate = anyio.Event(), anyio.Event()

            async def slow_call() -> None:
                nonlocal holding, most, done
                with calling_as("alice"):
                    async with shared.snapshot() as reader:
                        await reader.count_sessions("alice")
                        holding += 1
                        most = max(most, holding)
                        if holding == 2:
                            at_share.set()
                        await gate.wait()
                        holding -= 1
                done += 1

            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(slow_call)
                try:
                    await at_share.wait()
                    with calling_as("bob"):
                        async with shared.snapshot() as reader:
                            bobs = await reader.count_sessions("bob")
                    held_meanwhile = holding
                finally:
                    gate.set()
        assert bobs == 0
        assert held_meanwhile == 2  # alice's share, still held while bob read
        assert most == 2  # she never held more
        assert done == 5  # and each of her calls ran in turn

    async def test_a_call_nested_in_another_of_the_same_task_uses_its_slot(
        self, pg_cluster: Cluster
    ) -> None:
        """With a share of one, a snapshot opened inside a transaction does not wait for the
        slot its own call holds (it would wait for ever)."""
        async with open_postgres(pg_cluster.create_database(), size=POOL) as pg:
            shared = PoolShare(PgStore(pg), 1, POOL)
            with calling_as("alice"), anyio.fail_after(30):  # a bound for a broken share
                async with shared.transaction(), shared.snapshot() as reader:
                    count = await reader.count_sessions("alice")
        assert count == 0

    async def test_the_server_shares_its_pool_among_its_tenants(
        self, pg_cluster: Cluster, tmp_path: Path
    ) -> None:
        """Serving two tenants on PostgreSQL, the service's store is the shared one: 4 of the
        10 connections each; serving one, the pool as it is."""
        settings = Settings(database=pg_cluster.create_database(), log_level="WARNING")
        async with open_deps(settings, tenants=2) as deps:
            store = deps.env.store
            assert isinstance(store, PoolShare)
            assert (store.limit, store.pool) == (4, 10)
            async with store.snapshot() as reader:  # the local tenant's, outside any request
                assert await reader.count_sessions(LOCAL_TENANT) == 0
        async with open_deps(settings) as deps:
            assert isinstance(deps.env.store, PgStore)
