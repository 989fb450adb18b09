"""The `frs-mcp` command line: its options, their checks, and its subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server.cli import exporter, importer
from server.cli.hooks import command as hook
from server.gateway import command as gateway
from server.http.options import DEFAULT_PORT, HttpOptions
from server.settings import PREVIEW_MIN, version
from server.web import command as web

_HTTP = HttpOptions()  # the defaults

LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


def _common(*, suppress: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after the subcommand's name.

    The subcommands' copy has `suppress=True`: an option a subparser knows is otherwise set to
    its default there, over the value given before the subcommand (`--db x.db import F`).
    """
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--db",
        metavar="PATH|URL",
        default=argparse.SUPPRESS if suppress else None,
        help="SQLite database file, or a postgresql:// URL for a PostgreSQL server (extra "
        "frs-mcp[postgres]) (default: $FRS_DB, else $XDG_DATA_HOME/frs-mcp/frs.db "
        "or ~/.local/share/frs-mcp/frs.db)",
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=argparse.SUPPRESS if suppress else None,
        help="stderr log level (default INFO when serving, WARNING for import and export)",
    )
    p.add_argument(
        "--scope",
        metavar="NAME",
        type=_scope,
        default=argparse.SUPPRESS if suppress else None,
        help="whose current session tools without session_id use: this name instead of the "
        "one the client gives itself (default $FRS_SCOPE; import and export: 'default')",
    )
    return p


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frs-mcp",
        description="FRS MCP server: a numbered, distillable reasoning thread for LLM agents. "
        "With no command, serves MCP (stdio by default). --db and --log-level go before or "
        "after a command.",
        parents=[_common(suppress=False)],
    )
    p.add_argument("--version", action="version", version=f"frs-mcp {version()}")
    _serving(p)
    _http(p.add_argument_group("HTTP transports (sse, streamable-http, both-http)"))
    names = ", ".join(_commands(p).choices)
    # argparse would print `COMMAND ...` as if a command were required; none is the default.
    p.usage = (
        "%(prog)s [OPTIONS]                serve MCP (stdio, or --transport)\n"
        f"       %(prog)s [OPTIONS] COMMAND ...  one of {names}"
    )
    return p


def _serving(p: argparse.ArgumentParser) -> None:
    """How the server listens and what it allows, whatever the transport."""
    p.add_argument(
        "--transport",
        choices=["stdio", "sse", "streamable-http", "both-http"],
        default="stdio",
        help="how clients connect: stdio (default), sse (GET /sse), streamable-http (/mcp), "
        "or both-http (/mcp and /sse on one port)",
    )
    p.add_argument(
        "--allow-root",
        action="append",
        type=_folder,
        default=[],
        metavar="DIR",
        help="a folder whose files frs_source may read (repeatable; none by default)",
    )
    p.add_argument(
        "--max-line-bytes",
        type=_at_least(1024),
        default=None,
        metavar="N",
        help="stdio: a request line longer than this is refused (default 16 MiB)",
    )
    p.add_argument(
        "--max-view-tokens",
        type=_at_least(500),
        default=None,
        metavar="N",
        help="a whole-thread view larger than this is budgeted to it (default 20000)",
    )
    p.add_argument(
        "--preview-chars",
        type=_preview_chars,
        default=None,
        metavar="N",
        help="messages longer than this are shown as cards (default 1200)",
    )


def _http(http: argparse._ArgumentGroup) -> None:
    """The options of the HTTP transports, in the order `--help` lists them."""
    _http_access(http)
    _http_requests(http)
    _http_sockets(http)


# Lists of flags, each a few lines of help: long, and read top to bottom.
def _http_access(http: argparse._ArgumentGroup) -> None:
    """Where the server listens, and who may call it."""
    http.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other needs a token)",
    )
    http.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    http.add_argument(
        "--token",
        default=None,
        help="bearer token every request must carry, for the local tenant (default $FRS_TOKEN; "
        "prefer the variable, a flag shows in the process list)",
    )
    http.add_argument(
        "--tokens",
        metavar="FILE",
        default=None,
        help="tenants: one 'NAME SECRET' a line, in a file only its owner may read; each "
        "tenant sees only its own sessions",
    )
    http.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT|:*]",
        help="another name clients may use in Host/Origin (repeatable); loopback names and the "
        "bound address are always allowed",
    )


def _http_requests(http: argparse._ArgumentGroup) -> None:
    """What requests, streams and sessions may take."""
    http.add_argument(
        "--max-body-bytes",
        type=_positive,
        default=_HTTP.max_body_bytes,
        metavar="N",
        help="largest request body (default %(default)s); larger gets 413",
    )
    http.add_argument(
        "--max-sse-connections",
        type=_positive,
        default=_HTTP.max_sse_connections,
        metavar="N",
        help="open SSE streams at once (default %(default)s); one more gets 503",
    )
    http.add_argument(
        "--max-sessions",
        type=_positive,
        default=_HTTP.max_sessions,
        metavar="N",
        help="open Streamable HTTP sessions (default %(default)s); one more gets 503",
    )
    http.add_argument(
        "--session-idle-timeout",
        type=_seconds,
        default=_HTTP.session_idle_timeout,
        metavar="SECONDS",
        help="close Streamable HTTP sessions idle this long (default %(default)s)",
    )


