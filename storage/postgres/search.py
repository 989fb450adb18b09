"""Sessions found by text on PostgreSQL: `ThreadReader.search_sessions`, and the trigram
index it uses.

The port's promise, as SQLite's scan keeps it (`storage.dialect`): title or any message's text
holds `text`, case-insensitive for ASCII letters only (`lower` under collation "C" folds A-Z and
nothing else, byte by byte; ILIKE would fold every letter the locale knows, and `translate`,
which folded before, costs ten times as much), LIKE's wildcards matching themselves, newest
first, at most `limit`. LIKE decides every answer. Where the query has a trigram pg_trgm can
look up (3 letters or digits in a row) and the index `search_texts_trigrams` exists, it is a GIN
trigram index over the folded texts of `search_texts` (schema version 8), and PostgreSQL reads
only the messages it names, rechecking each with the same LIKE, and scans the few messages not
in it yet: those in `search_pending`, which a trigger fills as messages are recorded and
`storage.postgres.indexer` empties into `search_texts` after the write, off its path. Without
pg_trgm (`CREATE EXTENSION` refused) there is neither index nor trigger, and every search is
the bounded scan it was.
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
#: The trigram index search reads (schema version 8), over `search_texts.folded`.
SEARCH_INDEX = "search_texts_trigrams"
#: The triggers on `messages` that keep the search tables (schema version 8): a recorded
#: message is queued for the index, a deleted one forgotten by both.
TRIGGERS = (
    ("messages_searched", "insert", "new table as recorded", "frs_search_pending"),
    ("messages_unsearched", "delete", "old table as removed", "frs_search_forget"),
)
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
_TENANTS = "session_id in (select id from sessions where tenant = $1)"
#: The messages the index names (a bitmap scan of `search_texts_trigrams`, LIKE rechecked on
#: each) and those waiting to be indexed (scanned), their sessions, the tenant's only.
INDEXED = (
    f"{_SELECT} and ({_TITLE} or s.id in (select t.session_id from search_texts t"
    f" where t.{_TENANTS} and t.folded like $2"
    " union all select m.session_id from search_pending p join messages m on m.id = p.message_id"
    f" where m.{_TENANTS} and {FOLDED_CONTENT} like $2)){_ORDER}"
)
_HAS_INDEX = f"select to_regclass('{SEARCH_INDEX}') is not null"


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


async def _trigrams(conn: Any, warn: bool) -> bool:
    """Create pg_trgm if this role may, inside the caller's transaction; whether it is there.
    A refused `CREATE EXTENSION` (the role lacks CREATE on the database, or the server lacks
    the contrib package) is logged in one line (if `warn`), and the caller's transaction goes
    on."""
    import asyncpg

    try:
        async with conn.transaction():  # a savepoint: a refusal must not abort the caller's
            await conn.execute("create extension if not exists pg_trgm")
    except asyncpg.PostgresError as exc:
        if warn:
            log.warning(
                "search scans every message (no trigram index): CREATE EXTENSION pg_trgm was"
                " refused (%s); run it as a role with CREATE on this database, and the next"
                " start builds the index",
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            )
        return False
    return True


async def index_messages(conn: Any) -> bool:
    """Schema version 5: pg_trgm and the trigram index `messages_search` on `messages` (its
    statements as shipped; version 8 replaces the index), inside the caller's transaction;
    whether the index stands."""
    if not await _trigrams(conn, warn=True):
        return False
    await conn.execute(
        "create index if not exists messages_search on messages"
        f" using gin ({FOLDED_CONTENT} gin_trgm_ops)"
    )
    return True


async def index_search(conn: Any, warn: bool = True) -> bool:
    """Schema version 8, inside the caller's transaction: pg_trgm (if this role may), the
    trigram index `search_texts_trigrams`, the triggers that queue every recorded message in
    `search_pending` and forget a deleted one (`TRIGGERS`), every message not yet indexed
    queued (`storage.postgres.indexer` indexes them after start), and the index on `messages`
    dropped; whether the index stands. Without pg_trgm nothing changes: search scans, and the
    next start tries again."""
    if not await _trigrams(conn, warn):
        return False
    await conn.execute(
        f"create index if not exists {SEARCH_INDEX} on search_texts using gin (folded gin_trgm_ops)"
    )
    # The trigger's lock on `messages` waits for the writes under way: each message is
    # either queued below or by the trigger.
    for name, event, table, function in TRIGGERS:
        await conn.execute(f"drop trigger if exists {name} on messages")
        await conn.execute(
            f"create trigger {name} after {event} on messages referencing {table}"
            f" for each statement execute function {function}()"
        )
    await conn.execute(
        "insert into search_pending (message_id) select id from messages m"
        " where not exists (select 1 from search_texts t where t.message_id = m.id)"
        " on conflict do nothing"
    )
    await conn.execute("drop index if exists messages_search")
    return True
