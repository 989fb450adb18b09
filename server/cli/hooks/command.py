"""`frs-mcp hook HOST EVENT`: read the hook's JSON on stdin, record what the host's transcript
adds to the conversation's thread, answer with the digest where the event asks for one.

A hook must never slow or break its host: the work has a deadline (`--timeout`), stdout carries
only the host's answer, and whatever goes wrong (input that is not the host's, a transcript
outside the host's folder, a database that cannot be opened) answers nothing, prints one line
on stderr and exits 0. It imports only the domain, the store and the gateway's wire readers:
no MCP, no HTTP. `--print-config HOST` prints the host's hook configuration instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, NoReturn

import anyio

from frs.env import Env
from frs.hooks import MIN_BUDGET, find_recorded, fitted_parts, record_transcript
from frs.model import Limits, Scope
from frs.wire.matching import Unit, fit, title_of
from server.cli.hooks import claude_code, codex, config, gemini_cli, opencode
from server.cli.hooks.hosts import Host, Job
from server.cli.hooks.transcripts import Deadline, HookRefused
from server.cli.logs import hide_session_ids
from server.locations import DatabaseValueError, default_database, resolve_database
from storage import SqliteStore, open_database
from storage.postgres import is_postgres, redact

log = logging.getLogger("frs-mcp.hook")

#: Every host `frs-mcp hook` answers, by the name its command line gives it.
HOSTS: dict[str, Host] = {
    host.name: host for host in (claude_code.HOST, codex.HOST, gemini_cli.HOST, opencode.HOST)
}
DEFAULT_TOKENS = 4_000  # the size the digest is measured at (bench/hooks.py)
DEFAULT_TIMEOUT = 20.0  # seconds; the printed configurations give the host 30
MAX_INPUT = 64 << 20  # a hook's input carries at most a request's messages (Gemini CLI)
#: The client the hooks' writes go under (their own current session, in the local tenant).
HOOK_CLIENT = "hook"


#: The options every command takes that mean something to a hook, and the ones that take a value
#: (for finding the command's name among them).
_VALUED = ("--db", "--log-level", "--scope")
LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


def wanted(argv: Sequence[str]) -> bool:
    """Whether the command line is `frs-mcp [OPTIONS] hook ...`."""
    return _named_at(argv) is not None


def _named_at(argv: Sequence[str]) -> int | None:
    """Where the command's name `hook` is: the first word that is not an option or a value."""
    skip = False
    for index, word in enumerate(argv):
        if skip:
            skip = False
        elif word in _VALUED:
            skip = True
        elif not word.startswith("-"):
            return index if word == "hook" else None
    return None


class _Parser(argparse.ArgumentParser):
    """A parser whose errors do not exit 2: a host reads 2 from a hook as "block" (Claude
    Code's Stop would go on, its PreCompact would not compact)."""

    def error(self, message: str) -> NoReturn:
        raise HookRefused(f"{message} (frs-mcp hook --help)")


def parser() -> argparse.ArgumentParser:
    """`frs-mcp hook`'s own parser, for the command line `server.entry` hands it."""
    p = _Parser(
        prog="frs-mcp hook",
        description="Run from a host's hook configuration: record what its transcript adds, "
        "answer a compaction with a digest. Always exits 0.",
    )
    p.add_argument("--db", metavar="PATH|URL", default=None, help="as for every command")
    p.add_argument("--log-level", choices=LOG_LEVELS, default=None, help="default WARNING")
    p.add_argument("--scope", default=None, help=argparse.SUPPRESS)  # taken, not used
    configure(p)
    return p


def main(argv: Sequence[str]) -> int:
    """`frs-mcp [--db ...] hook HOST EVENT ...`, parsed here without the main parser (which
    loads every other command): 0 whatever happened."""
    at = _named_at(argv)
    rest = list(argv) if at is None else [*argv[:at], *argv[at + 1 :]]
    try:
        args = parser().parse_args(rest)
    except HookRefused as exc:
        print(f"frs-mcp hook: {exc}", file=sys.stderr)
        return 0
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level or "WARNING",
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    hide_session_ids()
    try:
        args.db = resolve_database(args.db)
    except DatabaseValueError as exc:
        print(f"frs-mcp hook: {exc}", file=sys.stderr)
        return 0
    return run(args)