def _http_sockets(http: argparse._ArgumentGroup) -> None:
    """What a socket may cost (`server.http.sockets`)."""
    http.add_argument(
        "--max-connections",
        type=_positive,
        default=_HTTP.sockets.max_connections,
        metavar="N",
        help="open sockets at once, SSE streams included (default %(default)s); at the cap the "
        "oldest socket that sent no request yet makes room, else the new one gets 503",
    )
    http.add_argument(
        "--header-timeout",
        type=_seconds,
        default=_HTTP.sockets.header_timeout,
        metavar="SECONDS",
        help="time a request's headers may take to arrive, from connecting or from the first "
        "byte of the next request (default %(default)s); slower gets 408",
    )
    http.add_argument(
        "--body-timeout",
        type=_seconds,
        default=_HTTP.sockets.body_timeout,
        metavar="SECONDS",
        help="time a request's body may take after its headers (default %(default)s); slower "
        "or shorter than its Content-Length gets 408",
    )
    http.add_argument(
        "--keep-alive-timeout",
        type=_seconds,
        default=_HTTP.sockets.keep_alive_timeout,
        metavar="SECONDS",
        help="close a socket idle this long between requests (default %(default)s)",
    )
    http.add_argument(
        "--write-timeout",
        type=_seconds,
        default=_HTTP.sockets.write_timeout,
        metavar="SECONDS",
        help="close a socket whose client has read nothing of an answer this long "
        "(default %(default)s)",
    )


class _Command(argparse.ArgumentParser):
    """A subcommand's parser: an argument it does not know is its own error, shown with its own
    usage (argparse would hand it back to the main parser, whose usage says nothing of the
    subcommand's options)."""

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


@dataclass(frozen=True, slots=True)
class _Subcommand:
    """A subcommand: the function that adds its options, its name, its line in `--help`, and
    the description its own `--help` opens with."""

    configure: Callable[[argparse.ArgumentParser], None]
    name: str
    help: str
    description: str


_SUBCOMMANDS = (
    _Subcommand(
        importer.configure,
        "import",
        "record a JSONL transcript into a new session",
        "Record a JSONL transcript into a new session.",
    ),
    _Subcommand(
        exporter.configure,
        "export",
        "print a session's live thread (--format openai|anthropic|text)",
        "Print a session's live thread as chat messages a runtime can send to a model.",
    ),
    _Subcommand(
        web.configure,
        "web",
        "serve a read-only web viewer of the sessions (http://127.0.0.1:8766/)",
        "Serve a read-only web viewer of the database's sessions: threads "
        "with their squashes, the audit trail, search. It never writes to the database.",
    ),
    _Subcommand(
        gateway.configure,
        "gateway",
        "proxy a host's model API (http://127.0.0.1:8767): record the conversation, "
        "send squashes instead of what they replaced",
        "Serve an HTTP proxy between a host (Claude Code, ...) and its model "
        "API. It records each conversation into its own session and sends the agent's "
        "squashes instead of the messages they replaced; anything it cannot read goes "
        "upstream exactly as the host sent it.",
    ),
    _Subcommand(
        hook.configure,
        "hook",
        "run from a host's hooks (Claude Code, Codex CLI, Gemini CLI, OpenCode): "
        "record its transcript, answer a compaction with a digest",
        "Run from a host's own hook configuration: read the hook's JSON on "
        "stdin, record what the host's transcript adds to the conversation's thread, and "
        "after a compaction answer with a digest of the thread. It always exits 0; what "
        "went wrong is one line on stderr. --print-config HOST prints the configuration.",
    ),
)


def _commands(p: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The subcommands; each takes --db and --log-level too, before or after its name."""
    commands: argparse._SubParsersAction[argparse.ArgumentParser] = p.add_subparsers(
        dest="command",
        title="commands",
        metavar="COMMAND",
        description="optional: with no command, frs-mcp serves MCP",
        parser_class=_Command,
    )
    common = _common(suppress=True)
    for command in _SUBCOMMANDS:
        command.configure(
            commands.add_parser(
                command.name,
                parents=[common],
                help=command.help,
                description=command.description,
            )
        )
    return commands


# argparse names a type function in its message ("invalid _port value"), so each one explains
# a value that is not a number itself.
def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _port(text: str) -> int:
    value = _whole(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0..65535)")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{value} must be a positive number of seconds")
    return value


def _positive(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum:,}")
        return value

    parse.__name__ = "number"  # argparse names the type in its message
    return parse


def _folder(text: str) -> str:
    try:
        return str(Path(text).expanduser().resolve())
    except (OSError, RuntimeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a usable folder path: {exc}") from None


def _scope(text: str) -> str:
    if not 1 <= len(text) <= 200 or not text.isprintable():
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not 1-200 printable characters")
    return text


def _preview_chars(text: str) -> int:
    value = _whole(text)
    if value < PREVIEW_MIN:
        raise argparse.ArgumentTypeError(f"{value} must be at least {PREVIEW_MIN}")
    return value
