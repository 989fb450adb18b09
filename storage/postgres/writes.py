"""Writes PostgreSQL makes in fewer statements than the shared core (`storage.writes`).

Every statement is a round trip to the server (SQLite's run in the process), so the writes on
every recording's path go in one each: a batch's messages, its tool calls and its block counts
in one statement of rows given as arrays (`unnest`: one statement however many rows, where a
statement per row cost a third more), and a session saved with its change-log line in one.
What they write is the shared core's, row for row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from frs.model import CallRecord, Message, Session, SessionId
from storage.blocks import block_shifts
from storage.postgres.text import encode_text
from storage.rows import (
    CHANGE_COLUMNS,
    MESSAGE_ROW_COLUMNS,
    SESSION_NAMES,
    change_to_row,
    message_to_row,
    session_to_row,
)
from storage.writes import StoreTx

#: The type of each of `MESSAGE_ROW_COLUMNS`, as schema version 1 declares it.
MESSAGE_TYPES = (
    "text", "bigint", "bigint", "bigint", "integer", "text", "text", "text", "text", "text",
    "text", "text", "bigint", "text", "text", "text", "text", "bigint", "bigint", "bigint",
    "text", "text",
)  # fmt: skip
#: The type of each of `CHANGE_COLUMNS`.
CHANGE_TYPES = ("bigint", "text", "text", "bigint", "bigint", "bigint", "bigint")


def _arrays(types: Sequence[str], first: int) -> str:
    """`unnest` of one array parameter per type, from `$first` on."""
    return ", ".join(f"${mark}::{kind}[]" for mark, kind in enumerate(types, start=first))


_M = len(MESSAGE_TYPES)
#: The messages (`$1`..`$_M`, a column each), the tool calls (`$_M+2`, `$_M+3`) and the block
#: shifts (`$_M+4`, `$_M+5`) of the session `$_M+1`, in one statement.
INSERT_MESSAGES = (
    f"with recorded as (insert into messages ({MESSAGE_ROW_COLUMNS})"
    f" select * from unnest({_arrays(MESSAGE_TYPES, 1)})),"
    f" called as (insert into calls (session_id, call_id, number) select ${_M + 1}, *"
    f" from unnest({_arrays(('text', 'bigint'), _M + 2)}) on conflict do nothing)"
    f" insert into blocks (session_id, block, live) select ${_M + 1}, *"
    f" from unnest({_arrays(('bigint', 'bigint'), _M + 4)})"
    " on conflict (session_id, block) do update set live = blocks.live + excluded.live"
)
#: Where each column `save_session` writes stands in `session_to_row`: all but id and tenant.
_SAVED = [i for i, name in enumerate(SESSION_NAMES) if name not in ("id", "tenant")]
#: The session's row (`$1`.. by `_SAVED`, its id after them) and its change-log line.
SAVE_SESSION = (
    "with saved as (update sessions set "
    + ", ".join(f"{SESSION_NAMES[i]} = ${mark}" for mark, i in enumerate(_SAVED, start=1))
    + f" where id = ${len(_SAVED) + 1} returning id)"
    f" insert into changes (session_id, {CHANGE_COLUMNS}) select id, "
    + ", ".join(f"${mark}::{kind}" for mark, kind in enumerate(CHANGE_TYPES, len(_SAVED) + 2))
    + " from saved"
)


#: The latest call of each id in `$2` and its first answer, one index lookup per id (the shared
#: statement's `= any` let the planner read every call of the session, 14 ms a batch, growing
#: with the thread).
LATEST_CALLS = (
    "select ids.call_id, latest.number, (select min(m.number) from messages m"
    " where m.session_id = $1 and m.answers = latest.number and m.tool_call_id = ids.call_id)"
    " from unnest($2::text[]) as ids (call_id) cross join lateral (select max(number) as number"
    " from calls where session_id = $1 and call_id = ids.call_id) as latest"
    " where latest.number is not null"
)


def _column(values: Sequence[Any]) -> list[Any]:
    """One column as an array parameter: text escaped as the connection's codec would (array
    elements bypass it, `storage.postgres.text`), looked for in one pass over the column."""
    texts = [v for v in values if isinstance(v, str)]
    joined = "".join(texts)
    if not texts or ("\x00" not in joined and "\ue000" not in joined):
        return list(values)
    return [encode_text(v) if isinstance(v, str) else v for v in values]


class PgWrites(StoreTx):
    """The shared core's writes, those on a recording's path in one statement each."""

    async def latest_calls(
        self, session_id: SessionId, call_ids: Sequence[str]
    ) -> dict[str, CallRecord]:
        if not call_ids:
            return {}
        rows = await self._all(LATEST_CALLS, session_id, _column(list(dict.fromkeys(call_ids))))
        return {row[0]: CallRecord(row[1], row[2]) for row in rows}

    async def insert_messages(self, session_id: SessionId, messages: Sequence[Message]) -> None:
        if not messages:
            return
        rows = [message_to_row(session_id, m) for m in messages]
        calls = [(call.id, m.number) for m in messages for call in m.tool_calls if m.number]
        shifts = block_shifts((m.ord, 1) for m in messages if m.live)
        await self._run(
            INSERT_MESSAGES,
            *(_column(column) for column in zip(*rows, strict=True)),
            session_id,
            _column([call_id for call_id, _ in calls]),
            [number for _, number in calls],
            [block for block, _ in shifts],
            [delta for _, delta in shifts],
        )

    async def save_session(self, session: Session, change: str) -> None:
        row = session_to_row(session)
        await self._run(
            SAVE_SESSION, *(row[i] for i in _SAVED), session.id, *change_to_row(session, change)
        )
