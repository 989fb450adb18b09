"""Reading file sources: only under the roots the operator allowed, never anything else.

Paths are resolved (symlinks included) before the containment check, which compares whole path
components and comes before any check of existence, so a refusal never tells whether a path
outside the roots exists or where a symlink points; a file with several hard links is refused
(another of its names may lie outside). The file is opened without following a final symlink
and without blocking, and checked again on the open descriptor: its type, its links, and (on
Linux, through /proc/self/fd) the path the kernel really opened, so a folder swapped for a
symlink between check and open, a FIFO or a device cannot be read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

import anyio

from frs.errors import SourceRefused
from frs.model import FileText
from frs.text import sha256_hex

DEFAULT_MAX_BYTES = 2_000_000
_DB_FILES = ("", "-wal", "-shm", "-journal")
_DIRECTORY = "{path} is a directory; register the files in it one by one."
_NO_ROOTS = (
    "Reading files is off: the server was started without --allow-root. Register the text "
    "inline (frs_source(action='add', alias=..., text=...)), or ask the operator to restart "
    "frs-mcp with --allow-root DIR."
)


class LocalFiles:
    """`frs.ports.FileReader` over the local file system."""

    def __init__(
        self,
        roots: Sequence[str],
        database: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.roots = tuple(Path(root).expanduser().resolve() for root in roots)
        own = [] if database in (None, ":memory:") else [str(database) + s for s in _DB_FILES]
        self.forbidden = frozenset(Path(p).expanduser().resolve() for p in own)
        self.max_bytes = max_bytes

    async def read(self, path: str) -> FileText:
        return await anyio.to_thread.run_sync(self._read, path)

    def _read(self, path: str) -> FileText:
        real, root = self._resolve(path)
        data = self._bytes(path, real, root)
        if b"\x00" in data:
            raise SourceRefused(
                f"{path} is a binary file (it contains NUL bytes); only text files can be sources."
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceRefused(
                f"{path} is not UTF-8 text; only text files can be sources."
            ) from None
        return FileText(str(real), real.relative_to(root).as_posix(), text, sha256_hex(text))

    def _resolve(self, path: str) -> tuple[Path, Path]:
        """The real path (symlinks resolved) and the allowed root it lies under.

        Containment is decided before existence, on the path with its symlinks resolved as far
        as they exist: a path outside the roots gets one answer whether or not it exists, and
        no answer says where a symlink points."""
        if not self.roots:
            raise SourceRefused(_NO_ROOTS)
        if "\x00" in path:
            raise SourceRefused("A path cannot contain a NUL character.")
        try:
            given = Path(path).expanduser()
            if not given.is_absolute():
                given = self.roots[0] / given
            real = given.resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop, ~nosuchuser
            raise SourceRefused(
                f"Cannot resolve {path} (a symlink loop, or an unknown ~user). "
                f"Allowed roots: {self._allowed()}."
            ) from None
        root = next((r for r in self.roots if real.is_relative_to(r)), None)
        if root is None:
            raise SourceRefused(self._outside(path))
        if not real.exists():
            raise SourceRefused(
                f"No file at {path}. Check the path (allowed roots: {self._allowed()})."
            )
        if real in self.forbidden:
            raise SourceRefused(f"{path} is the server's own database; it cannot be a source.")
        return real, root

    def _allowed(self) -> str:
        return ", ".join(str(root) for root in self.roots)

    def _outside(self, path: str) -> str:
        # One text for every path that is or leads outside, existing or not.
        return (
            f"{path} is outside every allowed root, or a symlink leads out of them. Allowed "
            f"roots: {self._allowed()}. Register the text inline instead, or ask the operator "
            "to allow the folder with --allow-root."
        )

    def _bytes(self, path: str, real: Path, root: Path) -> bytes:
        """The file's bytes, opened without following a link and checked on the descriptor."""
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except IsADirectoryError:
            raise SourceRefused(_DIRECTORY.format(path=path)) from None
        except OSError as exc:
            raise SourceRefused(f"Cannot open {path}: {exc.strerror}.") from None
        try:
            # Checked on the open descriptor: what we read is what we checked.
            opened = _opened_path(fd)
            if opened is not None and not opened.is_relative_to(root):
                raise SourceRefused(self._outside(path))  # swapped between check and open
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise SourceRefused(_DIRECTORY.format(path=path))
            if not stat.S_ISREG(info.st_mode):
                raise SourceRefused(
                    f"{path} is not a regular file (a FIFO, device or socket); only files can be "
                    "sources."
                )
            if info.st_nlink > 1:
                # Another name for the same file may lie outside every root: a hard link inside
                # a root would read it.
                raise SourceRefused(
                    f"{path} has {info.st_nlink} hard links; a file with more than one name is "
                    "not read, since another name may lie outside the allowed roots. Copy the "
                    "file, or register its text inline."
                )
            if info.st_size > self.max_bytes:
                raise SourceRefused(
                    f"{path} has {info.st_size:,} bytes; the limit is {self.max_bytes:,}. "
                    "Register an excerpt inline instead."
                )
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(self.max_bytes + 1)
        finally:
            os.close(fd)
        if len(data) > self.max_bytes:
            raise SourceRefused(f"{path} grew past the limit of {self.max_bytes:,} bytes.")
        return data


def _opened_path(fd: int) -> Path | None:
    """The path the kernel opened for `fd`, where the system says (Linux); else None."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None
