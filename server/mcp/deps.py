"""What every handler needs, opened once per process: the database, the `frs.Env` over it
and the listeners for changes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from mcp.server.mcpserver import Context

from frs import Env
from frs.ports import Store
from server.mcp.events import MAX_STREAMS_PER_TENANT, TenantEvents
from server.mcp.pool import PoolShare, pool_share
from server.mcp.scopes import current_scope, scope_of
from server.settings import Settings
from server.stores import Opened, env_over, open_store
from storage import Database
from storage.postgres import Notices, PgDatabase


@dataclass(frozen=True, slots=True)
class Deps:
    """Reached in handlers as `ctx.request_context.lifespan_context`."""

    env: Env  # the process's: `env_of` narrows it to each caller's scope
    db: Database | PgDatabase
    settings: Settings
    # Who listens for changes (`server.mcp.live`): shared, like the database, by every client
    # this process serves.
    events: TenantEvents = field(default_factory=TenantEvents)


DepsContext = Context[Deps]


def env_of(ctx: DepsContext) -> Env:
    """The `Env` a handler's request runs against, in the caller's scope: its tenant's
    sessions only, its own current session (`server.mcp.scopes`)."""
    rc = ctx.request_context
    deps = rc.lifespan_context
    scope = current_scope()
    if scope is None:  # a handler reached without the middleware: the scope without roots
        settings = deps.settings
        scope = scope_of(rc, settings.scope, None, settings.conversation)
    return deps.env.for_scope(scope)


@asynccontextmanager
async def open_deps(
    settings: Settings,
    listens: int = MAX_STREAMS_PER_TENANT,
    listens_from: str = "",
    tenants: int = 1,
) -> AsyncIterator[Deps]:
    """Open the database (PostgreSQL for a postgresql:// URL, else a SQLite file), its `Env`,
    and the task that fans changes out to listeners (`listens` open listen streams
    per tenant, a share `listens_from` names; on PostgreSQL, with the changes made through the
    other instances on the database); close them on exit. With several `tenants`, each holds at
    most its share of PostgreSQL's pool (`server.mcp.pool.PoolShare`)."""
    events = TenantEvents(listens, listens_from)
    async with open_store(settings) as opened:
        # On PostgreSQL every instance on the database hears the others' changes.
        relay = Notices(opened.db) if isinstance(opened.db, PgDatabase) else None
        async with events.running(relay):
            yield _deps(opened, settings, events, tenants)


def _deps(opened: Opened, settings: Settings, events: TenantEvents, tenants: int) -> Deps:
    store: Store = opened.store
    if tenants > 1 and isinstance(opened.db, PgDatabase):
        size = opened.db.pool.get_max_size()
        store = PoolShare(store, pool_share(size, tenants), size)
    return Deps(env_over(store, settings, opened.files), opened.db, settings, events)
