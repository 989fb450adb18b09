"""`frs-mcp gateway`: the proxy between a host and its model API, on 127.0.0.1:8767.

The same rules as the HTTP transports: another address needs a token (`--token`,
`FRS_TOKEN` or `--tokens`; a host sends it in the `X-FRS-Token` header, since Authorization
carries the provider's key), and the Host and Origin checks guard against DNS rebinding.
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
import uvicorn
from starlette.types import ASGIApp

from frs import StoreError
from frs.autopilot import AFTER, KEEP, PAYBACK, Autopilot
from frs.model import Scope
from frs.nudges import DEFAULT_STEP
from server.gateway.anthropic import WIRE as ANTHROPIC
from server.gateway.chat import WIRE as OPENAI_CHAT
from server.gateway.proxy import DEFAULT_ANTHROPIC, DEFAULT_OPENAI, Gateway, Upstreams
from server.gateway.recorder import Recorder
from server.gateway.responses import WIRE as OPENAI_RESPONSES
from server.http.guards import HostGuard
from server.http.hosts import HostPolicy, unsafe_bind
from server.http.listening import bind_socket
from server.http.tenants import TokensFileError, tenants_of
from server.settings import Settings, resolve_database
from server.stores import open_service
from storage import DatabaseRefused
from storage.postgres import redact

log = logging.getLogger("frs-mcp.gateway")

DEFAULT_GATEWAY_PORT = 8767
#: The client name the gateway's writes go under (its current session is its own).
GATEWAY_CLIENT = "gateway"
#: The autopilot as `frs-mcp gateway` runs it unless told otherwise.
AUTOPILOT = Autopilot()


def configure(p: argparse.ArgumentParser) -> None:
    """The options of `frs-mcp gateway`; `--db` and `--log-level` come from the main parser."""
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
    refusal = unsafe_bind(args.host, bool(tenants))
    if refusal is not None:
        return _fail(refusal)
    if not 0 <= args.port <= 65535:
        return _fail(f"--port {args.port} is not a port (0..65535)")
    if args.nudge_tokens < 1_000:
        return _fail(f"--nudge-tokens {args.nudge_tokens} is below 1000; give 1000 or more")
    for flag, value, low in (
        ("--auto-squash-after", args.auto_squash_after, 0),
        ("--auto-squash-keep", args.auto_squash_keep, 0),
        ("--auto-squash-payback", args.auto_squash_payback, 1),
    ):
        if value < low:
            return _fail(f"{flag} {value} is below {low}; give {low} or more")
    upstreams = upstreams_of(args, os.environ)
    for name, url in (("anthropic", upstreams.anthropic), ("openai", upstreams.openai)):
        if not url.startswith(("http://", "https://")):
            return _fail(f"the {name} upstream {url!r} is not an http:// or https:// URL")
    try:
        HostPolicy.for_server(args.host, args.port, tuple(args.allowed_host))
        sock = bind_socket(args.host, args.port)
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc}")
    settings = Settings(database=resolve_database(args.db))
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


@asynccontextmanager
async def open_gateway(
    settings: Settings,
    upstreams: Upstreams,
    tenants: Mapping[str, str] | None = None,
    rewrite: bool = True,
    nudge_step: int | None = DEFAULT_STEP,
    autopilot: Autopilot | None = AUTOPILOT,
) -> AsyncIterator[Gateway]:
    """The gateway app over the database, with its upstream client; closed on exit.
    `autopilot`: when it squashes on its own (None: never)."""
    async with open_service(settings) as service:
        env = service.for_scope(Scope(client=GATEWAY_CLIENT)).env
        # No timeout on reads: a model may think for minutes before its first byte.
        timeout = httpx2.Timeout(connect=30.0, read=None, write=None, pool=None)
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            yield Gateway(
                Recorder(env, nudge_step, autopilot),
                upstreams,
                client,
                {
                    "anthropic": ANTHROPIC,
                    OPENAI_RESPONSES.name: OPENAI_RESPONSES,
                    OPENAI_CHAT.name: OPENAI_CHAT,
                },
                tenants=tenants,
                rewrite=rewrite,
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
        settings, upstreams, tenants, not args.no_rewrite, nudges, autopilot
    ) as gateway:
        app = guarded(gateway, args.host, port, tuple(args.allowed_host))
        shown = args.host if args.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        shown = f"[{shown}]" if ":" in shown else shown
        print(
            f"frs-mcp: gateway on http://{shown}:{port} → Anthropic {upstreams.anthropic}, "
            f"OpenAI {upstreams.openai}; recording into {redact(settings.database)}",
            file=sys.stderr,
            flush=True,
        )
        config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False)
        await uvicorn.Server(config).serve(sockets=[sock])


def _fail(text: str) -> int:
    print(f"frs-mcp: {text}", file=sys.stderr)
    return 2
