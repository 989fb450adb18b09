"""The `frs-mcp` command: serve MCP over stdio, SSE or Streamable HTTP on the embedded database."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence

import anyio
from pydantic import ValidationError

# First of ours, again: if a foreign server/__init__.py replaced ours, it did not run the check.
import server.origin  # noqa: F401
from frs import StoreError, conversations
from frs.model import Conversation
from server.cli import exporter, importer
from server.cli.hooks import command as hook
from server.cli.logs import hide_credentials, hide_session_ids
from server.cli.options import parser
from server.gateway import command as gateway
from server.http.listening import CannotListen, listen
from server.http.options import HttpOptions
from server.http.sockets import SocketLimits
from server.http.tenants import TokensFileError, tenants_of
from server.settings import DatabaseValueError, Settings, resolve_database
from server.web import command as web
from storage import DatabaseRefused
from storage.postgres import redact

log = logging.getLogger("frs-mcp")
#: The commands that serve until stopped (None: MCP); they log at INFO unless told otherwise.
SERVING = (None, "web", "gateway")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # The commands' stderr is for their progress and errors, so they log only what went wrong.
    level = args.log_level or ("INFO" if args.command in SERVING else "WARNING")
    args.log_level = level
    # stdout is the protocol (or the command's result): every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    hide_session_ids()
    hide_credentials()
    try:
        # Checked and expanded once for every command, before any of them binds a port or opens
        # a file; the commands take the result as it is (a second expansion would read a `$`
        # the first one produced as a variable).
        args.db = resolve_database(args.db)
    except DatabaseValueError as exc:
        print(f"frs-mcp: {exc}", file=sys.stderr)
        return 2
    if args.command == "import":
        return importer.run(args)
    if args.command == "export":
        return exporter.run(args)
    if args.command == "web":
        return web.run(args)
    if args.command == "gateway":
        return gateway.run(args)
    if args.command == "hook":
        return hook.run(args)
    try:
        settings = _settings(args, level)
    except ValidationError as exc:  # the flags' own checks should catch these first
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        print(f"frs-mcp: invalid settings: {problems}", file=sys.stderr)
        return 2
    # Serving MCP is the one command that loads the SDK (most of a second), so it alone
    # imports it: `tests/server/test_startup.py`.
    from server.cli.serving import serve_http, serve_stdio

    if args.transport == "stdio":
        return _run(serve_stdio, settings)
    try:
        http = _http_options(args)
    except TokensFileError as exc:
        print(f"frs-mcp: {exc}", file=sys.stderr)
        return 2
    return _listen(settings, http, serve_http)


def _settings(args: argparse.Namespace, level: str) -> Settings:
    """The server's settings from its flags; a flag left out keeps the settings' default."""
    scope = args.scope or os.environ.get("FRS_SCOPE") or None
    options: dict[str, object] = {
        "database": args.db,
        "log_level": level,
        "allow_roots": tuple(args.allow_root),
        "scope": scope,
    }
    if args.transport == "stdio" and scope is None:
        # Over stdio the host started this process for one of its conversations.
        options["conversation"] = _host_conversation()
    for name in ("preview_chars", "max_line_bytes", "max_view_tokens"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return Settings.model_validate(options)


def _host_conversation() -> Conversation | None:
    """The conversation the environment names (`frs.conversations.HOST_KEYS`); a value that
    cannot be one is logged and ignored."""
    found = conversations.from_env(os.environ)
    if found is not None:
        log.info("serving the %s conversation %s: its thread is its own", found.interface, found.id)
        return found
    for name in conversations.env_names():
        if name in os.environ:
            log.warning("%s is not 1-200 printable characters; ignored", name)
    return None


def _http_options(args: argparse.Namespace) -> HttpOptions:
    return HttpOptions(
        transport=args.transport,
        host=args.host,
        port=args.port,
        tenants=tuple(tenants_of(args.token or os.environ.get("FRS_TOKEN"), args.tokens).items()),
        allowed_hosts=tuple(args.allowed_host),
        max_body_bytes=args.max_body_bytes,
        max_sse_connections=args.max_sse_connections,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_idle_timeout,
        sockets=SocketLimits(
            max_connections=args.max_connections,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            keep_alive_timeout=args.keep_alive_timeout,
            write_timeout=args.write_timeout,
        ),
    )


def _listen(settings: Settings, http: HttpOptions, serve: Callable[..., Awaitable[None]]) -> int:
    """Serve over HTTP: refuse an unsafe bind or a bad host name first, then bind the port."""
    try:
        sock = listen(http.host, http.port, http.secured, http.allowed_hosts)
    except CannotListen as exc:
        print(f"frs-mcp: {exc}", file=sys.stderr)
        return 2
    with sock:
        return _run(serve, settings, http, sock)


def _run(serve: Callable[..., Awaitable[None]], settings: Settings, *args: object) -> int:
    try:
        anyio.run(serve, settings, *args)
    except DatabaseRefused as exc:
        print(f"frs-mcp: {exc}", file=sys.stderr)
        return 2
    except (StoreError, OSError) as exc:
        where = redact(settings.database)
        print(f"frs-mcp: cannot open the database {where}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
