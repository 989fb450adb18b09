"""A listening socket for the three HTTP servers (`frs-mcp --transport …`, `web`, `gateway`):
bound before anything else starts, or refused with one line that says why and the fix
(`listen`: an address other than loopback without a token, a malformed `--allowed-host`, a
port in use); `server.http.serving` then serves on it."""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence

from server.http.hosts import HostPolicy, unsafe_bind


class CannotListen(Exception):
    """The server cannot listen as asked; the text is the one line that says why and the fix."""


def listen(host: str, port: int, secured: bool, allowed_hosts: Sequence[str]) -> socket.socket:
    """The socket a server listens on, checked first: without a token (`secured`) only a
    loopback address, and only well-formed `--allowed-host` names; raises CannotListen."""
    refusal = unsafe_bind(host, secured)
    if refusal is not None:
        raise CannotListen(refusal)
    try:
        HostPolicy.for_server(host, port, tuple(allowed_hosts))
    except ValueError as exc:
        raise CannotListen(str(exc)) from None
    try:
        return bind_socket(host, port)
    except OSError as exc:
        raise CannotListen(listen_failure(host, port, exc)) from None


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0 picks a free one); raises OSError."""
    family, _, _, _, address = socket.getaddrinfo(
        host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets it can see are TCP, and
    # without it a kept-alive response waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def listen_failure(host: str, port: int, error: OSError) -> str:
    """The one line for a port that cannot be bound: what the system said, and the fix."""
    said = f"cannot listen on {host}:{port}: {error}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"{said}. Another process holds the port: pass --port 0 to take a free one (the "
            f"log says which), or find the process with `ss -ltnp 'sport = :{port}'` (Linux) "
            f"or `lsof -nP -iTCP:{port} -sTCP:LISTEN` (macOS)."
        )
    if error.errno == errno.EACCES and 0 < port < 1024:
        return f"{said}. Ports below 1024 need privileges: pass a port above 1023, or --port 0."
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{said}. {host} is not an address of this machine: pass one that is, or 127.0.0.1."
    return said
