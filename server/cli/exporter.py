"""`frs-mcp export SESSION --format openai|anthropic|text`: the live thread on stdout.

The output is written a message (or, for text, a line) at a time, so a long export reports its
progress on stderr as `import` does; the bytes are those of one `json.dumps(..., indent=2)`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import anyio

from frs import FrsError, InvalidRequest, SessionId, SessionNotFound, sessions, viewing
from server.mcp.progress import Progress
from server.settings import Settings
from server.stores import open_env
from storage import DatabaseRefused
from storage.postgres import is_postgres, redact

QUIET_BELOW = 2_000  # messages or lines; smaller exports print no progress lines
Exported = list[dict[str, Any]] | dict[str, Any] | str
EXPORT_FORMATS = ("openai", "anthropic", "text")


def configure(p: argparse.ArgumentParser) -> None:
    """The options of `frs-mcp export`; `--db` and `--log-level` come from the main parser."""
    p.add_argument(
        "session",
        help="session id; 'current' for the current session of --scope (default: 'default', "
        "the one an import or a runtime made current); 'latest' for the last one changed",
    )
    p.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="openai",
        help="openai (the default): chat messages; anthropic: system and messages; text: the view",
    )


async def run_export(settings: Settings, session: str, fmt: str) -> Exported:
    async with open_env(settings) as env:
        if session == "latest":
            newest = (await sessions.page(env, 1)).sessions
            if not newest:
                raise InvalidRequest(f"{redact(settings.database)} has no session yet.")
            sid: SessionId | None = newest[0].id
        else:
            sid = None if session == "current" else SessionId(session)
        if sid is not None:
            await sessions.get_session(env, sid)  # raises SessionNotFound
        elif await sessions.find_current_session(env) is None:
            # A read must not create the session it was asked to show.
            raise InvalidRequest(
                f"{redact(settings.database)} has no current session in scope "
                f"{env.scope.name}; name one, give the scope of the client that made it "
                "(--scope NAME, as frs_session(action='info') shows it), or export 'latest'."
            )
        if fmt == "openai":
            return await viewing.export_openai(env, sid)
        if fmt == "anthropic":
            return await viewing.export_anthropic(env, sid)
        return await viewing.export_text(env, sid)


# The message list's place in the JSON layout, found by writing a stand-in there first.
_STAND_IN = "\x00messages\x00"


def pieces(exported: Exported) -> tuple[int, str, Iterator[str]]:
    """`(count, unit, chunks)`: the text `json.dumps(exported, ensure_ascii=False, indent=2)`
    (or the text view itself) as chunks that end one message, or one line of text, each; the
    head and the tail travel with the first and last chunk."""
    if isinstance(exported, str):
        lines = exported.splitlines(keepends=True)
        return len(lines), "lines", iter(lines)
    items = exported if isinstance(exported, list) else exported["messages"]
    shell = [_STAND_IN] if isinstance(exported, list) else {**exported, "messages": [_STAND_IN]}
    layout = json.dumps(shell, ensure_ascii=False, indent=2)
    slot = json.dumps(_STAND_IN)
    start = layout.rindex(slot)  # the list comes last: text before it could spell the slot
    pad = layout[layout.rindex("\n", 0, start) + 1 : start]
    head, tail = layout[: start - len(pad)], layout[start + len(slot) :]
    if not items:
        return 0, "messages", iter([json.dumps(exported, ensure_ascii=False, indent=2)])

    def chunks() -> Iterator[str]:
        last = len(items) - 1
        for index, item in enumerate(items):
            # JSON strings hold no raw newline, so every newline here is layout to indent.
            text = pad + json.dumps(item, ensure_ascii=False, indent=2).replace("\n", "\n" + pad)
            yield (head if index == 0 else "") + text + (tail if index == last else ",\n")

    return len(items), "messages", chunks()


def write(exported: Exported, out: TextIO) -> None:
    """Print the export and a newline to `out`, with progress on stderr while it writes."""
    count, unit, chunks = pieces(exported)
    # A bar on the terminal that also shows the export would cut through it.
    progress = Progress(count, "exported", unit, quiet_below=QUIET_BELOW, bar=not out.isatty())
    for done, chunk in enumerate(chunks, start=1):
        out.write(chunk)
        progress.update(done)
    out.write("\n")
    out.flush()


def run(args: argparse.Namespace) -> int:
    """`frs-mcp export` with its parsed options; the exit code."""
    scope = getattr(args, "scope", None) or os.environ.get("FRS_SCOPE") or None
    settings = Settings(database=args.db, scope=scope)  # resolved once, by `cli.main`
    if (
        settings.database != ":memory:"
        and not is_postgres(settings.database)
        and not Path(settings.database).is_file()
    ):
        # Opening would create an empty database there: a mistyped path must not leave one.
        print(f"frs-mcp export: no database at {settings.database}", file=sys.stderr)
        return 2
    try:
        exported = anyio.run(run_export, settings, args.session, args.format)
    except SessionNotFound as exc:
        print(
            f"frs-mcp export: No session {exc.session_id!r} in {redact(settings.database)}. "
            "Give a session id, or 'current' for the current session.",
            file=sys.stderr,
        )
        return 2
    except (FrsError, DatabaseRefused) as exc:  # refused: another app's file, a newer schema
        print(f"frs-mcp export: {exc}", file=sys.stderr)
        return 2
    try:
        write(exported, sys.stdout)
    except BrokenPipeError:
        # The reader stopped early (`| head`): not an error; keep Python from reporting it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
