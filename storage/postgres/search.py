"""Sessions found by text on PostgreSQL: `ThreadReader.search_sessions`, and the trigram
index it uses.

The port's promise, as SQLite's scan keeps it (`storage.dialect`): title or any message's text
holds `text`, case-insensitive for ASCII letters only (`lower` under collation "C" folds A-Z and
nothing else, byte by byte; ILIKE would fold every letter the locale knows, and `translate`,
which folded before, costs ten times as much), LIKE's wildcards matching themselves, newest
first, at most `limit`. LIKE decides every answer. Where the query has a trigram pg_trgm can
look up (3 letters or digits in a row) and the index `messages_search` exists, it is a GIN
trigram index over the folded text (schema version 5), and PostgreSQL reads only the messages it
names, rechecking each with the same LIKE. Without pg_trgm (`CREATE EXTENSION` refused) the
index is missing and every search is the bounded scan it was.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from frs.model import Session
from storage.dialect import like_pattern as like_pattern  # the pattern SQLite's scan uses too
from storage.rows import SESSION_COLUMNS, session_from_row

log = logging.getLogger(__name__)

#: The folded text, spelled the same in the index and the query (PostgreSQL uses an
#: expression index only for the expression as written).
FOLDED_CONTENT = 'lower(content collate "C")'
#: pg_trgm takes trigrams from words (letters and digits); a query with no 3 of them in a row
#: gives it none, and the index would then name every message.
_WORD_TRIGRAM = re.compile(r"[^\W_]{3}")

_SELECT = f"select {SESSION_COLUMNS} from sessions s where s.tenant = $1"
_TITLE = 'lower(s.title collate "C") like $2'
_ORDER = " order by updated_at desc, id limit $3"
#: Every message of the tenant's sessions, one session at a time, until one holds the text.
SCAN = (
    f"{_SELECT} and ({_TITLE} or exists (select 1 from messages m where m.session_id = s.id"
    f" and {FOLDED_CONTENT} like $2)){_ORDER}"
)
#: The messages the index names (a bitmap scan of `messages_search`, LIKE rechecked on each),
#: their sessions, the tenant's only.
INDEXED = (
    f"{_SELECT} and ({_TITLE} or s.id in (select m.session_id from messages m"
    " where m.session_id in (select id from sessions where tenant = $1)"
    f" and {FOLDED_CONTENT} like $2)){_ORDER}"
)
_HAS_INDEX = "select to_regclass('messages_search') is not null"


def uses_index(text: str) -> bool:
    """Whether pg_trgm can narrow a search for `text` (at least one word trigram)."""
    return _WORD_TRIGRAM.search(text) is not None


async def search_sessions(conn: Any, tenant: str, text: str, limit: int) -> list[Session]:
    """The port's `search_sessions` on asyncpg connection `conn`, inside a read transaction
    someone else opened (`PgDatabase.searching` sets its statement timeout)."""
    pattern = like_pattern(text)
    if not (uses_index(text) and await conn.fetchval(_HAS_INDEX)):
        rows = await conn.fetch(SCAN, tenant, pattern, limit)
    else:
        async with reading_index(conn):
            rows = await conn.fetch(INDEXED, tenant, pattern, limit)
    return [session_from_row(row) for row in rows]


@asynccontextmanager
async def reading_index(conn: Any) -> AsyncIterator[None]:
    """Statements that read `messages` through the index rather than whole. The planner
    prices a sequential scan by the table's pages, and long texts live out of them (TOAST),
    nor does it count the cost of `translate` and LIKE over each text: it picks a scan of
    every message where the index reads a handful. Within the caller's transaction only (a
    failed statement aborts it, and the setting goes with it: nothing to put back)."""
    await conn.execute("set local enable_seqscan = off")
    yield
    await conn.execute("set local enable_seqscan = on")


async def index_messages(conn: Any) -> bool:
    """Create pg_trgm (if this role may) and the trigram index `messages_search`, inside the
    caller's transaction; whether the index stands. A refused `CREATE EXTENSION` (the role
    lacks CREATE on the database, or the server lacks the contrib package) is logged in one
    line and leaves search scanning, as before the index; the caller's transaction goes on."""
    import asyncpg

    try:
        async with conn.transaction():  # a savepoint: a refusal must not abort the caller's
            await conn.execute("create extension if not exists pg_trgm")
    except asyncpg.PostgresError as exc:
        log.warning(
            "search scans every message (no trigram index): CREATE EXTENSION pg_trgm was"
            " refused (%s); run it as a role with CREATE on this database, and the next start"
            " builds the index",
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        )
        return False
    await conn.execute(
        "create index if not exists messages_search on messages"
        f" using gin ({FOLDED_CONTENT} gin_trgm_ops)"
    )
    return True
