"""What every handler needs, opened once per process: the database and the service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mcp.server.mcpserver import Context

from frs import ReasoningService
from server.settings import Settings
from storage import Database, LocalFiles, SqliteStore, open_database


@dataclass(frozen=True, slots=True)
class Deps:
    """Reached in handlers as `ctx.request_context.lifespan_context`."""

    service: ReasoningService
    db: Database
    settings: Settings


DepsContext = Context[Deps]


def service(ctx: DepsContext) -> ReasoningService:
    """The service a handler's request runs against."""
    return ctx.request_context.lifespan_context.service


@asynccontextmanager
async def open_deps(settings: Settings) -> AsyncIterator[Deps]:
    """Open the database and the service; close them on exit."""
    files = LocalFiles(settings.allow_roots, settings.database, settings.max_source_bytes)
    async with open_database(settings.database) as db:
        service = ReasoningService(SqliteStore(db), settings.limits(), files=files)
        yield Deps(service, db, settings)
