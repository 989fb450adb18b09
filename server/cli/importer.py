"""`frs-mcp import FILE.jsonl`: record a transcript into a new session, a batch at a time."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio

from frs import FrsError, recording, sessions
from frs.transcripts import parse_transcript
from frs.views.render import plural
from server.mcp.progress import Progress
from server.settings import Settings
from server.stores import open_env
from storage import DatabaseRefused

BATCH = 500  # messages per transaction


def configure(p: argparse.ArgumentParser) -> None:
    """The options of `frs-mcp import`; `--db` and `--log-level` come from the main parser."""
    p.add_argument("file", help="one message per line: {role, content, tool_calls?, ...}")
    p.add_argument("--session-title", metavar="T", help="title of the new session")


async def run_import(settings: Settings, file: str, title: str | None) -> str:
    path = Path(file)
    with path.open(encoding="utf-8") as handle:  # noqa: ASYNC230 - a CLI step, nothing else runs
        messages = parse_transcript(handle, settings.limits())
    async with open_env(settings) as env:
        session = (await sessions.start(env, title or path.stem)).session
        progress = Progress(len(messages), "imported", "messages", quiet_below=4 * BATCH)
        done, revision, numbered = 0, 0, 0
        for start in range(0, len(messages), BATCH):
            batch = messages[start : start + BATCH]
            recorded = await recording.record(env, batch, session.id)
            done += len(batch)
            numbered += len(recorded.positions)
            revision = recorded.revision
            progress.update(done)
    thinking = done - numbered
    # Thinking blocks come on top of the numbered messages, not out of them.
    extra = f" and {plural(thinking, 'thinking block')} (not numbered)" if thinking else ""
    return (
        f"Imported {plural(numbered, 'message')}{extra} from {path.name} into "
        f'session {session.id} "{session.title}" · revision {revision}'
    )


def run(args: argparse.Namespace) -> int:
    """`frs-mcp import` with its parsed options; the exit code."""
    scope = getattr(args, "scope", None) or os.environ.get("FRS_SCOPE") or None
    settings = Settings(database=args.db, scope=scope)  # resolved once, by `cli.main`
    try:
        # `frs-mcp import` is a command of its own, not the stdio server: its answer is stdout.
        print(anyio.run(run_import, settings, args.file, args.session_title), file=sys.stdout)
    except FrsError as exc:
        print(f"frs-mcp import: {args.file}: {exc}", file=sys.stderr)
        return 2
    except DatabaseRefused as exc:  # another application's file, or a newer schema
        print(f"frs-mcp import: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"frs-mcp import: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    return 0