def configure(p: argparse.ArgumentParser) -> None:
    """The options of `frs-mcp hook`; `--db` and `--log-level` come from the main parser."""
    p.add_argument("host", choices=sorted(HOSTS), metavar="HOST", help=", ".join(sorted(HOSTS)))
    p.add_argument(
        "event",
        nargs="?",
        metavar="EVENT",
        help="the hook event, as the host names it (SessionStart, Stop, ...)",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the host's hook configuration, with this frs-mcp's path, and exit",
    )
    p.add_argument(
        "--tokens",
        type=_tokens,
        default=DEFAULT_TOKENS,
        metavar="N",
        help="the digest after a compaction: at most N tokens (default %(default)s)",
    )
    p.add_argument(
        "--part",
        type=_part,
        default=(1, 1),
        metavar="K/N",
        help="answer part K of a digest cut in up to N parts, for a host that shows only so "
        "much of one hook's answer (Claude Code: one hook a part; default 1/1)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="give up (recording nothing more, answering nothing) after this long "
        "(default %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    """`frs-mcp hook` with its parsed options: 0 whatever happened (a hook's exit code would
    block or break its host); what went wrong is one line on stderr."""
    if args.print_config:
        tokens = None if args.tokens == DEFAULT_TOKENS else args.tokens
        database = config.DATABASE if args.db == str(default_database()) else args.db
        printed = config.text(args.host, config.command_path(), tokens, database)
        with suppress(BrokenPipeError):  # `| head`
            sys.stdout.write(printed.rstrip("\n") + "\n")
        return 0
    where = f"frs-mcp hook {args.host} {args.event or '(no event)'}"
    try:
        answer = _answer(args)
    except HookRefused as exc:
        print(f"{where}: {exc}", file=sys.stderr)
        return 0
    except Exception as exc:  # whatever it is, the host must go on
        print(f"{where}: {type(exc).__name__}: {_line(str(exc), args.db)}", file=sys.stderr)
        return 0
    if answer:
        try:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        except OSError as exc:  # the host stopped reading (its own timeout)
            print(f"{where}: the answer could not be written: {exc}", file=sys.stderr)
    return 0


def _answer(args: argparse.Namespace) -> str:
    """What the event asks, done: the answer for stdout ("" for none)."""
    if not args.event:
        raise HookRefused("name the EVENT the host runs this hook for")
    host = HOSTS[args.host]
    job = host.job(args.event, _input(), os.environ)
    if job is None:
        return ""
    deadline = Deadline(args.timeout)
    limits = Limits()
    units = [fit(unit, limits, "the hook") for unit in job.read(deadline)] if job.read else []
    return anyio.run(_stored, args, host.name, job, units, deadline)


async def _stored(
    args: argparse.Namespace, interface: str, job: Job, units: list[Unit], deadline: Deadline
) -> str:
    with anyio.fail_after(max(deadline.left, 0.001)):
        async with _opened(args.db, Limits()) as env:
            return await _work(env, interface, job, units, args.tokens, args.part)


def _input() -> dict[str, Any]:
    """The hook's JSON object from stdin (never read from a terminal)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise HookRefused("no hook input on stdin (the host pipes a JSON object)")
    data = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise HookRefused(f"the hook's input is over {MAX_INPUT:,} bytes; not read")
    try:
        given = json.loads(data)
    except (ValueError, RecursionError):
        raise HookRefused("the hook's input is not JSON") from None
    if not isinstance(given, dict):
        raise HookRefused("the hook's input is not a JSON object")
    return given


async def _work(
    env: Env, interface: str, job: Job, units: list[Unit], tokens: int, part: tuple[int, int]
) -> str:
    if units:
        done = await record_transcript(env, interface, job.conversation, units, title_of(units))
        if done.recorded and done.session is not None:
            log.info("recorded %d messages into %s", done.recorded, done.session.id)
    if job.answer is None:
        return ""
    recorded = await find_recorded(env, interface, job.conversation)
    if recorded is None or not recorded.entries:
        return ""
    number, parts = part
    made = fitted_parts(recorded, tokens, job.max_chars, parts)
    if not made:
        raise HookRefused(f"no digest fits {tokens:,} tokens and the host's limit; none sent")
    # A digest that fits fewer parts leaves the other hooks nothing to answer.
    return job.answer(made[number - 1]) if number <= len(made) else ""


@asynccontextmanager
async def _opened(database: str, limits: Limits) -> AsyncIterator[Env]:
    """The store at `database` (a SQLite file, or PostgreSQL), in the local tenant."""
    scope = Scope(client=HOOK_CLIENT)
    if is_postgres(database):
        from storage.postgres import PgStore, open_postgres

        async with open_postgres(database) as pg:
            yield Env(PgStore(pg), limits, scope=scope)
        return
    async with open_database(database) as db:
        yield Env(SqliteStore(db), limits, scope=scope)


def _line(text: str, database: str | None) -> str:
    """An error's text on one line, a database URL's password hidden."""
    if database:
        text = text.replace(database, redact(database))
    return " ".join(text.split())[:500]


def _tokens(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not MIN_BUDGET <= value <= 50_000:
        raise argparse.ArgumentTypeError(f"{value} is not {MIN_BUDGET}..50000 tokens")
    return value


def _part(text: str) -> tuple[int, int]:
    number, _, parts = text.partition("/")
    try:
        found = int(number), int(parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N (1/2, 2/2)") from None
    if not 1 <= found[0] <= found[1] <= 4:
        raise argparse.ArgumentTypeError(f"{text!r}: K/N with 1 <= K <= N <= 4")
    return found


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f"{value} is not 0..600 seconds")
    return value
