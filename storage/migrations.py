"""Numbered schema migrations, applied at start and recorded in `PRAGMA user_version`.

Append only: never edit or reorder a shipped migration; fix forward with a new one. Each
migration and its version bump share one transaction, so a failure leaves the old version.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Protocol

import aiosqlite

from frs.model import ToolCall
from frs.text import estimate_tokens, message_body
from storage.backfills import lay_out_originals
from storage.dialect import SQLITE


class Migratable(Protocol):
    """What `migrate` needs of a database (`storage.db.Database` is one)."""

    async def user_version(self, conn: aiosqlite.Connection | None = None) -> int: ...
    def transaction(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...


_MESSAGE_COLUMNS_V1 = (
    "id, session_id, number, ord, ord_last, live, role, kind, lane, content, name, tool_calls,"
    " tool_call_id, answers, run_id, interface_message_id, created_at, sha256, tokens, covered,"
    " squash_n, squash_sha256"
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: sessions, messages, squashes, plans, checkpoints, the change log, the current session
        # One row per reasoning session. Counters are kept here, updated in the transaction that
        # changes them, so a view never counts rows.
        "create table sessions ("
        " id text primary key,"
        " title text not null,"
        " goal text not null default '',"
        " numbering text not null default 'position' check (numbering in ('position', 'absolute')),"
        " interface text,"  # with conversation: one session per conversation of an interface
        " conversation text,"
        " revision integer not null default 0,"  # +1 per committed change
        " next_number integer not null default 1,"  # permanent message numbers are never reused
        " next_squash integer not null default 1,"
        " live_count integer not null default 0,"  # numbered entries in the thread
        " live_tokens integer not null default 0,"
        " live_system integer not null default 0,"
        " live_user integer not null default 0,"
        " live_assistant integer not null default 0,"
        " live_tool integer not null default 0,"
        " live_summary integer not null default 0,"
        " recorded integer not null default 0,"  # original messages ever recorded
        " created_at text not null,"
        " updated_at text not null)",
        "create unique index sessions_by_conversation on sessions (interface, conversation)"
        " where interface is not null",
        "create index sessions_by_update on sessions (updated_at)",
        # Every message ever recorded, and every summary. Squashed ones stay (live = 0).
        # `ord` orders live entries: an original's number, or the first number a summary covers.
        "create table messages ("
        " id integer primary key,"
        " session_id text not null references sessions (id) on delete cascade,"
        " number integer,"  # null for thinking blocks, which are never numbered
        " ord integer not null,"
        " ord_last integer not null,"
        " live integer not null check (live in (0, 1)),"
        " role text not null check (role in ('system', 'user', 'assistant', 'tool')),"
        " kind text not null check (kind in ('message', 'summary', 'thinking')),"
        " lane text not null,"  # role, or 'summary': what role filters and counts see
        " content text not null,"
        " name text,"
        " tool_calls text,"  # JSON [{id, name, arguments}]
        " tool_call_id text,"
        " answers integer,"  # number of the message whose tool call this result answers
        " run_id text,"
        " interface_message_id text,"
        " created_at text not null,"
        " sha256 text not null,"
        " tokens integer not null,"
        " covered integer not null default 1,"  # originals a summary stands for
        " squash_n integer,"
        " squash_sha256 text)",
        "create unique index messages_by_number on messages (session_id, number)"
        " where number is not null",
        # The hot paths: last N, a window from a position, by role; all range scans.
        "create index messages_live on messages (session_id, ord) where live = 1",
        "create index messages_live_lane on messages (session_id, lane, ord) where live = 1",
        "create index messages_live_run on messages (session_id, run_id, ord)"
        " where live = 1 and run_id is not null",
        "create index messages_answers on messages (session_id, answers, number)"
        " where answers is not null",
        "create index messages_thinking on messages (session_id, ord) where kind = 'thinking'",
        # Tool call ids, to pair each result with the latest call that carries its id.
        "create table calls ("
        " session_id text not null references sessions (id) on delete cascade,"
        " call_id text not null,"
        " number integer not null,"
        " primary key (session_id, call_id, number)) without rowid",
        # Live entries per block of 1024 ords: positions become a short sum plus one bounded
        # scan instead of counting every earlier row.
        "create table blocks ("
        " session_id text not null references sessions (id) on delete cascade,"
        " block integer not null,"
        " live integer not null,"
        " primary key (session_id, block)) without rowid",
        "create table squashes ("
        " session_id text not null references sessions (id) on delete cascade,"
        " n integer not null,"  # alias SQ.n
        " summary_number integer not null,"
        " first_ord integer not null,"
        " last_ord integer not null,"
        " count integer not null,"
        " covered integer not null,"
        " tokens_before integer not null,"
        " tokens_after integer not null,"
        " sha256 text not null,"  # of the originals as get_alias renders them
        " summary text not null,"
        " created_at text not null,"
        " restored_at text,"
        " primary key (session_id, n)) without rowid",
        # The entries a squash replaced, in thread order (a member may be an earlier summary).
        "create table squash_members ("
        " session_id text not null,"
        " n integer not null,"
        " seq integer not null,"
        " number integer not null,"
        " primary key (session_id, n, seq),"
        " foreign key (session_id, n) references squashes (session_id, n) on delete cascade"
        ") without rowid",
        "create index squash_members_by_number on squash_members (session_id, number)",
        "create table plan_steps ("
        " session_id text not null references sessions (id) on delete cascade,"
        " idx integer not null,"
        " text text not null,"
        " status text not null check (status in ('todo', 'doing', 'done')),"
        " primary key (session_id, idx)) without rowid",
        "create table checkpoints ("
        " id integer primary key,"
        " session_id text not null references sessions (id) on delete cascade,"
        " name text not null,"
        " revision integer not null,"
        " after_ord integer not null,"
        " created_at text not null)",
        "create index checkpoints_by_session on checkpoints (session_id, id)",
        # One line per revision: what changed, for stale-revision errors and audits.
        "create table changes ("
        " session_id text not null references sessions (id) on delete cascade,"
        " revision integer not null,"
        " change text not null,"
        " created_at text not null,"
        " primary key (session_id, revision)) without rowid",
        # The session tools use when none is named; shared by every process on this file.
        "create table current_session ("
        " id integer primary key check (id = 1),"
        " session_id text references sessions (id) on delete set null)",
    ),
    (  # 2: context sources, short aliases for large artifacts (inline text or files by path)
        "create table sources ("
        " session_id text not null references sessions (id) on delete cascade,"
        " alias text not null,"  # PREFIX.name
        " kind text not null check (kind in ('text', 'file')),"
        " path text,"  # resolved absolute path; files are re-read and re-hashed on every use
        " display text,"  # the path relative to its allowed root, for views
        " content text,"  # inline sources only
        " sha256 text not null,"  # at registration: drift is a later read that differs
        " chars integer not null,"
        " lines integer not null,"
        " created_at text not null,"
        " primary key (session_id, alias)) without rowid",
    ),
    (  # 3: focus layers (a stack per session) and run lookups
        # A layer holds every entry from `start_ord` on while it is open; closing squashes it into
        # one summary in its parent. Open layers bound what compress_last and ranges may touch.
        "create table focus_layers ("
        " session_id text not null references sessions (id) on delete cascade,"
        " n integer not null,"
        " depth integer not null,"  # 1 for a layer opened in the main thread
        " goal text not null,"
        " start_ord integer not null,"
        " created_at text not null,"
        " closed_at text,"
        " squash_n integer,"  # the squash that closed it (null: closed empty, or still open)
        " primary key (session_id, n)) without rowid",
        "create index focus_layers_open on focus_layers (session_id, n) where closed_at is null",
    ),
    (  # 4: a message recorded without a time has none (it used to get the time of recording)
        # SQLite cannot drop a NOT NULL constraint, so the table is rebuilt the documented way
        # (https://sqlite.org/lang_altertable.html#otheralter): nothing references `messages`
        # by foreign key, and its indexes are made again after the rename.
        "create table messages_v4 ("
        " id integer primary key,"
        " session_id text not null references sessions (id) on delete cascade,"
        " number integer,"
        " ord integer not null,"
        " ord_last integer not null,"
        " live integer not null check (live in (0, 1)),"
        " role text not null check (role in ('system', 'user', 'assistant', 'tool')),"
        " kind text not null check (kind in ('message', 'summary', 'thinking')),"
        " lane text not null,"
        " content text not null,"
        " name text,"
        " tool_calls text,"
        " tool_call_id text,"
        " answers integer,"
        " run_id text,"
        " interface_message_id text,"
        " created_at text,"  # as the caller gave it; null when it gave none
        " sha256 text not null,"
        " tokens integer not null,"
        " covered integer not null default 1,"
        " squash_n integer,"
        " squash_sha256 text)",
        f"insert into messages_v4 ({_MESSAGE_COLUMNS_V1})"
        f" select {_MESSAGE_COLUMNS_V1} from messages",
        "drop table messages",
        "alter table messages_v4 rename to messages",
        "create unique index messages_by_number on messages (session_id, number)"
        " where number is not null",
        "create index messages_live on messages (session_id, ord) where live = 1",
        "create index messages_live_lane on messages (session_id, lane, ord) where live = 1",
        "create index messages_live_run on messages (session_id, run_id, ord)"
        " where live = 1 and run_id is not null",
        "create index messages_answers on messages (session_id, answers, number)"
        " where answers is not null",
        "create index messages_thinking on messages (session_id, ord) where kind = 'thinking'",
    ),
    (  # 5: token estimates by the calibrated estimator (see BACKFILLS); no schema change
    ),
    (  # 6: tenants own sessions; a current session per scope; figures per revision
        # Every session belongs to the tenant that created it; rows from before tenants were
        # the local tenant's (stdio, or HTTP with one token).
        "alter table sessions add column tenant text not null default 'local'",
        # Tokens of every original ever recorded: live_tokens against it is what squashing saved.
        "alter table sessions add column recorded_tokens integer not null default 0",
        "update sessions set recorded_tokens = (select coalesce(sum(m.tokens), 0) from messages m"
        " where m.session_id = sessions.id and m.kind = 'message' and m.number is not null)",
        "drop index sessions_by_conversation",
        "create unique index sessions_by_conversation on sessions (tenant, interface, conversation)"
        " where interface is not null",
        "drop index sessions_by_update",
        "create index sessions_by_update on sessions (tenant, updated_at)",
        # One current session per scope: a client (as it names itself) within a tenant.
        "create table current_sessions ("
        " tenant text not null,"
        " client text not null,"
        " session_id text not null references sessions (id) on delete cascade,"
        " primary key (tenant, client)) without rowid",
        # The one marker there was becomes the default client's: a runtime or a client that
        # does not name itself continues where it was.
        "insert into current_sessions (tenant, client, session_id)"
        " select 'local', 'default', session_id from current_session where session_id is not null",
        "drop table current_session",
        # The counters each revision left, for charts of what squashing saved (null before 6).
        "alter table changes add column live_count integer",
        "alter table changes add column live_tokens integer",
        "alter table changes add column recorded integer",
        "alter table changes add column recorded_tokens integer",
    ),
    (  # 7: where each squash member's part of the rendered originals starts, and their length
        # A get_alias page of a large squash renders only the members it overlaps (see
        # BACKFILLS for squashes made before).
        "alter table squash_members add column at integer not null default 0",
        "alter table squashes add column chars integer not null default 0",
        "create index squash_members_at on squash_members (session_id, n, at)",
    ),
    (  # 8: a runtime's own item(s) a message was made from (JSON), handed back as given: an
        # adapter (`runtimes`) returns reasoning items, ids and fields FRS has no column for.
        "alter table messages add column raw text",
    ),
    (  # 9: the gateway's forwarded requests per session: what the host sent and what went
        # upstream, and the squashes and reminders sent (JSON), which a restarted gateway reads
        # back from the newest row to render the same bytes (`server.gateway.recorder`).
        "create table gateway_calls ("
        " id integer primary key autoincrement,"
        " session_id text not null references sessions (id) on delete cascade,"
        " at text not null,"
        " wire text not null,"
        " sent_bytes integer not null,"
        " sent_tokens integer not null,"
        " forwarded_bytes integer not null,"
        " forwarded_tokens integer not null,"
        " applied text not null,"
        " sent text not null,"
        " nudges text not null)",
        "create index gateway_calls_by_session on gateway_calls (session_id, id)",
    ),
    (  # 10: the gateway's mid-loop squashes and its autopilot: a conversation that asked the
        # API to drop thinking a squash made stale asks on every later call (`bound`, read back
        # by a restarted gateway), and which squashes the autopilot made rather than a model
        "alter table gateway_calls add column bound integer not null default 0",
        "alter table squashes add column automatic integer not null default 0",
    ),
    (  # 11: a host's own compactions of the history it sends (Claude Code, Codex, OpenCode):
        # the entry holding its summary, where what the host sends starts from then on, and
        # the key its later requests begin with (`frs.host_threads`)
        "create table compactions ("
        " session_id text not null references sessions (id) on delete cascade,"
        " number integer not null,"
        " sent_from integer not null,"
        " first_key text,"
        " created_at text not null,"
        " primary key (session_id, number)) without rowid",
    ),
    (  # 12: which gateway call of a conversation is settling (its answer ended; its recording,
        # its row and the autopilot's batch are being written), whichever instance serves it:
        # the conversation's next request waits for it, and only its holder plans a batch
        # (`frs.turns`). `until` lets a turn whose instance died run out.
        "create table gateway_turns ("
        " session_id text primary key references sessions (id) on delete cascade,"
        " holder text not null,"
        " until text not null) without rowid",
    ),
)


#: `PRAGMA application_id` of every frs-mcp database ("FRSm"), stamped by `migrate`: another
#: application's SQLite file is told apart before anything is written to it.
APPLICATION_ID = 0x4652536D


class DatabaseRefused(Exception):
    """A database file frs-mcp will not open, left exactly as it was; the text says why."""


def foreign_reason(application_id: int, tables: set[str]) -> str | None:
    """Why a SQLite file is another application's, from its header's application_id and its
    tables; None when frs-mcp may open it (new, empty, or its own). The server refuses such a
    file, and the viewer says so in the same words rather than advise starting the server on it."""
    if application_id not in (0, APPLICATION_ID):
        return f"its application_id is 0x{application_id:08x}, not frs-mcp's"
    if application_id == 0 and tables and not {"sessions", "messages"} <= tables:
        # Not stamped: new, from an frs-mcp before the stamp, or another application's.
        shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        return f"it holds other tables ({shown})"
    return None


class ForeignDatabase(DatabaseRefused):
    def __init__(self, path: str, what: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is not an frs-mcp database: {what}. Nothing was changed. Point --db (or "
            "FRS_DB) at a new file name, or leave it out to use the default database."
        )


class SchemaTooNew(DatabaseRefused):
    def __init__(self, found: int, supported: int) -> None:
        self.found, self.supported = found, supported
        super().__init__(
            f"The database has schema version {found}, but this frs-mcp knows versions up to "
            f"{supported}. Nothing was changed. Upgrade frs-mcp, or use another --db file."
        )


async def _estimate_again(conn: aiosqlite.Connection) -> None:
    """Every message's `tokens` and every session's `live_tokens` by today's estimator (they
    were UTF-8 bytes / 4). Squashes keep the figures they were made with: a record."""
    rows = await conn.execute_fetchall("select id, kind, content, tool_calls from messages")
    updates = []
    for row_id, kind, content, calls in rows:
        tool_calls = (
            tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in json.loads(calls))
            if calls
            else ()
        )
        body = content if kind == "summary" else message_body(content, tool_calls)
        updates.append((estimate_tokens(body), row_id))
    await conn.executemany("update messages set tokens = ? where id = ?", updates)
    await conn.execute(
        "update sessions set live_tokens = (select coalesce(sum(tokens), 0) from messages m"
        " where m.session_id = sessions.id and m.live = 1)"
    )


#: Data changes SQL alone cannot make, run after their migration's statements, in the same
#: transaction.
BACKFILLS: dict[int, Callable[[aiosqlite.Connection], Awaitable[None]]] = {
    5: _estimate_again,
    7: partial(lay_out_originals, SQLITE),
}


async def migrate(db: Migratable) -> int:
    """Bring the schema to the newest version; returns the version reached."""
    current = await db.user_version()
    if current > len(MIGRATIONS):
        raise SchemaTooNew(found=current, supported=len(MIGRATIONS))
    for version, statements in enumerate(MIGRATIONS[current:], start=current + 1):
        async with db.transaction() as conn:
            # Another process may have migrated between our read and our write lock.
            if await db.user_version(conn) >= version:
                continue
            for sql in statements:
                await conn.execute(sql)
            if version in BACKFILLS:
                await BACKFILLS[version](conn)
            await conn.execute(f"pragma user_version = {version:d}")
    async with db.transaction() as conn:
        # New databases and those from before the stamp alike.
        async with conn.execute("pragma application_id") as cursor:
            row = await cursor.fetchone()
        if row is None or int(row[0]) != APPLICATION_ID:
            await conn.execute(f"pragma application_id = {APPLICATION_ID:d}")
    return await db.user_version()
