"""What a SQLite file says about itself, read without opening it: its `user_version` and
`application_id`, as its last committed transaction left them.

Any connection, even a read-only one, writes to the `-shm` file of a database in WAL mode (its
read marks), and a read-write one checkpoints the WAL when it closes last. A database we are
about to refuse (from a newer frs-mcp, or another application's) must be left byte for byte, so
its header is read from the bytes: page 1 of the main file (https://sqlite.org/fileformat.html,
section 1.3), or the newest copy of page 1 in the WAL that a valid commit frame covers
(section 4).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

_MAGIC = b"SQLite format 3\x00"
_HEADER = 100
_WAL_MAGIC = (0x377F0682, 0x377F0683)  # checksums of little-endian, big-endian words
_WAL_HEADER = 32
_FRAME_HEADER = 24


@dataclass(frozen=True, slots=True)
class Header:
    user_version: int
    application_id: int


def read_header(file: Path) -> Header | None:
    """The file's header fields; None for a file that is missing, empty, unreadable (a folder,
    no permission: opening it says so in SQLite's words) or not SQLite."""
    try:
        with file.open("rb") as main:
            head = main.read(_HEADER)
    except OSError:
        return None
    if len(head) < _HEADER or not head.startswith(_MAGIC):
        return None
    newest = _newest_page_one(file.with_name(file.name + "-wal"))
    if newest is not None and len(newest) >= _HEADER:
        head = newest[:_HEADER]
    (user_version,) = struct.unpack_from(">I", head, 60)
    (application_id,) = struct.unpack_from(">I", head, 68)
    return Header(user_version, application_id)


def _newest_page_one(wal: Path) -> bytes | None:
    """Page 1 as the last valid commit in the WAL left it; None if the WAL has no such copy.
    Read a frame at a time: a WAL can be large, and only page 1 is kept."""
    try:
        with wal.open("rb") as source:
            return _scan(source)
    except OSError:
        return None


def _scan(source: BinaryIO) -> bytes | None:
    head = source.read(_WAL_HEADER)
    if len(head) < _WAL_HEADER:
        return None
    magic, _, page_size, _, salt1, salt2, sum1, sum2 = struct.unpack(">8I", head)
    if magic not in _WAL_MAGIC:
        return None
    order = ">" if magic & 1 else "<"
    sums = _checksum(head[:24], (0, 0), order)
    if sums != (sum1, sum2):
        return None
    committed, pending = None, None
    while len(frame := source.read(_FRAME_HEADER + page_size)) == _FRAME_HEADER + page_size:
        page, size, frame_salt1, frame_salt2, frame_sum1, frame_sum2 = struct.unpack_from(
            ">6I", frame
        )
        if (frame_salt1, frame_salt2) != (salt1, salt2):
            break  # left from before the WAL was last restarted
        sums = _checksum(frame[_FRAME_HEADER:], _checksum(frame[:8], sums, order), order)
        if sums != (frame_sum1, frame_sum2):
            break  # a torn write: SQLite stops here too
        if page == 1:
            pending = frame[_FRAME_HEADER:]
        if size:  # a commit frame: what came before it is committed
            committed = pending
    return committed


def _checksum(data: bytes, sums: tuple[int, int], order: str) -> tuple[int, int]:
    """SQLite's WAL checksum (fileformat.html, 4.1) of `data`, continuing `sums`."""
    s1, s2 = sums
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
        s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
    return s1, s2
