"""`frs-mcp export SESSION --format openai|anthropic|text`: the live thread on stdout."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from frs import FrsError, InvalidRequest, SessionId, SessionNotFound
from frs.service import EXPORT_FORMATS
from server.deps import open_deps
from server.settings import Settings, resolve_database


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frs-mcp export",
        description="Print a session's live thread as chat messages a runtime can send to a model.",
    )
    p.add_argument("session", help="session id, or 'current'")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="openai")
    p.add_argument("--db", metavar="PATH", help="database file (default as for frs-mcp)")
    return p


async def run_export(settings: Settings, session: str, fmt: str) -> str:
    async with open_deps(settings) as deps:
        sid = None if session == "current" else SessionId(session)
        if sid is None and (await deps.service.list_sessions(1)).current is None:
            # A read must not create the session it was asked to show.
            raise InvalidRequest(f"{settings.database} has no current session; name one.")
        exported = await deps.service.export(fmt, sid)
    if isinstance(exported, str):
        return exported
    return json.dumps(exported, ensure_ascii=False, indent=2)


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    settings = Settings(database=resolve_database(args.db))
    if settings.database != ":memory:" and not Path(settings.database).is_file():
        # Opening would create an empty database there: a mistyped path must not leave one.
        print(f"frs-mcp export: no database at {settings.database}", file=sys.stderr)
        return 2
    try:
        text = anyio.run(run_export, settings, args.session, args.format)
    except SessionNotFound as exc:
        print(
            f"frs-mcp export: No session {exc.session_id!r} in {settings.database}. "
            "Give a session id, or 'current' for the current session.",
            file=sys.stderr,
        )
        return 2
    except FrsError as exc:
        print(f"frs-mcp export: {exc}", file=sys.stderr)
        return 2
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # The reader stopped early (`| head`): not an error; keep Python from reporting it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
