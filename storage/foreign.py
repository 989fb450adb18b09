"""Another application's SQLite file, read only: OpenCode's store, for `frs-mcp hook opencode`.

The file is opened with `mode=ro`, so nothing of it can be written, whatever the code asks; it
is in WAL mode and OpenCode may be writing it: a reader sees the last committed state and
never blocks the writer. Only the columns the hook needs are read (a session's messages and
parts, each row's `data` decoded from JSON; a row that is not JSON reads as `{}`). Engine
errors become `StoreUnavailable`, naming the file.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from frs.errors import StoreUnavailable

#: (a message's data, its parts' data), each decoded; in the order OpenCode made them.
Rows = list[tuple[Any, list[Any]]]


def opencode_session(path: Path, session: str, timeout: float) -> Rows:
    """The session's messages in order, each with its parts in order."""
    try:
        db = _open(path, timeout)
        try:
            messages = db.execute(
                "select id, data from message where session_id = ? order by id", (session,)
            ).fetchall()
            parts: dict[str, list[Any]] = {}
            for message_id, data in db.execute(
                "select message_id, data from part where session_id = ? order by id", (session,)
            ):
                parts.setdefault(message_id, []).append(_decoded(data))
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot read OpenCode's store {path}: {exc}") from None
    return [(_decoded(data), parts.get(message_id, [])) for message_id, data in messages]


def opencode_compacted(path: Path, session: str, timeout: float) -> bool:
    """Whether the session holds a compaction (a part of type `compaction`)."""
    try:
        db = _open(path, timeout)
        try:
            found = db.execute(
                "select 1 from part where session_id = ? and json_extract(data, '$.type') = ?"
                " limit 1",
                (session, "compaction"),
            ).fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot read OpenCode's store {path}: {exc}") from None
    return found is not None


def _open(path: Path, timeout: float) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=timeout)


def _decoded(data: object) -> Any:
    try:
        return json.loads(data) if isinstance(data, (str, bytes)) else {}
    except ValueError:
        return {}
