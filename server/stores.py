"""The store a command opens from its settings, and the `frs.Env` over it: a SQLite file, or a
PostgreSQL server for a postgresql:// URL.

The commands that serve or move sessions open them here: the MCP server (`server.mcp.deps`,
which adds the listeners and the tenants' pool shares), the gateway, `import` and `export`.
The viewer opens its own, read-only (`server.web.command`), and so does `frs-mcp hook`
(`server.cli.hooks.command`), whose process loads nothing it does not need.
Nothing here imports the MCP SDK, so a command that serves no MCP never loads it (a second
or so of every start: `tests/server/test_startup.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio.to_thread

from frs import Env
from frs.model import Scope
from frs.ports import Store
from server.settings import Settings
from storage import Database, LocalFiles, SqliteStore, open_database
from storage.postgres import PgDatabase, PgStore, is_postgres, open_postgres


@dataclass(frozen=True, slots=True)
class Opened:
    """An open database, its store, and the files its sources may read."""

    store: Store
    db: Database | PgDatabase
    files: LocalFiles


@asynccontextmanager
async def open_store(settings: Settings) -> AsyncIterator[Opened]:
    """Open the database `settings.database` names (migrating it); close it on exit."""
    if is_postgres(settings.database):
        files = LocalFiles(settings.allow_roots, None, settings.max_source_bytes)
        async with open_postgres(settings.database) as pg:
            yield Opened(PgStore(pg), pg, files)
        return
    files = LocalFiles(settings.allow_roots, settings.database, settings.max_source_bytes)
    async with open_database(settings.database) as db:
        yield Opened(SqliteStore(db), db, files)


def env_over(
    store: Store, settings: Settings, files: LocalFiles, scope: Scope | None = None
) -> Env:
    """The `Env` over `store` with the settings' limits, in `scope` (default: the settings')."""
    if scope is None:
        scope = Scope(client=settings.scope) if settings.scope else Scope()
    return Env(
        store,
        settings.limits(),
        files=files,
        scope=scope,
        offload=anyio.to_thread.run_sync,  # a large batch's checks and hashes
    )


@asynccontextmanager
async def open_env(settings: Settings) -> AsyncIterator[Env]:
    """The `Env` over the database `settings.database` names, for a command that serves no
    MCP (no listeners to tell of changes); closed on exit."""
    async with open_store(settings) as opened:
        yield env_over(opened.store, settings, opened.files)
