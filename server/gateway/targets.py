"""Where a request goes: the upstream configured for its path, never a place the request names.

A host's request target is taken in origin form only (RFC 9112, section 3.2.1): a path that
starts with one `/`, with no authority in it (`@host:port/…`, `//host/…`, `http://host/…`,
or one of those percent-encoded), no dot segments (an upstream's path prefix holds) and no
fragment; anything else is answered 400 and goes nowhere. The URL forwarded is built from
parts: the upstream's scheme, host and port, its path prefix, then the target's path and query
as the host sent them. Nothing of it is parsed out of a string the request wrote, so a target
cannot move the request to another host or port. An upstream URL is checked at start
(`upstream_of`): http or https, a host, a port that is a number if a colon is written, no user
or password, no query or fragment.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlsplit

import httpx2

#: Paths a request may not hold: they would leave the upstream's path prefix.
_DOT_SEGMENTS = frozenset({".", ".."})


@dataclass(frozen=True, slots=True)
class Upstream:
    """A provider's base URL, split into the parts a forwarded URL is built from."""

    scheme: str  # "http" or "https"
    host: str  # a name or an address, IPv6 without brackets
    port: int | None  # None: the scheme's own
    prefix: str  # a path every request's path is appended to, without a trailing slash

    @property
    def shown(self) -> str:
        """The URL as the log and the error messages show it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{host}{port}{self.prefix}"

    def url(self, path: bytes, query: bytes) -> httpx2.URL:
        """The URL a request to `path` (checked by `path_of`) with `query` is forwarded to."""
        raw = self.prefix.encode("ascii") + path + (b"?" + query if query else b"")
        return httpx2.URL(scheme=self.scheme, host=self.host, port=self.port, raw_path=raw)


@lru_cache(maxsize=16)
def upstream_of(text: str, name: str = "upstream") -> Upstream:
    """The upstream a URL names; raises ValueError whose text says what is wrong with it and
    what to give instead (`name` says which upstream, e.g. "--anthropic-upstream")."""
    example = "give a URL such as https://api.anthropic.com or http://127.0.0.1:8080"
    if not text.isprintable() or any(c.isspace() for c in text):
        raise ValueError(f"{name}: the URL holds spaces or control characters; {example}")
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed IPv6 bracket
        raise ValueError(f"{name}: not a URL; {example}") from None
    try:
        port = parts.port
    except ValueError:  # not a number, or out of range
        port = -1
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"{name}: the port is not a number from 1 to 65535; {example}")
    # Never shown: a user name or password in the URL is a secret.
    authority = parts.netloc.rpartition("@")[2]
    shown = f"{parts.scheme}://{authority}{parts.path}"
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{name}: {shown!r} is not an http:// or https:// URL; {example}")
    if "@" in parts.netloc:
        raise ValueError(
            f"{name}: the URL carries a user name or password, which would go to every request's "
            f"provider; the host's own key header goes through the gateway, so {example}"
        )
    if not parts.hostname:
        raise ValueError(f"{name}: {shown!r} names no host; {example}")
    if authority.endswith(":"):
        raise ValueError(
            f"{name}: {shown!r} has an empty port after its colon; write the port "
            f"(http://{parts.hostname}:8080) or leave the colon out; {example}"
        )
    if "?" in text or "#" in text:
        raise ValueError(
            f"{name}: {shown!r} has a query or a fragment; a request's own query goes upstream "
            f"with it, so {example}"
        )
    prefix = parts.path.rstrip("/")
    if _DOT_SEGMENTS & set(prefix.split("/")):
        raise ValueError(f"{name}: {shown!r} has '.' or '..' in its path; {example}")
    return Upstream(parts.scheme, parts.hostname, port, prefix)


def path_of(raw_path: bytes, path: str) -> bytes | None:
    """The path of a request target in origin form, as the host sent it (`raw_path`, still
    percent-encoded); None for any other target. `path` is the same decoded (the server's
    `scope["path"]`): a percent-encoded authority or dot segment is refused too."""
    for form in (raw_path.decode("latin-1"), path):
        if not form.startswith("/") or form.startswith("//") or "#" in form or "\\" in form:
            return None
        if _DOT_SEGMENTS & set(form.split("/")):
            return None
    if unquote(path) != path and not path_of(raw_path, unquote(path)):
        return None  # encoded twice: an upstream that decodes again would see an authority
    return raw_path
