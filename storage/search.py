"""Sessions found by text on SQLite: `ThreadReader.search_sessions`.

The port's promise: a session of the tenant whose title or any message's text (live or
squashed) holds `text`, case-insensitive for ASCII letters only, LIKE's wildcards in `text`
matching themselves; newest first, at most `limit`. LIKE decides every answer. A query of 3
characters or more first asks the trigram index (`messages_search`, an FTS5 table over
`messages.content`, migration 10) which messages can hold it: every trigram of the query must
be in the message. The index folds case for more letters than ASCII, so what it returns is a
superset of what LIKE accepts, and the LIKE on each candidate gives exactly the scan's answer
while reading only the candidates instead of every message of the tenant.
"""

from __future__ import annotations

import re

import aiosqlite

from frs.model import Session
from storage.rows import SESSION_COLUMNS, session_from_row

#: Characters the trigram index needs of a query: shorter ones have no trigram to look up.
TRIGRAM = 3

_SELECT = f"select {SESSION_COLUMNS} from sessions s where s.tenant = ?1"
_ORDER = " order by updated_at desc, id limit ?3"
#: Every message of the tenant's sessions, one session at a time, until one holds the text.
SCAN = (
    f"{_SELECT} and (title like ?2 escape '\\' or exists (select 1 from messages m"
    f" where m.session_id = s.id and m.content like ?2 escape '\\')){_ORDER}"
)
#: The messages the index names, of the tenant's sessions (checked first: another tenant's
#: candidates cost a row read, never a LIKE over their text), each checked by LIKE.
INDEXED = (
    f"{_SELECT} and (title like ?2 escape '\\' or s.id in (select m.session_id"
    " from messages_search f join messages m on m.id = f.rowid"
    " where messages_search match ?4 and m.session_id in (select id from sessions"
    f" where tenant = ?1) and m.content like ?2 escape '\\')){_ORDER}"
)


def like_pattern(text: str) -> str:
    """`%text%` with LIKE's wildcards and its escape character escaped (`escape '\\'`)."""
    return "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"


def trigram_query(text: str) -> str | None:
    """The FTS5 query every message holding `text` matches: each distinct trigram of it,
    quoted, all required; None where the index cannot help (under 3 characters), or where
    LIKE reads something else than the text (it stops at U+0000, as the index does)."""
    if len(text) < TRIGRAM or "\x00" in text:
        return None
    grams = dict.fromkeys(text[i : i + TRIGRAM] for i in range(len(text) - TRIGRAM + 1))
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


async def search_sessions(
    conn: aiosqlite.Connection, tenant: str, text: str, limit: int
) -> list[Session]:
    """The port's `search_sessions` on `conn`, inside a read transaction someone else opened
    (`storage.db.read_bounded` bounds its time)."""
    pattern = like_pattern(text)
    query = trigram_query(text)
    if query is None:
        rows = await conn.execute_fetchall(SCAN, (tenant, pattern, limit))
    else:
        rows = await conn.execute_fetchall(INDEXED, (tenant, pattern, limit, query))
    return [session_from_row(row) for row in rows]
