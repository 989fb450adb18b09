"""The `frs-mcp` command: serve MCP over stdio on the embedded database."""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys
from collections.abc import Sequence

import anyio

from server.app import build_server, version
from server.deps import open_deps
from server.settings import Settings, resolve_database
from storage import SchemaTooNew

log = logging.getLogger("frs-mcp")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frs-mcp",
        description="FRS MCP server: a numbered, distillable reasoning thread for LLM agents.",
    )
    p.add_argument("--version", action="version", version=f"frs-mcp {version()}")
    p.add_argument(
        "--db",
        metavar="PATH",
        help="SQLite database file (default: $FRS_DB, else $XDG_DATA_HOME/frs-mcp/frs.db "
        "or ~/.local/share/frs-mcp/frs.db)",
    )
    p.add_argument("--transport", choices=["stdio"], default="stdio", help="how clients connect")
    p.add_argument(
        "--preview-chars",
        type=int,
        default=None,
        metavar="N",
        help="messages longer than this are shown as cards (default 1200)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level",
    )
    return p


async def serve(settings: Settings) -> None:
    async with open_deps(settings) as deps:
        mcp = build_server(settings, shared=deps)
        log.info("serving MCP over stdio on %s", settings.database)
        await mcp.run_stdio_async()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # stdout is the protocol: every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    options: dict[str, object] = {
        "database": resolve_database(args.db),
        "log_level": args.log_level,
    }
    if args.preview_chars is not None:
        options["preview_chars"] = args.preview_chars
    settings = Settings.model_validate(options)
    try:
        anyio.run(serve, settings)
    except SchemaTooNew as exc:
        print(f"frs-mcp: {exc}", file=sys.stderr)
        return 2
    except (sqlite3.Error, OSError) as exc:
        print(f"frs-mcp: cannot open the database {settings.database}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
