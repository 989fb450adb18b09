"""`frs-mcp gateway`: the proxy between a host and its model API, on 127.0.0.1:8767.

The same rules as the HTTP transports: another address needs a token (`--token`,
`FRS_TOKEN` or `--tokens`; a host sends it in the `X-FRS-Token` header, since Authorization
carries the provider's key), and the Host and Origin checks guard against DNS rebinding. It
listens and serves as they do (`server.http.listening`, `server.http.serving`): socket limits,
a body cap (`--max-body`), and a SIGTERM that closes the database and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import httpx2
from starlette.types import ASGIApp

from frs import StoreError
from frs.autopilot import AFTER, KEEP, PAYBACK, Autopilot
from frs.model import Scope
from frs.wire.nudges import DEFAULT_STEP
from server.gateway.anthropic import WIRE as ANTHROPIC
from server.gateway.chat import WIRE as OPENAI_CHAT
from server.gateway.proxy import (
    DEFAULT_ANTHROPIC,
    DEFAULT_OPENAI,
    READ_BUDGET,
    Gateway,
    Recorders,
    Upstreams,
    error_answer,
)
from server.gateway.recorder import Recorder
from server.gateway.responses import WIRE as OPENAI_RESPONSES
from server.gateway.targets import upstream_of
from server.http.guards import HostGuard
from server.http.hosts import HostPolicy
from server.http.listening import CannotListen, listen
from server.http.serving import Serving, serve
from server.http.sockets import SocketLimits
from server.http.tenants import TokensFileError, tenants_of
from server.settings import Settings
from server.stores import open_env
from storage import DatabaseRefused
from storage.postgres import redact

log = logging.getLogger("frs-mcp.gateway")

DEFAULT_GATEWAY_PORT = 8767
#: The client name the gateway's writes go under (its current session is its own).
GATEWAY_CLIENT = "gateway"
#: The autopilot as `frs-mcp gateway` runs it unless told otherwise.
AUTOPILOT = Autopilot()
#: The largest body a host may send: the providers' own limit for a model request. Anthropic's
#: Messages and Token Counting endpoints take at most 32 MB
#: (https://docs.anthropic.com/en/api/overview#request-size-limits); 32 MiB is a little more,
#: so the gateway never refuses what the provider would take. (A Files or Batches upload, up
#: to 500 and 256 MB there, goes to the provider directly.)
DEFAULT_MAX_BODY = 32 * 1024 * 1024
#: Seconds an upstream may stay silent, before its answer's first byte or between two: the
#: Anthropic and OpenAI SDKs' own default timeout (10 minutes), which a streamed answer of
#: many minutes keeps well inside (it sends an event at least every few seconds).
DEFAULT_UPSTREAM_TIMEOUT = 600.0
DEFAULT_CONNECT_TIMEOUT = 30.0
#: Seconds a request's body may take after its headers: a 32 MiB body needs about 4.5 MB/s.
DEFAULT_BODY_TIMEOUT = 60.0
#: Conversations whose last request body the gateway keeps in memory, all tenants together.
KEPT_BODIES = 32
KEPT_BODY_CHARS = 96 << 20  # and their characters at most (`server.gateway.recorder`)


def configure(p: argparse.ArgumentParser) -> None:
    """The options of `frs-mcp gateway`; `--db` and `--log-level` come from the main parser."""
    _add_addresses(p)
    _add_rewriting(p)
    _add_limits(p)
    _add_guards(p)


def _add_addresses(p: argparse.ArgumentParser) -> None:
    """Where it listens and where it forwards."""
    p.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=DEFAULT_GATEWAY_PORT,
        help=f"port (default {DEFAULT_GATEWAY_PORT}; 0 picks a free one)",
    )
    p.add_argument(
        "--anthropic-upstream",
        metavar="URL",
        default=None,
        help="where Anthropic requests go (default $FRS_ANTHROPIC_UPSTREAM, else "
        f"{DEFAULT_ANTHROPIC})",
    )
    p.add_argument(
        "--openai-upstream",
        metavar="URL",
        default=None,
        help=f"where OpenAI requests go (default $FRS_OPENAI_UPSTREAM, else {DEFAULT_OPENAI})",
    )


def _add_rewriting(p: argparse.ArgumentParser) -> None:
    """What it changes in a request: reminders, the autopilot's squashes, rewriting at all."""
    p.add_argument(
        "--no-nudges",
        action="store_true",
        help="never add a reminder to squash to what the model is sent",
    )
    p.add_argument(
        "--nudge-tokens",
        type=int,
        default=DEFAULT_STEP,
        metavar="N",
        help="remind the model to squash each time what a conversation sends crosses another "
        "N tokens (default %(default)s)",
    )
    p.add_argument(
        "--no-auto-squash",
        action="store_true",
        help="never squash on its own: only the model's squashes are sent (the autopilot "
        "squashes finished tool exchanges into fact cards when it pays back)",
    )
    p.add_argument(
        "--auto-squash-after",
        type=int,
        default=AFTER,
        metavar="TOKENS",
        help="the autopilot acts once what a conversation sends reaches this many tokens "
        "(default %(default)s)",
    )
    p.add_argument(
        "--auto-squash-keep",
        type=int,
        default=KEEP,
        metavar="N",
        help="the newest N finished tool exchanges stay verbatim (default %(default)s)",
    )
    p.add_argument(
        "--auto-squash-payback",
        type=int,
        default=PAYBACK,
        metavar="CALLS",
        help="a batch goes out only when it pays back its prompt-cache rewrite within this "
        "many later calls (default %(default)s)",
    )
    p.add_argument(
        "--no-rewrite",
        action="store_true",
        help="record only: forward every request exactly as the host sent it",
    )


