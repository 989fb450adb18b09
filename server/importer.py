"""`frs-mcp import FILE.jsonl`: record a transcript into a new session, a batch at a time."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from frs import FrsError
from frs.transcripts import parse_transcript
from server.deps import open_deps
from server.settings import Settings, resolve_database

BATCH = 500  # messages per transaction


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frs-mcp import", description="Record a JSONL transcript into a new session."
    )
    p.add_argument("file", help="one message per line: {role, content, tool_calls?, ...}")
    p.add_argument("--session-title", metavar="T", help="title of the new session")
    p.add_argument("--db", metavar="PATH", help="database file (default as for frs-mcp)")
    return p


class Progress:
    """A progress bar on stderr when it is a terminal, else a line per quarter."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stderr.isatty()
        self.reported = 0

    def update(self, done: int) -> None:
        if self.tty:
            filled = 30 * done // self.total
            bar = "#" * filled + "." * (30 - filled)
            print(f"\r[{bar}] {done:,}/{self.total:,} messages", end="", file=sys.stderr)
            if done == self.total:
                print(file=sys.stderr)
        elif self.total >= 4 * BATCH and done * 4 >= (self.reported + 1) * self.total:
            self.reported = done * 4 // self.total
            print(f"imported {done:,}/{self.total:,} messages", file=sys.stderr)


async def run_import(settings: Settings, file: str, title: str | None) -> str:
    path = Path(file)
    with path.open(encoding="utf-8") as handle:  # noqa: ASYNC230 - a CLI step, nothing else runs
        messages = parse_transcript(handle, settings.limits())
    async with open_deps(settings) as deps:
        service = deps.service
        session, _ = await service.start_session(title or path.stem)
        progress = Progress(len(messages))
        done, revision, numbered = 0, 0, 0
        for start in range(0, len(messages), BATCH):
            batch = messages[start : start + BATCH]
            recorded = await service.record(batch, session.id)
            done += len(batch)
            numbered += len(recorded.positions)
            revision = recorded.revision
            progress.update(done)
    return (
        f"Imported {numbered:,} {'message' if numbered == 1 else 'messages'} "
        f"({done - numbered} thinking) from {path.name} into "
        f'session {session.id} "{session.title}" · revision {revision}'
    )


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    settings = Settings(database=resolve_database(args.db))
    try:
        print(anyio.run(run_import, settings, args.file, args.session_title))
    except FrsError as exc:
        print(f"frs-mcp import: {args.file}: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"frs-mcp import: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    return 0
