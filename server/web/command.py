"""`frs-mcp web`: serve the read-only viewer, on 127.0.0.1 by default.

The same rules as the HTTP transports: another address needs a token (`--token`, `FRS_TOKEN`
or `--tokens`, each tenant seeing only its own sessions), and the Host and Origin checks
guard against DNS rebinding on every address.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from starlette.types import ASGIApp

from frs import StoreError
from server.http.guards import BearerGuard, HostGuard
from server.http.hosts import HostPolicy
from server.http.listening import CannotListen, listen
from server.http.serving import Serving, serve
from server.http.sockets import SocketLimits
from server.http.tenants import TokensFileError, tenants_of
from server.mcp.pool import PoolShare, pool_share
from server.web.app import SEARCH_SECONDS, Readable, viewer_of
from server.web.login import CookieLogin
from storage import SchemaTooNew
from storage.postgres import PgStore, is_postgres, open_postgres, redact
from storage.readonly import open_readonly

log = logging.getLogger(__name__)

DEFAULT_WEB_PORT = 8766
POOL = 4  # connections to PostgreSQL: the viewer reads a page at a time
MAX_BODY = 64 * 1024  # bytes: the viewer reads no body but its login form


def configure(p: argparse.ArgumentParser) -> None:
    """The options of `frs-mcp web`; `--db` and `--log-level` come from the main parser."""
    p.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=DEFAULT_WEB_PORT,
        help=f"port (default {DEFAULT_WEB_PORT}; 0 picks a free one)",
    )
    p.add_argument(
        "--search-seconds",
        type=float,
        default=SEARCH_SECONDS,
        help=f"stop a search running longer (default {SEARCH_SECONDS:g} s)",
    )
    p.add_argument(
        "--write-timeout",
        type=float,
        default=SocketLimits().write_timeout,
        metavar="SECONDS",
        help="close a socket whose client has read nothing of a page this long "
        f"(default {SocketLimits().write_timeout:g} s)",
    )
    p.add_argument("--token", default=None, help="bearer token (default $FRS_TOKEN)")
    p.add_argument("--tokens", metavar="FILE", default=None, help="tenants: NAME SECRET a line")
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT|:*]",
        help="another name browsers may use in Host/Origin (repeatable)",
    )


def viewer_app(
    store: Readable,
    host: str,
    port: int,
    tenants: dict[str, str],
    allowed: tuple[str, ...],
    search_seconds: float = SEARCH_SECONDS,
) -> ASGIApp:
    """The viewer with its guards: security headers, the token when there is one (from the
    header, or from the cookie a browser got at /login), Host and Origin."""
    app = viewer_of(store, search_seconds)
    if tenants:
        app = CookieLogin(app, BearerGuard(app, tenants), tenants)
    return HostGuard(app, HostPolicy.for_server(host, port, allowed), port)


def run(args: argparse.Namespace) -> int:
    """Check the flags, bind the port, then serve until interrupted; 2 for what cannot run."""
    try:
        tenants = tenants_of(args.token or os.environ.get("FRS_TOKEN"), args.tokens)
    except TokensFileError as exc:
        return _fail(str(exc))
    if not 0 <= args.port <= 65535:
        return _fail(f"--port {args.port} is not a port (0..65535)")
    if not 0 < args.search_seconds <= 3600:
        return _fail(f"--search-seconds {args.search_seconds:g}: give 0 < seconds <= 3600")
    if not 0 < args.write_timeout <= 3600:
        return _fail(f"--write-timeout {args.write_timeout:g}: give 0 < seconds <= 3600")
    try:
        sock = listen(args.host, args.port, bool(tenants), args.allowed_host)
    except CannotListen as exc:
        return _fail(str(exc))
    database: str = args.db  # resolved once, by `cli.main`
    with sock:
        try:
            anyio.run(_serve, database, args, tenants, sock)
        except (SchemaTooNew, StoreError) as exc:
            return _fail(str(exc))
        except KeyboardInterrupt:
            return 130
    return 0


async def _serve(
    database: str, args: argparse.Namespace, tenants: dict[str, str], sock: socket.socket
) -> None:
    port = int(sock.getsockname()[1])
    async with _readable(database, len(set(tenants.values()))) as store:
        app = viewer_app(
            store, args.host, port, tenants, tuple(args.allowed_host), args.search_seconds
        )
        shown = args.host if args.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        shown = f"[{shown}]" if ":" in shown else shown
        print(
            f"frs-mcp: viewer of {redact(database)} (read-only) at http://{shown}:{port}/",
            file=sys.stderr,
            flush=True,
        )
        # The transports' socket limits (`server.http.sockets`): a cap on open sockets, header,
        # body and keep-alive timeouts, so idle or slow sockets cannot use up the process's
        # files, and a write timeout, so pages never read cannot pile up in memory.
        serving = Serving(
            sockets=SocketLimits(write_timeout=args.write_timeout),
            max_body=MAX_BODY,
            body_text=f"Request body too large: the viewer takes at most {MAX_BODY} bytes (a "
            "login form); it is read-only.",
            log_level=args.log_level or "INFO",
        )
        await serve(app, sock, serving)
    log.info("stopped; database %s closed", redact(database))


@asynccontextmanager
async def _readable(database: str, tenants: int) -> AsyncIterator[Readable]:
    """The database opened to read only: a SQLite file (`mode=ro`), or PostgreSQL without
    migrating (its snapshots are READ ONLY transactions), each of several tenants holding at
    most its share of the pool (`server.mcp.pool.PoolShare`)."""
    if is_postgres(database):
        async with open_postgres(database, size=POOL, migrate_schema=False) as pg:
            pooled = PgStore(pg)
            yield PoolShare(pooled, pool_share(POOL, tenants), POOL) if tenants > 1 else pooled
        return
    async with open_readonly(database) as store:
        yield store


def _fail(text: str) -> int:
    print(f"frs-mcp: {text}", file=sys.stderr)
    return 2