def _add_limits(p: argparse.ArgumentParser) -> None:
    """How much a host may send and how long each side may take."""
    p.add_argument(
        "--max-body",
        type=int,
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help="largest request body a host may send (default %(default)s: 32 MiB, the providers' "
        "own limit); a larger one gets 413 before it is read",
    )
    p.add_argument(
        "--read-budget",
        type=int,
        default=READ_BUDGET,
        metavar="BYTES",
        help="bytes of request bodies read at once (default %(default)s: 64 MiB); reading one "
        "holds about ten times its size until its call ends, so past this a request is "
        "forwarded as the host sent it, unread",
    )
    p.add_argument(
        "--upstream-timeout",
        type=float,
        default=DEFAULT_UPSTREAM_TIMEOUT,
        metavar="SECONDS",
        help="give up on an upstream silent this long, before its answer or inside it "
        "(default %(default)g); the host then gets 504, or its stream cut",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="SECONDS",
        help="give up connecting to an upstream after this long (default %(default)g)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        metavar="SECONDS",
        help="time a request's body may take after its headers (default %(default)g); slower "
        "gets 408 and nothing is forwarded",
    )
    p.add_argument(
        "--write-timeout",
        type=float,
        default=SocketLimits().write_timeout,
        metavar="SECONDS",
        help="close a socket whose host has read nothing of an answer this long "
        f"(default {SocketLimits().write_timeout:g})",
    )


def _add_guards(p: argparse.ArgumentParser) -> None:
    """Who may call it: the token, the tenants, the names hosts may use."""
    p.add_argument("--token", default=None, help="gateway token (default $FRS_TOKEN)")
    p.add_argument("--tokens", metavar="FILE", default=None, help="tenants: NAME SECRET a line")
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT|:*]",
        help="another name hosts may use in Host/Origin (repeatable)",
    )


def upstreams_of(args: argparse.Namespace, environ: Mapping[str, str]) -> Upstreams:
    return Upstreams(
        anthropic=args.anthropic_upstream
        or environ.get("FRS_ANTHROPIC_UPSTREAM")
        or DEFAULT_ANTHROPIC,
        openai=args.openai_upstream or environ.get("FRS_OPENAI_UPSTREAM") or DEFAULT_OPENAI,
    )


def run(args: argparse.Namespace) -> int:
    """Check the flags, bind the port, then serve until interrupted; 2 for what cannot run."""
    try:
        tenants = tenants_of(args.token or os.environ.get("FRS_TOKEN"), args.tokens)
    except TokensFileError as exc:
        return _fail(str(exc))
    wrong = _wrong_flag(args)
    if wrong is not None:
        return _fail(wrong)
    upstreams = upstreams_of(args, os.environ)
    for name, url in (("anthropic", upstreams.anthropic), ("openai", upstreams.openai)):
        try:
            upstream_of(url, f"--{name}-upstream (or FRS_{name.upper()}_UPSTREAM)")
        except ValueError as exc:
            return _fail(str(exc))
    try:
        sock = listen(args.host, args.port, bool(tenants), args.allowed_host)
    except CannotListen as exc:
        return _fail(str(exc))
    settings = Settings(database=args.db)  # resolved once, by `cli.main`
    with sock:
        try:
            anyio.run(_serve, settings, args, upstreams, tenants, sock)
        except DatabaseRefused as exc:
            return _fail(str(exc))
        except (StoreError, OSError) as exc:
            return _fail(f"cannot open the database {redact(settings.database)}: {exc}")
        except KeyboardInterrupt:
            return 130
    return 0


