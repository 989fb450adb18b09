"""Tenants of the HTTP transports: who a bearer token says the caller is.

`--tokens FILE` holds one `NAME SECRET` a line (blank lines and comment lines, whose first
character is `#`, aside; a `#` inside a secret is part of it, and a comment after a pair is
refused rather than guessed at); `--token` (or `FRS_TOKEN`) is one secret for the local tenant,
the tenant of stdio. Every secret, wherever it comes from, is at least `MIN_SECRET` printable
ASCII characters of which at least `MIN_DISTINCT` differ: a weak one is refused at startup.
Every session belongs to the tenant that created it, and a tenant sees only its own
(`frs.sessions`).
A secret is matched in constant time against every secret the server knows.
"""

from __future__ import annotations

import hmac
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from frs.model import LOCAL_TENANT

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MIN_SECRET = 16  # characters: a shorter secret can be guessed over the network
MIN_DISTINCT = 8  # different characters among them: "aaaaaaaaaaaaaaaa" is no secret
MAX_FILE_BYTES = 1 << 20  # a tokens file of a million bytes holds some 20,000 tenants


class TokensFileError(ValueError):
    """The tokens file cannot be used; the text says why and what to do."""


def read_tokens(path: str) -> dict[str, str]:
    """`{secret: tenant}` from a tokens file; refuses anything but a regular file only its owner
    may read, a malformed line, a pair `_wrong_pair` refuses, and a name or secret given
    twice."""
    file = Path(path).expanduser()
    try:
        found = file.stat()
    except OSError as exc:
        raise TokensFileError(f"--tokens {path}: cannot read it ({exc}).") from None
    # Checked before reading: a FIFO would block the start and a device never end.
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_FILE_BYTES:
        raise TokensFileError(
            f"--tokens {path}: not a regular file of at most {MAX_FILE_BYTES:,} bytes; give "
            "the path of a text file with one NAME SECRET pair a line."
        )
    if found.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokensFileError(
            f"--tokens {path}: the file is readable by other users "
            f"(mode {stat.filemode(found.st_mode)}); it holds secrets. Run: chmod 600 {path}"
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokensFileError(f"--tokens {path}: cannot read it ({exc}).") from None
    tenants: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        where = f"--tokens {path}, line {number}"
        if len(words) > 2 and words[2].startswith("#"):
            raise TokensFileError(
                f"{where}: a comment goes on a line of its own (starting with #); after a "
                "NAME SECRET pair it would be taken for part of the line. (A # inside a "
                "secret is part of the secret.)"
            )
        if len(words) != 2:
            raise TokensFileError(f"{where}: write one NAME SECRET pair a line.")
        name, secret = words
        wrong = _wrong_pair(name, secret)
        if wrong:
            raise TokensFileError(f"{where}: {wrong}")
        if name in tenants.values():
            raise TokensFileError(f"{where}: the tenant {name} is named twice.")
        if secret in tenants:
            raise TokensFileError(f"{where}: this secret is already {tenants[secret]}'s.")
        tenants[secret] = name
    if not tenants:
        raise TokensFileError(f"--tokens {path}: the file names no tenant.")
    return tenants


_MAKE_ONE = "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def _wrong_pair(name: str, secret: str) -> str | None:
    """What is wrong with one line's name and secret, else None."""
    if not _NAME.match(name):
        return (
            f"the name {name[:70]!r} is not 1-64 letters, digits, '_', '.' or '-' "
            "(starting with a letter or digit)."
        )
    if name == LOCAL_TENANT:
        return (
            f"{LOCAL_TENANT} is the tenant of stdio, imports and --token; give its secret with "
            "--token (or FRS_TOKEN), or choose another name."
        )
    weak = weak_secret(secret)
    return f"the secret of {name} {weak}" if weak else None


def weak_secret(secret: str) -> str | None:
    """Why `secret` may not be a bearer token ("is shorter than …"), else None."""
    if len(secret) < MIN_SECRET:
        return f"is shorter than {MIN_SECRET} characters; {_MAKE_ONE}"
    if not secret.isascii() or not secret.isprintable() or " " in secret:
        # A bearer token travels in an HTTP header, which carries printable ASCII only: such a
        # secret would be accepted here and match no request.
        return f"is not printable ASCII without spaces, as HTTP headers carry; {_MAKE_ONE}"
    if len(set(secret)) < MIN_DISTINCT:
        return (
            f"has fewer than {MIN_DISTINCT} different characters, which is guessable; {_MAKE_ONE}"
        )
    return None


def tenants_of(token: str | None, tokens_file: str | None) -> dict[str, str]:
    """Every secret the server accepts and its tenant: the file's, and `token` for the local
    tenant."""
    tenants = read_tokens(tokens_file) if tokens_file else {}
    if token:
        weak = weak_secret(token)
        if weak:
            raise TokensFileError(f"--token (or FRS_TOKEN) {weak}")
        if token in tenants:
            raise TokensFileError("--token is also a secret in --tokens; give each its own.")
        tenants[token] = LOCAL_TENANT
    return tenants


def tenant_of(tenants: Mapping[str, str], given: str) -> str | None:
    """The tenant whose secret is `given`, else None; compares every secret, in constant time
    for equal lengths, so the answer's timing says nothing about which one matched."""
    found = None
    for secret, name in tenants.items():
        if hmac.compare_digest(given.encode(), secret.encode()):
            found = name
    return found
