"""How the HTTP transports listen and what they refuse (`HttpOptions`), apart from the
transports themselves (`server.http.transports`), so that the command line can show and check
its flags without loading the MCP SDK."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from server.http.sockets import SocketLimits

DEFAULT_PORT = 8765

HttpTransport = Literal["sse", "streamable-http", "both-http"]


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How the HTTP transports listen and what they refuse."""

    transport: HttpTransport = "streamable-http"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tenants: tuple[tuple[str, str], ...] = ()  # (secret, tenant): --token, --tokens
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 4 * 1024 * 1024
    max_sse_connections: int = 32
    max_sessions: int = 100
    session_idle_timeout: float = 900.0
    shutdown_timeout: int = 10
    sockets: SocketLimits = field(default_factory=SocketLimits)

    @property
    def secured(self) -> bool:
        """Whether every request needs a bearer token."""
        return bool(self.tenants)

    @property
    def tenant_count(self) -> int:
        """How many tenants share the caps (`server.http.shares`): one without tokens."""
        return max(1, len({tenant for _, tenant in self.tenants}))

    @property
    def serves_sse(self) -> bool:
        return self.transport in ("sse", "both-http")

    @property
    def serves_streamable(self) -> bool:
        return self.transport in ("streamable-http", "both-http")
