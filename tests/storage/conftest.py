"""Backends the storage contract (contract.py) runs against: `open_store` opens this test's store.

Adding a backend is one more entry in `BACKENDS`: a class built from the test's `tmp_path` that
opens the store (`async with open_store() as store:`, in the test body, so the test's own task
opens and closes it) and reports its schema for the migration tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

# Before the import below: pytest explains a failed assert only in modules it rewrites, and it
# rewrites test modules and conftests, not a module they import.
pytest.register_assert_rewrite("tests.storage.contract")

from frs.ports import Store  # noqa: E402
from storage import MIGRATIONS, SqliteStore, open_database  # noqa: E402
from storage.postgres import MIGRATIONS as PG_MIGRATIONS  # noqa: E402
from storage.postgres import PgStore, open_postgres  # noqa: E402
from tests.pg import Cluster  # noqa: E402
from tests.storage.contract import OpenStore, Schema  # noqa: E402


class SqliteBackend:
    """A SQLite file in the test's folder, opened (and migrated) by `storage.open_database`."""

    newest_version = len(MIGRATIONS)

    def __init__(self, folder: Path) -> None:
        self.path = folder / "contract.db"

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Store]:
        async with open_database(self.path) as db:
            yield SqliteStore(db)

    async def schema(self) -> Schema:
        async with aiosqlite.connect(self.path) as conn:
            version = await conn.execute_fetchall("pragma user_version")
            objects = await conn.execute_fetchall(
                "select type, name, tbl_name, sql from sqlite_master order by type, name"
            )
        return Schema(int(next(iter(version))[0]), tuple(repr(tuple(row)) for row in objects))


class PostgresBackend:
    """A new database in the run's throwaway cluster (`pg_cluster`), opened (and migrated) by
    `storage.postgres.open_postgres`."""

    newest_version = len(PG_MIGRATIONS)

    def __init__(self, cluster: Cluster) -> None:
        self.dsn = cluster.create_database()

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Store]:
        async with open_postgres(self.dsn, size=4) as db:
            yield PgStore(db)

    async def schema(self) -> Schema:
        conn = await asyncpg.connect(self.dsn)
        try:
            version = await conn.fetchval("select coalesce(max(version), 0) from schema_migrations")
            objects = await conn.fetch(
                "select c.relkind::text, c.relname::text, pg_get_indexdef(c.oid)"
                " from pg_class c join pg_namespace n on n.oid = c.relnamespace"
                " where n.nspname = 'public' order by 1, 2"
            )
        finally:
            await conn.close()
        return Schema(int(version), tuple(repr(tuple(row)) for row in objects))


BACKENDS: dict[str, Callable[[Path, pytest.FixtureRequest], OpenStore]] = {
    "sqlite": lambda folder, _: SqliteBackend(folder),
    "postgres": lambda _, request: PostgresBackend(request.getfixturevalue("pg_cluster")),
}


@pytest.fixture(params=sorted(BACKENDS))
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> OpenStore:
    """This test's store, on each backend in turn (see `contract.OpenStore`)."""
    return BACKENDS[request.param](tmp_path, request)
