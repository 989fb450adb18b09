"""A host's transcript as a hook may read it: only a file the host keeps, only whole lines.

A hook's input names the transcript (`transcript_path`); it is read only when it is a regular
file inside the host's own folder for them (its real path, links followed) whose name carries
the conversation's id, so a hook's input cannot make frs-mcp read anything else. Hosts append
to their transcripts while the hook runs: a last line without its newline is a line still being
written, left for the next event. Lines are picked by a byte marker before they are decoded
(a Claude Code transcript is mostly bookkeeping the import skips), and the reading stops at the
hook's deadline.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

#: The largest transcript a hook reads; a larger one is refused, whole, with one line.
MAX_BYTES = 1 << 30


class HookRefused(Exception):
    """Input a hook will not act on: the message is the one stderr line it prints."""


class Deadline:
    """The time a hook's work must end by (`time.monotonic`)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise HookRefused("out of time before the transcript was read; nothing recorded")

    @property
    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)


def home(environ: Mapping[str, str]) -> Path:
    """The user's home folder as the host sees it (HOME, else the account's)."""
    given = environ.get("HOME")
    return Path(given) if given else Path.home()


def kept_file(given: object, folder: Path, names: str, what: str = "transcript") -> Path:
    """`given` as a path, if it is a regular file inside `folder` whose name contains `names`;
    raises HookRefused naming the value otherwise."""
    if not isinstance(given, str) or not given or "\x00" in given:
        raise HookRefused(f"no {what} path in the hook's input")
    path = Path(given)
    try:
        real, root = path.resolve(strict=True), folder.resolve()
    except (OSError, RuntimeError):
        raise HookRefused(f"{what} {given!r} does not exist (yet)") from None
    if not real.is_relative_to(root):
        raise HookRefused(f"{what} {given!r} is not inside {folder}; not read")
    if names not in real.name or not real.is_file():
        raise HookRefused(f"{what} {given!r} is not this conversation's file; not read")
    return real


def whole_lines(path: Path, markers: tuple[bytes, ...], deadline: Deadline) -> Iterator[str]:
    """The file's complete lines that hold one of `markers`, decoded; a last line without its
    newline is not one yet. Raises HookRefused past `MAX_BYTES` or the deadline."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise HookRefused(f"cannot read {path}: {exc.strerror}") from None
    if size > MAX_BYTES:
        raise HookRefused(f"{path} holds {size:,} bytes, over {MAX_BYTES:,}; not read")
    try:
        with path.open("rb") as handle:
            for count, raw in enumerate(handle):
                if not raw.endswith(b"\n"):
                    return
                if count % 1024 == 0:
                    deadline.check()
                if any(marker in raw for marker in markers):
                    yield raw.decode("utf-8", errors="replace")
    except OSError as exc:
        raise HookRefused(f"cannot read {path}: {exc.strerror}") from None


def objects(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Each line that is a JSON object; a broken line (a host's crash mid-write) is skipped."""
    for line in lines:
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            yield row


def settled(path: Path, deadline: Deadline, quiet: float = 0.25, step: float = 0.05) -> None:
    """Wait until `path` has not grown for `quiet` seconds (or the deadline is near): a host
    that writes its transcript behind a queue may not have flushed the last lines yet."""
    last, since = _size(path), time.monotonic()
    while time.monotonic() - since < quiet and deadline.left > quiet:
        time.sleep(step)
        size = _size(path)
        if size != last:
            last, since = size, time.monotonic()


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1
