"""The PostgreSQL database: a pool of asyncpg connections, transactions and snapshots.

A transaction runs at READ COMMITTED and locks the row of every session it reads through a
finder (`storage.postgres.writes`), so writes to one session are serialized across every
instance on the database, while other sessions' writes go on. Within this process one
transaction runs at a time, as with SQLite: the port promises that no other writer runs until
it commits. A snapshot is a REPEATABLE READ, READ ONLY transaction: its first read fixes the
state it sees. Commit and rollback are shielded from cancellation, and a connection whose
rollback failed is closed rather than returned to the pool, so a cancelled call never leaves
a connection idle in a transaction.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio

from frs.errors import (
    SearchTooSlow,
    StoreConflict,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
)
from storage.postgres.indexer import SearchIndexer
from storage.postgres.schema import current_version, migrate
from storage.postgres.text import decode_text, encode_text

log = logging.getLogger(__name__)

DEFAULT_POOL = 10
CONNECT_TIMEOUT = 10.0


def is_postgres(database: str) -> bool:
    """Whether `--db` names a PostgreSQL server (a postgresql:// or postgres:// URL)."""
    return database.startswith(("postgresql://", "postgres://"))


def pool_size() -> int:
    """Connections per instance: $FRS_DB_POOL, else 10."""
    raw = os.environ.get("FRS_DB_POOL", "")
    try:
        return max(2, int(raw)) if raw else DEFAULT_POOL
    except ValueError:
        raise ValueError(
            f"FRS_DB_POOL={raw!r} is not a number; give a whole number like 10."
        ) from None


def store_error(error: BaseException) -> StoreError:
    """The domain's word for what PostgreSQL (or the way to it) said, by SQLSTATE; the
    message stays the engine's own."""
    state = str(getattr(error, "sqlstate", "") or "")
    text = str(error) or type(error).__name__
    if state == "25006":  # read_only_sql_transaction: a hot standby
        return StoreReadOnly(text)
    if state in ("53100", "54000"):  # disk_full, program_limit_exceeded
        return StoreFull(text)
    if state.startswith("23") or state in ("40001", "40P01"):  # integrity; serialization
        return StoreConflict(text)
    # Class 08 (connection), 57P (shutdown, cancel), 53300 (too many connections), a socket
    # that closed under us, a timeout.
    return StoreUnavailable(text)


def _engine_errors() -> tuple[type[BaseException], ...]:
    import asyncpg

    return (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)


class PgDatabase:
    """A pool opened by `open_postgres`; `transaction()` to write, `snapshot()` to read."""

    def __init__(self, dsn: str, pool: Any) -> None:
        self.path = dsn
        self.pool = pool
        #: Told of every committed write, to index what it queued for search after it
        #: (`open_postgres` runs it; None: nobody indexes here, and search scans the queue).
        self.indexer: SearchIndexer | None = None
        self._write_lock = anyio.Lock()
        self._errors = _engine_errors()
        # Searches take at most a quarter of the pool, so however many run, the other reads
        # and the writes always find a connection.
        self._search_slots = anyio.Semaphore(max(1, pool.get_max_size() // 4))

    @asynccontextmanager
    async def _connection(self, begin: str) -> AsyncIterator[Any]:
        try:
            conn = await self.pool.acquire(timeout=CONNECT_TIMEOUT)
        except TimeoutError:
            raise StoreUnavailable(
                f"no connection to PostgreSQL came free within {CONNECT_TIMEOUT:.0f} s (the pool"
                f" holds {self.pool.get_max_size()}; raise FRS_DB_POOL, or check the server)"
            ) from None
        except self._errors as exc:
            raise store_error(exc) from exc
        clean = False
        try:
            await conn.execute(begin)
            yield conn
            with anyio.CancelScope(shield=True):
                await conn.execute("commit")
            clean = True
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                clean = await _rollback(conn)
            if isinstance(exc, self._errors):
                raise store_error(exc) from exc
            raise
        finally:
            with anyio.CancelScope(shield=True):
                if clean:
                    await self.pool.release(conn)
                else:
                    conn.terminate()
                    await self.pool.release(conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        """BEGIN … COMMIT at READ COMMITTED, or ROLLBACK on any error or cancellation."""
        async with self._write_lock, self._connection("begin isolation level read committed") as c:
            yield c
        if self.indexer is not None:
            self.indexer.wrote()

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Any]:
        """A read-only transaction whose reads all see the state of its first one."""
        async with self._connection("begin isolation level repeatable read read only") as c:
            yield c

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[Any]:
        """A snapshot for a search, within the searches' share of the pool, its statements
        cancelled by the server after `seconds` (`SearchTooSlow`)."""
        begin = "begin isolation level repeatable read read only"
        async with self._search_slots, self._connection(begin) as conn:
            await conn.execute(f"set local statement_timeout = {max(1, int(seconds * 1000))}")
            try:
                yield conn
            except self._errors as exc:
                if getattr(exc, "sqlstate", "") == "57014":  # query_canceled
                    raise SearchTooSlow(seconds) from exc
                raise

    async def fetch(self, sql: str, *params: Any) -> list[Any]:
        """The rows of one statement outside any transaction (it reads one committed state
        by itself): one round trip instead of the three of a snapshot."""
        try:
            conn = await self.pool.acquire(timeout=CONNECT_TIMEOUT)
        except TimeoutError:
            raise StoreUnavailable(
                f"no connection to PostgreSQL came free within {CONNECT_TIMEOUT:.0f} s (the pool"
                f" holds {self.pool.get_max_size()}; raise FRS_DB_POOL, or check the server)"
            ) from None
        except self._errors as exc:
            raise store_error(exc) from exc
        try:
            return list(await conn.fetch(sql, *params))
        except self._errors as exc:
            raise store_error(exc) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await self.pool.release(conn)

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.pool.close()


async def _rollback(conn: Any) -> bool:
    """Roll back; False if the connection is unusable (it will be closed, not reused)."""
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            await conn.execute("rollback")
    except Exception:
        return False
    return True


async def _setup(conn: Any) -> None:
    """Each new pooled connection: text through the escape above."""
    await conn.set_type_codec(
        "text", schema="pg_catalog", encoder=encode_text, decoder=decode_text, format="text"
    )


async def _keep(conn: Any) -> None:
    """What a connection needs on its way back to the pool: nothing more than asyncpg's own
    rollback of an open transaction. Its default reset query (RESET ALL, UNLISTEN *, …) is a
    round trip per call, for session state this store never sets."""


def install_command(prefix: str, source: str | None, editable: bool) -> str:
    """The command that adds the `postgres` extra to the environment at `prefix`, installed
    from the clone at `source` (None: unknown). frs-mcp is not on the package index yet, so
    `pip install 'frs-mcp[postgres]'` finds nothing: each route installs the clone again."""
    parts = Path(prefix).parts
    if "uv" in parts and "tools" in parts:
        command = "uv tool install --reinstall '.[postgres]'"
    elif "pipx" in parts and "venvs" in parts:
        command = "pipx install --force '.[postgres]'"
    else:
        command = f"{Path(prefix) / 'bin' / 'pip'} install {'-e ' if editable else ''}'.[postgres]'"
    where = f"cd {source} && " if source else "in the frs-mcp clone, "
    return where + command


def installed_from() -> tuple[str | None, bool]:
    """The folder this distribution was installed from and whether editably (PEP 610's
    direct_url.json); (None, False) when that is unknown."""
    try:
        direct = json.loads(metadata.distribution("frs-mcp").read_text("direct_url.json") or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return None, False
    url = urlsplit(str(direct.get("url", "")))
    source = unquote(url.path) if url.scheme == "file" and url.path else None
    return source, bool(direct.get("dir_info", {}).get("editable"))


def _import_asyncpg() -> Any:
    try:
        import asyncpg
    except ImportError:
        install = install_command(sys.prefix, *installed_from())
        raise StoreUnavailable(
            "the database is a PostgreSQL server, but its driver (asyncpg, the extra postgres) "
            f"is not installed where frs-mcp runs; add it: {install}"
        ) from None
    return asyncpg


@asynccontextmanager
async def open_postgres(
    dsn: str, size: int | None = None, migrate_schema: bool = True
) -> AsyncIterator[PgDatabase]:
    """Open a pool on the server `dsn` names and migrate its schema, and index for search
    after the writes (`storage.postgres.indexer`); close it on exit. With
    `migrate_schema=False` (the read-only viewer) a schema that is not current is refused,
    and nothing is indexed."""
    db = await connect_postgres(dsn, size, migrate_schema)
    try:
        if not migrate_schema:
            yield db
            return
        db.indexer = SearchIndexer(db)
        async with beside(db.indexer.run):
            yield db
    finally:
        db.indexer = None
        await db.close()


@asynccontextmanager
async def beside(task: Callable[[], Coroutine[Any, Any, object]]) -> AsyncIterator[None]:
    """Run `task` while inside, cancelled on exit. What the body raises comes out as it is (a
    task group would wrap it in an ExceptionGroup, which the callers do not expect)."""
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(task)
        try:
            yield
        except Exception as exc:
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def connect_postgres(
    dsn: str, size: int | None = None, migrate_schema: bool = True
) -> PgDatabase:
    """`open_postgres` for a caller that closes the pool itself (`PgDatabase.close`)."""
    asyncpg = _import_asyncpg()
    size = size or pool_size()
    refused: tuple[type[BaseException], ...] = (*_engine_errors(), ValueError)  # a bad URL
    try:
        pool = await asyncpg.create_pool(
            dsn,
            min_size=1,
            max_size=size,
            timeout=CONNECT_TIMEOUT,
            command_timeout=None,
            init=_setup,
            reset=_keep,
        )
    except refused as exc:
        raise StoreUnavailable(
            f"cannot reach the PostgreSQL server ({scrub(str(exc), dsn)}). Check that it runs "
            "and that the connection string (host, port, user, password, database) is right."
        ) from exc
    try:
        try:
            async with pool.acquire() as conn:
                version = await (migrate(conn) if migrate_schema else current_version(conn))
        except _engine_errors() as exc:
            raise store_error(exc) from exc
        log.info("database %s ready (PostgreSQL schema version %d)", redact(dsn), version)
        return PgDatabase(dsn, pool)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await pool.close()
        raise


_SECRET_PARAMS = re.compile(r"(?i)((?:^|[?&\s])(?:ssl)?password=)('[^']*'|[^&\s]*)")


def redact(dsn: str) -> str:
    """The database as it may be shown (messages, logs, banners): a connection string without
    its secrets (the password of `user:password@`, a `password=` or `sslpassword=` parameter,
    in URL or keyword form), anything else (a SQLite path) as given. Every line that names
    the database goes through it."""
    scheme, sep, rest = dsn.partition("://")
    if sep:
        authority, slash, tail = rest.partition("/")
        userinfo, at, host = authority.rpartition("@")
        if at and ":" in userinfo:
            authority = f"{userinfo.split(':', 1)[0]}:***@{host}"
        dsn = f"{scheme}{sep}{authority}{slash}{tail}"
    return _SECRET_PARAMS.sub(r"\1***", dsn)


def scrub(text: str, dsn: str) -> str:
    """`text` (a driver's error) with every secret of `dsn` replaced by `***`."""
    secrets = [m[2].strip("'") for m in _SECRET_PARAMS.finditer(dsn)]
    _, sep, rest = dsn.partition("://")
    userinfo, at, _ = rest.partition("/")[0].rpartition("@")
    if sep and at and ":" in userinfo:
        secrets.append(userinfo.split(":", 1)[1])
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***").replace(unquote(secret), "***")
    return redact(text)