def _wrong_flag(args: argparse.Namespace) -> str | None:
    """What is wrong with a flag's value, in one line with the valid range; else None."""
    if not 0 <= args.port <= 65535:
        return f"--port {args.port} is not a port (0..65535)"
    if args.nudge_tokens < 1_000:
        return f"--nudge-tokens {args.nudge_tokens} is below 1000; give 1000 or more"
    if not 1024 <= args.max_body <= 1 << 31:
        return f"--max-body {args.max_body}: give 1024 to 2147483648 bytes"
    if not 0 <= args.read_budget <= 1 << 40:
        return f"--read-budget {args.read_budget}: give 0 to 1099511627776 bytes"
    for flag in ("upstream_timeout", "connect_timeout", "body_timeout", "write_timeout"):
        value = getattr(args, flag)
        if not 0 < value <= 86_400:
            return f"--{flag.replace('_', '-')} {value:g}: give 0 < seconds <= 86400"
    for name, low in (
        ("auto_squash_after", 0),
        ("auto_squash_keep", 0),
        ("auto_squash_payback", 1),
    ):
        value = getattr(args, name)
        if value < low:
            return f"--{name.replace('_', '-')} {value} is below {low}; give {low} or more"
    return None


@asynccontextmanager
async def open_gateway(
    settings: Settings,
    upstreams: Upstreams,
    tenants: Mapping[str, str] | None = None,
    rewrite: bool = True,
    nudge_step: int | None = DEFAULT_STEP,
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    autopilot: Autopilot | None = AUTOPILOT,
    read_budget: int = READ_BUDGET,
) -> AsyncIterator[Gateway]:
    """The gateway app over the database, with its upstream client; closed on exit.
    `autopilot`: when it squashes on its own (None: never)."""
    # The last bodies the recorders keep, to read a conversation's next request faster, are
    # shared out among the tenants: the memory they hold stays that of one recorder's.
    shares = max(1, len(set((tenants or {}).values())))
    bodies, chars = max(1, KEPT_BODIES // shares), KEPT_BODY_CHARS // shares
    async with open_env(settings) as env:

        def recorder_for(tenant: str) -> Recorder:
            """A tenant's recorder: its writes go under the tenant, as the gateway's client."""
            scoped = env.for_scope(Scope(tenant=tenant, client=GATEWAY_CLIENT))
            return Recorder(scoped, nudge_step, autopilot, bodies, chars)

        # `read` bounds the silence before an answer's first byte and between two of its bytes;
        # `pool` a wait for a connection, which the cap on the host's sockets bounds anyway.
        timeout = httpx2.Timeout(
            connect=connect_timeout,
            read=upstream_timeout,
            write=upstream_timeout,
            pool=upstream_timeout,
        )
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            yield Gateway(
                Recorders(recorder_for),
                upstreams,
                client,
                {
                    "anthropic": ANTHROPIC,
                    OPENAI_RESPONSES.name: OPENAI_RESPONSES,
                    OPENAI_CHAT.name: OPENAI_CHAT,
                },
                tenants=tenants,
                rewrite=rewrite,
                read_budget=read_budget,
            )


def guarded(app: Gateway, host: str, port: int, allowed: tuple[str, ...]) -> ASGIApp:
    return HostGuard(app, HostPolicy.for_server(host, port, allowed), port)


async def _serve(
    settings: Settings,
    args: argparse.Namespace,
    upstreams: Upstreams,
    tenants: dict[str, str],
    sock: socket.socket,
) -> None:
    port = int(sock.getsockname()[1])
    nudges = None if args.no_nudges else args.nudge_tokens
    autopilot = None
    if not args.no_auto_squash:
        autopilot = Autopilot(
            args.auto_squash_keep, args.auto_squash_after, args.auto_squash_payback
        )
    async with open_gateway(
        settings,
        upstreams,
        tenants,
        rewrite=not args.no_rewrite,
        nudge_step=nudges,
        upstream_timeout=args.upstream_timeout,
        connect_timeout=args.connect_timeout,
        autopilot=autopilot,
        read_budget=args.read_budget,
    ) as gateway:
        app = guarded(gateway, args.host, port, tuple(args.allowed_host))
        shown = args.host if args.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        shown = f"[{shown}]" if ":" in shown else shown
        print(
            f"frs-mcp: gateway on http://{shown}:{port} → "
            f"Anthropic {upstream_of(upstreams.anthropic).shown}, "
            f"OpenAI {upstream_of(upstreams.openai).shown}; "
            f"recording into {redact(settings.database)}",
            file=sys.stderr,
            flush=True,
        )
        serving = Serving(
            sockets=SocketLimits(body_timeout=args.body_timeout, write_timeout=args.write_timeout),
            max_body=args.max_body,
            body_text=f"the request body is larger than the gateway's limit of {args.max_body} "
            "bytes (--max-body); the providers take at most 32 MB: shorten the conversation, "
            "or restart the gateway with a larger --max-body",
            log_level=args.log_level or "INFO",
        )
        await serve(app, sock, serving, error_answer)
        await gateway.settled()  # the answers that went out are recorded
    log.info("stopped; database %s closed", redact(settings.database))


def _fail(text: str) -> int:
    print(f"frs-mcp: {text}", file=sys.stderr)
    return 2
