"""The originals' layout of squashes made before it was stored, for both engines' migrations
(SQLite's 7, PostgreSQL's 2): where each member's part of the rendered originals starts
(`squash_members.at`) and their length (`squashes.chars`), as `frs.squashes` stores them with a
new squash, so a `get_alias` page renders only the members it overlaps.
"""

from __future__ import annotations

from typing import Any

from frs.originals import part_starts, render_parts
from storage.dialect import Dialect
from storage.rows import MESSAGE_COLUMNS_V7, message_from_row, qualified


async def lay_out_originals(dialect: Dialect, conn: Any) -> None:
    """Lay out every squash's originals, a squash at a time, inside the migration's
    transaction on `conn`. Reads the message columns of the schema before `raw` came."""
    columns = qualified(MESSAGE_COLUMNS_V7, "m")
    for session_id, n in await dialect.all(conn, "select session_id, n from squashes", ()):
        rows = await dialect.all(
            conn,
            f"select s.seq, {columns} from squash_members s join messages m"
            " on m.session_id = s.session_id and m.number = s.number"
            " where s.session_id = $1 and s.n = $2 order by s.seq",
            (session_id, n),
        )
        parts = render_parts([message_from_row(tuple(row)[1:]) for row in rows])
        starts = part_starts(parts)
        if rows:
            await dialect.run_many(
                conn,
                "update squash_members set at = $1 where session_id = $2 and n = $3 and seq = $4",
                [(at, session_id, n, row[0]) for at, row in zip(starts, rows, strict=True)],
            )
        chars = sum(len(part) for part in parts) + max(len(parts) - 1, 0)
        await dialect.run(
            conn,
            "update squashes set chars = $1 where session_id = $2 and n = $3",
            (chars, session_id, n),
        )
