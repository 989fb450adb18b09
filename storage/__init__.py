"""storage: persistence for frs, SQLite (aiosqlite) here and PostgreSQL (asyncpg, the extra
postgres) in `storage.postgres`: schemas, migrations, the stores behind `frs.ports`."""

from storage.db import Database, connect_database, open_database
from storage.files import LocalFiles
from storage.migrations import (
    APPLICATION_ID,
    MIGRATIONS,
    DatabaseRefused,
    ForeignDatabase,
    SchemaTooNew,
    migrate,
)
from storage.stores import SqliteStore

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "Database",
    "DatabaseRefused",
    "ForeignDatabase",
    "LocalFiles",
    "SchemaTooNew",
    "SqliteStore",
    "connect_database",
    "migrate",
    "open_database",
]


# server/origin.py checks this line to tell our package from another of the same name.
__distribution__ = "frs-mcp"
