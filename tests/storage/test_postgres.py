"""What the PostgreSQL store adds to the contract: several instances (pools) on one database.

Each "instance" here is its own pool (`open_postgres`) with its own `frs.Env`, as
three server processes would have; they race migrations, a get-or-create by conversation and
squashes with one `expected_revision`. Also: a cancelled call leaves no connection idle in a
transaction, and an unreachable server or a missing database is one clear `StoreUnavailable`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import asyncpg
import pytest

from frs import AskedRange, Env, pages, recording, sessions, squashes
from frs.errors import StaleRevision, StoreReadOnly, StoreUnavailable
from frs.model import NewMessage, Scope, SessionId, ToolCall
from storage import SchemaTooNew
from storage.postgres import MIGRATIONS, PgStore, connect_postgres, open_postgres
from tests.haproxy import find_haproxy
from tests.pg import Cluster, PostgresMissing, bindir

INSTANCES = 8


@asynccontextmanager
async def instances(dsn: str, count: int) -> AsyncIterator[list[Env]]:
    """`count` services, each on its own pool, opened at once (so they race to migrate)."""
    async with AsyncExitStack() as stack:
        stores: list[PgStore] = []

        async def open_one() -> None:
            # Each opened in a task of its own, closed by this one: a pool without the task
            # that indexes for search (`open_postgres` runs it), searching all the same.
            db = await connect_postgres(dsn, size=3)
            stack.push_async_callback(db.close)
            stores.append(PgStore(db))

        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(open_one)
        yield [Env(store, scope=Scope(client="test")) for store in stores]


async def fetch(dsn: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


class TestSeveralInstances:
    async def test_eight_instances_starting_at_once_apply_each_migration_exactly_once(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with instances(dsn, INSTANCES) as services:
            assert len(services) == INSTANCES
            started = await sessions.start(services[0], "one")
            assert (await sessions.use(services[-1], started.session.id)).title == "one"
        rows = await fetch(dsn, "select version from schema_migrations order by version")
        assert [row[0] for row in rows] == list(range(1, len(MIGRATIONS) + 1))

    async def test_racing_get_or_create_of_one_conversation_makes_one_session(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with instances(dsn, 4) as services:
            made: list[tuple[SessionId, bool]] = []

            async def start(env: Env) -> None:
                for _ in range(3):
                    got = await sessions.start(env, "t", interface="chat", conversation="c1")
                    made.append((got.session.id, got.created))

            async with anyio.create_task_group() as group:
                for env in services:
                    group.start_soon(start, env)
        assert len({sid for sid, _ in made}) == 1
        assert [created for _, created in made].count(True) == 1
        rows = await fetch(dsn, "select count(*) from sessions")
        assert rows[0][0] == 1

    async def test_squashes_racing_on_one_expected_revision_have_exactly_one_winner(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with instances(dsn, 4) as services:
            started = await sessions.start(services[0], "race")
            sid = started.session.id
            await recording.record(
                services[0], [NewMessage("user", f"message {i}") for i in range(12)], sid
            )
            session = await sessions.get_session(services[0], sid)
            revision = session.revision
            outcomes: list[str] = []

            async def squash(env: Env, k: int) -> None:
                try:
                    await squashes.compress_range(env, 1, 3, f"summary {k}", None, sid, revision)
                    outcomes.append("won")
                except StaleRevision:
                    outcomes.append("stale")

            async with anyio.create_task_group() as group:
                for k, env in enumerate(services * 2):
                    group.start_soon(squash, env, k)
            after = await sessions.get_session(services[1], sid)
            log = await sessions.squash_log(services[2], sid)
        assert sorted(outcomes) == ["stale"] * 7 + ["won"]
        assert after.revision == revision + 1
        assert len(log.squashes) == 1
        assert after.live_count == 10

    async def test_a_cancelled_call_leaves_no_connection_idle_in_a_transaction(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with instances(dsn, 2) as services:
            sid = (await sessions.start(services[0], "cancel")).session.id
            for delay in (0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02):
                for env in services:
                    with anyio.move_on_after(delay):
                        await recording.record(env, [NewMessage("user", "x" * 5000)] * 50, sid)
            idle = await fetch(
                dsn,
                "select count(*) from pg_stat_activity where datname = current_database()"
                " and state like 'idle in transaction%'",
            )
            assert idle[0][0] == 0
            session = await sessions.get_session(services[1], sid)
            thread = await sessions.live_thread(services[0], sid)
        # Each record either committed whole (50 messages) or not at all.
        assert session.live_count == len(thread.entries)
        assert len(thread.entries) % 50 == 0
        assert session.revision == len(thread.entries) // 50


class TestClearErrors:
    async def test_an_unreachable_server_is_one_store_unavailable_naming_what_to_check(
        self, pg_cluster: Cluster
    ) -> None:
        with pytest.raises(StoreUnavailable) as caught:
            async with open_postgres("postgresql://nobody:secret@127.0.0.1:1/none", size=2):
                pass
        message = str(caught.value)
        assert message.startswith("cannot reach the PostgreSQL server (")
        assert "secret" not in message
        assert "Check that it runs" in message

    async def test_a_missing_database_is_one_store_unavailable(self, pg_cluster: Cluster) -> None:
        with pytest.raises(StoreUnavailable, match="does not exist"):
            async with open_postgres(pg_cluster.dsn("no_such_database"), size=2):
                pass


class TestText:
    async def test_nul_and_the_escape_character_round_trip_and_still_match(
        self, pg_cluster: Cluster
    ) -> None:
        # PostgreSQL text cannot hold U+0000; the store escapes it (storage/postgres/database.py).
        dsn = pg_cluster.create_database()
        odd = ["a\x00b", "\ue000", "\ue000\ue001", "\x00\ue000\x00", "plain"]
        async with instances(dsn, 1) as (env,):
            started = await sessions.start(
                env, "t", interface="chat\x00x", conversation="\ue000\x00"
            )
            sid = started.session.id
            await recording.record(
                env, [NewMessage("user", text, run_id=text) for text in odd], sid
            )
            # A call id holding U+0000 still pairs its result with its call (latest_calls).
            call = ToolCall("c\x00\ue000", "bash", "{}")
            await recording.record(env, [NewMessage("assistant", "run", tool_calls=(call,))], sid)
            await recording.record(
                env, [NewMessage("tool", "ok", name="bash", tool_call_id=call.id)], sid
            )
            thread = await sessions.live_thread(env, sid)
            again = await sessions.start(env, "t", interface="chat\x00x", conversation="\ue000\x00")
        assert [m.content for m in thread.entries[: len(odd)]] == odd
        assert [m.run_id for m in thread.entries[: len(odd)]] == odd
        asked, answered = thread.entries[-2:]
        assert asked.tool_calls[0].id == "c\x00\ue000"
        assert answered.tool_call_id == "c\x00\ue000"
        assert answered.answers == asked.number
        assert again.session.id == sid
        assert not again.created

    async def test_a_read_only_database_opens_reads_and_refuses_writes_as_read_only(
        self, pg_cluster: Cluster
    ) -> None:
        # What a hot standby does: the schema is there, every write is refused (SQLSTATE 25006).
        dsn = pg_cluster.create_database()
        async with instances(dsn, 1) as (env,):
            sid = (await sessions.start(env, "before")).session.id
        pg_cluster.psql(
            f"alter database {pg_cluster.name_of(dsn)} set default_transaction_read_only = on"
        )
        async with instances(dsn, 1) as (env,):
            assert (await sessions.get_session(env, sid)).title == "before"
            with pytest.raises(StoreReadOnly, match="read-only transaction"):
                await recording.record(env, [NewMessage("user", "x")], sid)

    async def test_a_schema_from_a_newer_frs_mcp_is_refused_and_left_alone(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with instances(dsn, 1):
            pass
        pg_cluster.psql(
            "insert into schema_migrations (version) values (999)", pg_cluster.name_of(dsn)
        )
        with pytest.raises(SchemaTooNew, match="schema version 999"):
            async with open_postgres(dsn, size=2):
                pass


class TestBackfill:
    async def test_squashes_made_before_2_get_their_members_starts_and_length(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        async with instances(dsn, 1) as (env,):
            await recording.record(
                env, [NewMessage("user", f"line {i}\n[not a header]") for i in range(9)]
            )
            await squashes.compress_ranges(env, [AskedRange(4, 6, "inner")])
            await squashes.compress_ranges(env, [AskedRange(1, 5, "outer")])
        layout = "select n, seq, at from squash_members order by n, seq"
        made = [tuple(r) for r in await fetch(dsn, layout)]
        lengths = [tuple(r) for r in await fetch(dsn, "select n, chars from squashes order by n")]
        # The database as version 1 left it: neither column, nor the index (nor 3's raw items,
        # nor 4's gateway calls, nor 6's automatic squashes and 7's compactions, nor 8's
        # search tables, nor 9's gateway turns).
        pg_cluster.psql(
            "drop index squash_members_at; alter table squash_members drop column at;"
            " alter table squashes drop column chars; alter table messages drop column raw;"
            " drop table gateway_calls; alter table squashes drop column automatic;"
            " drop table compactions; drop table gateway_turns;"
            " drop trigger messages_searched on messages;"
            " drop trigger messages_unsearched on messages;"
            " drop table search_texts; drop table search_pending;"
            " drop function frs_search_pending(); drop function frs_search_forget();"
            " delete from schema_migrations where version >= 2",
            pg_cluster.name_of(dsn),
        )
        async with instances(dsn, 1) as (env,):
            page = await pages.get_alias(env, "SQ.2", offset=5, max_chars=40)
            whole = await pages.get_alias(env, "SQ.2", max_chars=100_000)
        assert [tuple(r) for r in await fetch(dsn, layout)] == made
        assert [
            tuple(r) for r in await fetch(dsn, "select n, chars from squashes order by n")
        ] == lengths
        assert page.text == whole.text[5:45]
        assert lengths[1] == (2, len(whole.text))


class TestMissingTools:
    """A machine without PostgreSQL or haproxy fails these suites with the install command."""

    def test_no_postgresql_names_the_package_to_install(self, tmp_path: Path) -> None:
        with pytest.raises(PostgresMissing, match=r"apt-get install -y postgresql"):
            bindir(str(tmp_path / "*" / "bin" / "initdb"), path=str(tmp_path))

    def test_no_haproxy_names_the_package_to_install(self, tmp_path: Path) -> None:
        with pytest.raises(RuntimeError, match=r"apt-get install -y haproxy"):
            find_haproxy(path=str(tmp_path), places=())
