"""Which hosts may bind, and which Host and Origin headers a server accepts.

A server on a loopback address accepts its own names only, so a web page cannot reach it by
DNS rebinding; one bound to a wildcard or a public address needs a token, and names the hosts
it answers to (`--allow-host`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
Port = int | None | Literal["*"]  # None: the header names no port
_LABELS = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def unsafe_bind(host: str, secured: bool) -> str | None:
    """Why serving on `host` without a token is refused, or None when it is allowed."""
    if secured or is_loopback(host):
        return None
    return (
        f"refusing to listen on {host} without a token: anyone who can reach this port could "
        "read and change every session. Set a token with FRS_TOKEN=<secret> (or --token <secret>, "
        "or one per tenant with --tokens FILE), "
        "e.g. export FRS_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))'); "
        "clients then send 'Authorization: Bearer <secret>'. Or bind to 127.0.0.1 (the default)."
    )


@dataclass(frozen=True, slots=True)
class _HostRule:
    name: str  # lower case; IPv6 without brackets
    port: Port  # "*" matches any port, and none

    def matches(self, name: str, port: int | None) -> bool:
        return self.name == name and (self.port == "*" or self.port == port)


def _split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6][:port]` as (name, port); None if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") > 1:
        return None  # an IPv6 address must be bracketed in a Host header
    else:
        name, _, port_text = value.partition(":")
        port_text = port_text if ":" in value else None
    if not name:
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


def parse_allowed_host(value: str) -> tuple[str, Port]:
    """One --allowed-host as (name, port): `name` (port None: given without one), `name:PORT`,
    or `name:*` (any port); raises ValueError for anything else."""
    text = value.strip().lower()
    wildcard = text.endswith(":*")
    parsed = _split_host(text[:-2] if wildcard else text)
    if parsed is None or (wildcard and parsed[1] is not None) or not _is_name(parsed[0]):
        raise ValueError(f"--allowed-host {value!r} is not a host name, host:port or host:*")
    return parsed[0], "*" if wildcard else parsed[1]


def _is_name(name: str) -> bool:
    """A DNS name, an IPv4 address or an IPv6 address (given without its brackets)."""
    if _LABELS.match(name):
        return True
    try:
        return ipaddress.ip_address(name).version == 6
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which Host and Origin headers may reach the server.

    Host must name the server as it is bound (loopback names always, the bound address when it
    is a specific one) with its port, or an --allowed-host. Origin is absent for non-browser
    clients; when sent, it must be a loopback page (any port) or an allowed host.
    """

    rules: tuple[_HostRule, ...]

    @classmethod
    def for_server(cls, host: str, port: int, allowed: Sequence[str] = ()) -> HostPolicy:
        names = list(_LOOPBACK_NAMES)
        bound = host.strip("[]").lower()
        if bound not in WILDCARD_HOSTS and bound not in names:
            names.append(bound)
        rules = [_HostRule(name, port) for name in names]
        if port == 80:
            rules += [_HostRule(name, None) for name in names]
        for value in allowed:
            name, given = parse_allowed_host(value)
            if given is None:
                # A name without a port: behind a proxy on the default port, or this server's.
                rules += [_HostRule(name, None), _HostRule(name, port)]
            else:
                rules.append(_HostRule(name, given))
        return cls(tuple(rules))

    def allows_host(self, header: str | None) -> bool:
        parsed = _split_host(header) if header else None
        return parsed is not None and any(rule.matches(*parsed) for rule in self.rules)

    def allows_origin(self, header: str | None) -> bool:
        if header is None:
            return True
        try:
            parts = urlsplit(header.strip())
            name, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not name:
            return False
        if name in _LOOPBACK_NAMES:
            return True
        return any(rule.matches(name, port) for rule in self.rules)

    def names(self) -> list[str]:
        seen: list[str] = []
        for rule in self.rules:
            shown = f"[{rule.name}]" if ":" in rule.name else rule.name
            if shown not in seen:
                seen.append(shown)
        return seen
