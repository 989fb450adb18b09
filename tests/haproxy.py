"""haproxy in front of several `frs-mcp --transport streamable-http` instances, for the tests
and benchmarks: the configuration the README shows, written to a file and run in the
foreground. Plain round robin; a dead instance is taken out by its health check, and a request
that could not connect is sent to another (never one that reached an instance: a write is not
safe to send twice).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

INSTALL = "sudo apt-get install -y haproxy (Debian/Ubuntu)"


def config(port: int, backends: Sequence[int], health: str | None = "/health") -> str:
    """The haproxy.cfg of the README's "Several instances" section, on these ports.
    `health`: the path its check asks for. None: the check asks only that the port takes
    connections (the gateway forwards every path to its upstream, so it has none of its
    own), and each answer names the instance that served it (`X-Served-By: frsN`)."""
    check = (
        f"    option httpchk GET {health}\n"
        if health
        else "    http-response set-header X-Served-By %[srv_name]\n"
    )
    servers = "\n".join(
        f"    server frs{i} 127.0.0.1:{p} check inter 500ms fall 2 rise 1"
        for i, p in enumerate(backends, start=1)
    )
    return f"""global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    retries 3
    option redispatch
    retry-on conn-failure

frontend mcp
    bind 127.0.0.1:{port}
    default_backend frs

backend frs
    balance roundrobin
{check}{servers}
"""


def find_haproxy(
    path: str | None = None,
    places: tuple[str, ...] = ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy"),
) -> str:
    """The haproxy binary, on `path` (default $PATH) or in `places`; fails with the command
    that installs it."""
    for candidate in (shutil.which("haproxy", path=path), *places):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError(f"haproxy was not found: install it with {INSTALL}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def haproxy(
    backends: Sequence[int], folder: Path, port: int, health: str | None = "/health"
) -> AsyncIterator[int]:
    """Run haproxy on `port` in front of `backends` (each started with
    `--allowed-host 127.0.0.1:PORT`: the Host header haproxy passes on); yields the port."""
    binary = find_haproxy()
    cfg = folder / "haproxy.cfg"
    cfg.write_text(config(port, backends, health), encoding="utf-8")
    check = await anyio.run_process([binary, "-c", "-f", str(cfg)], check=False)
    assert check.returncode == 0, check.stderr.decode(errors="replace")
    log = (folder / "haproxy.err").open("ab")
    process = await anyio.open_process(
        [binary, "-db", "-f", str(cfg)], stdin=subprocess.DEVNULL, stdout=log, stderr=log
    )
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", port)
                    await stream.aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        yield port
    finally:
        with anyio.CancelScope(shield=True):
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()
            log.close()
