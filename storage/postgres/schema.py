"""Numbered PostgreSQL schema migrations, recorded in table `schema_migrations`, applied at
start under an advisory lock so that instances starting together apply each exactly once.

Append only, as for SQLite (`storage.migrations`). Version 1 holds everything SQLite's schema
holds at its version 6 (tenants, current sessions per client, per-revision counters); the two
numberings are separate. Integers are `bigint` (message numbers, revisions and token counts
are Python ints), `live` stays 0/1 so `storage.rows` reads both backends' rows alike.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio

from frs.errors import StoreUnavailable
from storage.backfills import lay_out_originals
from storage.migrations import SchemaTooNew
from storage.postgres.dialect import POSTGRES
from storage.postgres.search import SEARCH_INDEX, index_messages, index_search

log = logging.getLogger(__name__)

#: Key of the session-level advisory lock migrations run under ("frs-mcp" in ASCII).
MIGRATION_LOCK = 0x6672732D6D6370

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the whole schema of SQLite version 6
        "create table sessions ("
        # Collation "C" where rows are ordered: code points, as SQLite and Python compare.
        ' id text collate "C" primary key,'
        " tenant text not null default 'local',"
        " title text not null,"
        " goal text not null default '',"
        " numbering text not null default 'position' check (numbering in ('position', 'absolute')),"
        " interface text,"
        " conversation text,"
        " revision bigint not null default 0,"
        " next_number bigint not null default 1,"
        " next_squash bigint not null default 1,"
        " live_count bigint not null default 0,"
        " live_tokens bigint not null default 0,"
        " live_system bigint not null default 0,"
        " live_user bigint not null default 0,"
        " live_assistant bigint not null default 0,"
        " live_tool bigint not null default 0,"
        " live_summary bigint not null default 0,"
        " recorded bigint not null default 0,"
        " recorded_tokens bigint not null default 0,"
        " created_at text not null,"
        ' updated_at text collate "C" not null)',
        "create unique index sessions_by_conversation on sessions (tenant, interface, conversation)"
        " where interface is not null",
        "create index sessions_by_update on sessions (tenant, updated_at)",
        "create table messages ("
        " id bigint generated always as identity primary key,"
        " session_id text not null references sessions (id) on delete cascade,"
        " number bigint,"
        " ord bigint not null,"
        " ord_last bigint not null,"
        " live integer not null check (live in (0, 1)),"
        " role text not null check (role in ('system', 'user', 'assistant', 'tool')),"
        " kind text not null check (kind in ('message', 'summary', 'thinking')),"
        " lane text not null,"
        " content text not null,"
        " name text,"
        " tool_calls text,"
        " tool_call_id text,"
        " answers bigint,"
        " run_id text,"
        " interface_message_id text,"
        " created_at text,"
        " sha256 text not null,"
        " tokens bigint not null,"
        " covered bigint not null default 1,"
        " squash_n bigint,"
        " squash_sha256 text)",
        "create unique index messages_by_number on messages (session_id, number)"
        " where number is not null",
        "create index messages_live on messages (session_id, ord) where live = 1",
        "create index messages_live_lane on messages (session_id, lane, ord) where live = 1",
        "create index messages_live_run on messages (session_id, run_id, ord)"
        " where live = 1 and run_id is not null",
        "create index messages_answers on messages (session_id, answers, number)"
        " where answers is not null",
        "create index messages_thinking on messages (session_id, ord) where kind = 'thinking'",
        "create table calls ("
        " session_id text not null references sessions (id) on delete cascade,"
        " call_id text not null,"
        " number bigint not null,"
        " primary key (session_id, call_id, number))",
        "create table blocks ("
        " session_id text not null references sessions (id) on delete cascade,"
        " block bigint not null,"
        " live bigint not null,"
        " primary key (session_id, block))",
        "create table squashes ("
        " session_id text not null references sessions (id) on delete cascade,"
        " n bigint not null,"
        " summary_number bigint not null,"
        " first_ord bigint not null,"
        " last_ord bigint not null,"
        " count bigint not null,"
        " covered bigint not null,"
        " tokens_before bigint not null,"
        " tokens_after bigint not null,"
        " sha256 text not null,"
        " summary text not null,"
        " created_at text not null,"
        " restored_at text,"
        " primary key (session_id, n))",
        "create table squash_members ("
        " session_id text not null,"
        " n bigint not null,"
        " seq bigint not null,"
        " number bigint not null,"
        " primary key (session_id, n, seq),"
        " foreign key (session_id, n) references squashes (session_id, n) on delete cascade)",
        "create index squash_members_by_number on squash_members (session_id, number)",
        "create table plan_steps ("
        " session_id text not null references sessions (id) on delete cascade,"
        " idx bigint not null,"
        " text text not null,"
        " status text not null check (status in ('todo', 'doing', 'done')),"
        " primary key (session_id, idx))",
        "create table checkpoints ("
        " id bigint generated always as identity primary key,"
        " session_id text not null references sessions (id) on delete cascade,"
        " name text not null,"
        " revision bigint not null,"
        " after_ord bigint not null,"
        " created_at text not null)",
        "create index checkpoints_by_session on checkpoints (session_id, id)",
        "create table changes ("
        " session_id text not null references sessions (id) on delete cascade,"
        " revision bigint not null,"
        " change text not null,"
        " created_at text not null,"
        " live_count bigint,"
        " live_tokens bigint,"
        " recorded bigint,"
        " recorded_tokens bigint,"
        " primary key (session_id, revision))",
        "create table current_sessions ("
        " tenant text not null,"
        " client text not null,"
        " session_id text not null references sessions (id) on delete cascade,"
        " primary key (tenant, client))",
        "create table sources ("
        " session_id text not null references sessions (id) on delete cascade,"
        ' alias text collate "C" not null,'  # code point order, as Python compares
        " kind text not null check (kind in ('text', 'file')),"
        " path text,"
        " display text,"
        " content text,"
        " sha256 text not null,"
        " chars bigint not null,"
        " lines bigint not null,"
        " created_at text not null,"
        " primary key (session_id, alias))",
        "create table focus_layers ("
        " session_id text not null references sessions (id) on delete cascade,"
        " n bigint not null,"
        " depth bigint not null,"
        " goal text not null,"
        " start_ord bigint not null,"
        " created_at text not null,"
        " closed_at text,"
        " squash_n bigint,"
        " primary key (session_id, n))",
        "create index focus_layers_open on focus_layers (session_id, n) where closed_at is null",
    ),
    (  # 2: SQLite's 7: where each squash member's part of the rendered originals starts, and
        # their length, so a get_alias page renders only the members it overlaps (BACKFILLS)
        "alter table squash_members add column at bigint not null default 0",
        "alter table squashes add column chars bigint not null default 0",
        "create index squash_members_at on squash_members (session_id, n, at)",
    ),
    (  # 3: SQLite's 8: a runtime's own item(s) a message was made from (JSON), as given
        "alter table messages add column raw text",
    ),
    (  # 4: SQLite's 9: the gateway's forwarded requests per session (JSON where SQL never reads)
        "create table gateway_calls ("
        " id bigint generated always as identity primary key,"
        " session_id text not null references sessions (id) on delete cascade,"
        " at text not null,"
        " wire text not null,"
        " sent_bytes bigint not null,"
        " sent_tokens bigint not null,"
        " forwarded_bytes bigint not null,"
        " forwarded_tokens bigint not null,"
        " applied text not null,"
        " sent text not null,"
        " nudges text not null)",
        "create index gateway_calls_by_session on gateway_calls (session_id, id)",
    ),
    (  # 5: a trigram index over every message's text, for search (PostgreSQL only: on
        # SQLite it cost every recording more than it saved, issue 23); pg_trgm may be
        # refused, so it is made by a function (BACKFILLS: `storage.postgres.search`)
    ),
    (  # 6: SQLite's 10: a conversation that asks the API to drop stale thinking, and the
        # squashes the gateway's autopilot made
        "alter table gateway_calls add column bound integer not null default 0",
        "alter table squashes add column automatic integer not null default 0",
    ),
    (  # 7: SQLite's 11: the host's own compactions of the history it sends
        "create table compactions ("
        " session_id text not null references sessions (id) on delete cascade,"
        " number bigint not null,"
        " sent_from bigint not null,"
        " first_key text,"
        " created_at text not null,"
        " primary key (session_id, number))",
    ),
    (  # 8: search's trigram index off the write path (issue 32): on `messages` it made a
        # 5-message step 3.5x slower. Each message's folded text goes to `search_texts`, whose
        # trigram index is kept by a task after the write commits
        # (`storage.postgres.indexer`); until then the message waits in `search_pending`,
        # which a trigger on `messages` fills in the writing statement, and search scans it.
        # The trigger and the index come where pg_trgm is allowed (BACKFILLS:
        # `storage.postgres.search.index_search`), and the index on `messages` goes.
        # No foreign key from `search_texts` to `messages`: its check locks each message row
        # it names, which doubled the indexing; a trigger forgets a deleted message instead.
        "create table search_texts ("
        " message_id bigint primary key,"
        " session_id text not null,"
        ' folded text collate "C" not null)',
        "create table search_pending (message_id bigint primary key)",
        "create function frs_search_pending() returns trigger language plpgsql as $$"
        " begin insert into search_pending (message_id) select id from recorded"
        " on conflict do nothing; return null; end $$",
        # The queue first: if the indexer holds the message, this waits for it to commit,
        # and the second statement then sees (and deletes) what it indexed.
        "create function frs_search_forget() returns trigger language plpgsql as $$"
        " begin delete from search_pending where message_id in (select id from removed);"
        " delete from search_texts where message_id in (select id from removed);"
        " return null; end $$",
    ),
    (  # 9: SQLite's 12: which gateway call of a conversation is settling (`frs.turns`)
        "create table gateway_turns ("
        " session_id text primary key references sessions (id) on delete cascade,"
        " holder text not null,"
        " until text not null)",
    ),
)


#: Data changes SQL alone cannot make, run after their migration's statements, in the same
#: transaction.
BACKFILLS: dict[int, Callable[[Any], Awaitable[object]]] = {
    2: partial(lay_out_originals, POSTGRES),
    5: index_messages,
    8: partial(index_search, warn=False),  # version 5 said already if pg_trgm was refused
}


async def _index_missing(conn: Any) -> bool:
    """Whether search's trigram index (version 8) is missing where it could be built: not on
    a standby, which gets it, or not, from its primary."""
    return bool(
        await conn.fetchval(
            f"select to_regclass('{SEARCH_INDEX}') is null and not pg_is_in_recovery()"
        )
    )


async def current_version(conn: Any) -> int:
    """The schema version, which must be the newest: for a reader that never writes."""
    found = 0
    if await conn.fetchval("select to_regclass('schema_migrations') is not null"):
        found = int(await conn.fetchval("select coalesce(max(version), 0) from schema_migrations"))
    if found > len(MIGRATIONS):
        raise SchemaTooNew(found=found, supported=len(MIGRATIONS))
    if found < len(MIGRATIONS):
        raise StoreUnavailable(
            f"the database has PostgreSQL schema version {found}; this viewer reads version "
            f"{len(MIGRATIONS)} and never writes, so it does not migrate: start the server on it "
            "once (frs-mcp --db URL), which migrates it, then open the viewer again."
        )
    return found


async def migrate(conn: Any) -> int:
    """Bring the schema to the newest version on this asyncpg connection; returns it.

    A schema already at the newest version is only read (a read-only standby opens). The
    advisory lock is the session-level kind, held across the migrations' own transactions and
    released on the way out (or when a crash drops the connection).
    """
    if await conn.fetchval("select to_regclass('schema_migrations') is not null"):
        found = int(await conn.fetchval("select coalesce(max(version), 0) from schema_migrations"))
        if found > len(MIGRATIONS):
            raise SchemaTooNew(found=found, supported=len(MIGRATIONS))
        if found == len(MIGRATIONS) and not await _index_missing(conn):
            return found
    await conn.execute("select pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute(
            "create table if not exists schema_migrations ("
            " version integer primary key, applied_at timestamptz not null default now())"
        )
        current = int(
            await conn.fetchval("select coalesce(max(version), 0) from schema_migrations")
        )
        if current > len(MIGRATIONS):
            raise SchemaTooNew(found=current, supported=len(MIGRATIONS))
        for version, statements in enumerate(MIGRATIONS[current:], start=current + 1):
            async with conn.transaction():
                for sql in statements:
                    await conn.execute(sql)
                if version in BACKFILLS:
                    await BACKFILLS[version](conn)
                await conn.execute("insert into schema_migrations (version) values ($1)", version)
        if current == len(MIGRATIONS) and await _index_missing(conn):
            # pg_trgm was refused when version 8 was applied: perhaps allowed by now.
            async with conn.transaction():
                if await index_search(conn):
                    log.info("built the trigram index for search (%s)", SEARCH_INDEX)
        return len(MIGRATIONS)
    finally:
        with anyio.CancelScope(shield=True):
            await conn.execute("select pg_advisory_unlock($1)", MIGRATION_LOCK)
