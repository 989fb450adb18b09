"""Shared fixtures: a factory for in-process MCP clients on a fresh SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client

from server import Settings, build_server
from tests.pg import Cluster, start_cluster

Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "frs.db"


@pytest.fixture
def connect(db_path: Path) -> Connect:
    """`async with connect() as client:` inside the test body (a yielding async fixture would
    exit the client's task group from another task)."""

    @asynccontextmanager
    async def _connect(**settings: object) -> AsyncIterator[Client]:
        options = {"database": str(db_path), **settings}
        async with Client(build_server(Settings.model_validate(options))) as client:
            yield client

    return _connect


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the whole run (tests/pg.py)."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """This test's empty database on each backend in turn: a SQLite file in the test's folder,
    or a new database in the run's cluster (its postgresql:// URL); `--db` takes either."""
    if request.param == "sqlite":
        return tmp_path / "frs.db"
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database()
