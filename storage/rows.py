"""Rows to domain values and back; the only place that knows column order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any, cast

from frs.model import (
    Change,
    Checkpoint,
    Compaction,
    FocusLayer,
    GatewayCall,
    Kind,
    Message,
    Nudge,
    Numbering,
    PlanStep,
    Role,
    Session,
    SessionId,
    Source,
    Squash,
    StepStatus,
    ToolCall,
)
from frs.raw import Raw, fold, unfold

Row = Sequence[Any]

SESSION_COLUMNS = (
    "id, title, goal, numbering, interface, conversation, revision, next_number, next_squash,"
    " live_count, live_tokens, live_system, live_user, live_assistant, live_tool, live_summary,"
    " recorded, created_at, updated_at, tenant, recorded_tokens"
)
#: The same names one by one, in the order of `session_to_row` and `session_from_row`.
SESSION_NAMES = tuple(name.strip() for name in SESSION_COLUMNS.split(","))
#: The message columns a backfill of a migration before 8 may read (`raw` came with 8);
#: `message_from_row` reads a row of these as a message without a raw item.
MESSAGE_COLUMNS_V7 = (
    "number, ord, ord_last, live, role, kind, content, name, tool_calls, tool_call_id, answers,"
    " run_id, interface_message_id, created_at, sha256, tokens, covered, squash_n, squash_sha256"
)
MESSAGE_COLUMNS = MESSAGE_COLUMNS_V7 + ", raw"
SQUASH_COLUMNS = (
    "n, summary_number, first_ord, last_ord, count, covered, tokens_before, tokens_after, sha256,"
    " created_at, restored_at, summary, chars, automatic"
)
#: What a new squash writes, in the order of `squash_to_row`: all but `restored_at`, which
#: a restore sets.
NEW_SQUASH_COLUMNS = SQUASH_COLUMNS.replace(" restored_at,", "")
SOURCE_COLUMNS = "alias, kind, path, display, content, sha256, chars, lines, created_at"
LANE_COLUMNS = ("system", "user", "assistant", "tool", "summary")


@cache
def qualified(columns: str, table: str) -> str:
    """`columns` (one of the lists above) with each name prefixed by `table.`, for joins."""
    return ", ".join(f"{table}.{name.strip()}" for name in columns.split(","))


def session_from_row(row: Row) -> Session:
    return Session(
        id=SessionId(row[0]),
        title=row[1],
        goal=row[2],
        numbering=cast(Numbering, row[3]),
        interface=row[4],
        conversation=row[5],
        revision=row[6],
        next_number=row[7],
        next_squash=row[8],
        live_count=row[9],
        live_tokens=row[10],
        lanes=dict(zip(LANE_COLUMNS, row[11:16], strict=True)),
        recorded=row[16],
        created_at=row[17],
        updated_at=row[18],
        tenant=row[19],
        recorded_tokens=row[20],
    )


def session_to_row(session: Session) -> tuple[Any, ...]:
    lanes = tuple(session.lanes.get(lane, 0) for lane in LANE_COLUMNS)
    return (
        session.id,
        session.title,
        session.goal,
        session.numbering,
        session.interface,
        session.conversation,
        session.revision,
        session.next_number,
        session.next_squash,
        session.live_count,
        session.live_tokens,
        *lanes,
        session.recorded,
        session.created_at,
        session.updated_at,
        session.tenant,
        session.recorded_tokens,
    )


CHANGE_COLUMNS = "revision, change, created_at, live_count, live_tokens, recorded, recorded_tokens"


def change_to_row(session: Session, change: str) -> tuple[Any, ...]:
    """The line of CHANGE_COLUMNS that saving `session` logs: the counters it leaves."""
    return (
        session.revision,
        change,
        session.updated_at,
        session.live_count,
        session.live_tokens,
        session.recorded,
        session.recorded_tokens,
    )


def change_from_row(row: Row) -> Change:
    return Change(*row)


def calls_to_json(calls: Sequence[ToolCall]) -> str | None:
    if not calls:
        return None
    return json.dumps(
        [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False
    )


def newest_from_row(row: Row) -> Message | Raw:
    """A row of MESSAGE_COLUMNS: its raw items as stored when it has them, else the message."""
    raw: str | None = row[19]
    return Raw(raw, row[6]) if raw is not None else message_from_row(row)


def message_from_row(row: Row) -> Message:
    calls = (
        tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in json.loads(row[8]))
        if row[8]
        else ()
    )
    return Message(
        number=row[0],
        ord=row[1],
        ord_last=row[2],
        live=bool(row[3]),
        role=cast(Role, row[4]),
        kind=cast(Kind, row[5]),
        content=row[6],
        name=row[7],
        tool_calls=calls,
        tool_call_id=row[9],
        answers=row[10],
        run_id=row[11],
        interface_message_id=row[12],
        created_at=row[13],
        sha256=row[14],
        tokens=row[15],
        covered=row[16],
        squash_n=row[17],
        squash_sha256=row[18],
        # Stored folded (frs.raw): the content is not kept twice.
        raw=unfold(row[19], row[6]) if len(row) > 19 and row[19] is not None else None,
    )


#: The columns `message_to_row` fills: the session's id, the message's, and its lane.
MESSAGE_ROW_COLUMNS = (
    "session_id, number, ord, ord_last, live, role, kind, lane, content, name, tool_calls,"
    " tool_call_id, answers, run_id, interface_message_id, created_at, sha256, tokens, covered,"
    " squash_n, squash_sha256, raw"
)


def message_to_row(session_id: str, m: Message) -> tuple[Any, ...]:
    return (
        session_id,
        m.number,
        m.ord,
        m.ord_last,
        int(m.live),
        m.role,
        m.kind,
        m.lane,
        m.content,
        m.name,
        calls_to_json(m.tool_calls),
        m.tool_call_id,
        m.answers,
        m.run_id,
        m.interface_message_id,
        m.created_at,
        m.sha256,
        m.tokens,
        m.covered,
        m.squash_n,
        m.squash_sha256,
        fold(m.raw, m.content) if m.raw is not None else None,
    )


def squash_from_row(row: Row) -> Squash:
    return Squash(
        n=row[0],
        summary_number=row[1],
        first=row[2],
        last=row[3],
        count=row[4],
        covered=row[5],
        tokens_before=row[6],
        tokens_after=row[7],
        sha256=row[8],
        created_at=row[9],
        restored=row[10] is not None,
        summary=row[11],
        chars=row[12],
        automatic=bool(row[13]),
    )


def squash_to_row(squash: Squash) -> tuple[Any, ...]:
    """The values of NEW_SQUASH_COLUMNS."""
    return (
        squash.n,
        squash.summary_number,
        squash.first,
        squash.last,
        squash.count,
        squash.covered,
        squash.tokens_before,
        squash.tokens_after,
        squash.sha256,
        squash.created_at,
        squash.summary,
        squash.chars,
        int(squash.automatic),
    )


def step_from_row(row: Row) -> PlanStep:
    return PlanStep(text=row[0], status=cast(StepStatus, row[1]))


CHECKPOINT_COLUMNS = "name, revision, after_ord, created_at"
COMPACTION_COLUMNS = "number, sent_from, created_at, first_key"


def compaction_from_row(row: Row) -> Compaction:
    return Compaction(number=row[0], sent_from=row[1], created_at=row[2], first_key=row[3])


def compaction_to_row(compaction: Compaction) -> tuple[Any, ...]:
    return (compaction.number, compaction.sent_from, compaction.created_at, compaction.first_key)


def checkpoint_from_row(row: Row) -> Checkpoint:
    return Checkpoint(name=row[0], revision=row[1], after_ord=row[2], created_at=row[3])


def checkpoint_to_row(checkpoint: Checkpoint) -> tuple[Any, ...]:
    return (checkpoint.name, checkpoint.revision, checkpoint.after_ord, checkpoint.created_at)


def source_from_row(row: Row) -> Source:
    return Source(
        alias=row[0],
        kind=row[1],
        path=row[2],
        display=row[3],
        text=row[4],
        sha256=row[5],
        chars=row[6],
        lines=row[7],
        created_at=row[8],
    )


def source_to_row(source: Source) -> tuple[Any, ...]:
    return (
        source.alias,
        source.kind,
        source.path,
        source.display,
        source.text,
        source.sha256,
        source.chars,
        source.lines,
        source.created_at,
    )


LAYER_COLUMNS = "n, depth, goal, start_ord, created_at, closed_at, squash_n"


def layer_from_row(row: Row) -> FocusLayer:
    return FocusLayer(
        n=row[0],
        depth=row[1],
        goal=row[2],
        start_ord=row[3],
        created_at=row[4],
        closed_at=row[5],
        squash_n=row[6],
    )


def layer_to_row(layer: FocusLayer) -> tuple[Any, ...]:
    return (
        layer.n,
        layer.depth,
        layer.goal,
        layer.start_ord,
        layer.created_at,
        layer.closed_at,
        layer.squash_n,
    )


CALL_COLUMNS = (
    "at, wire, sent_bytes, sent_tokens, forwarded_bytes, forwarded_tokens, applied, sent, nudges,"
    " bound"
)


def call_to_row(call: GatewayCall) -> tuple[Any, ...]:
    """The row of a gateway call: its squashes and reminders as JSON, which SQL never reads."""
    return (
        call.at,
        call.wire,
        call.sent_bytes,
        call.sent_tokens,
        call.forwarded_bytes,
        call.forwarded_tokens,
        json.dumps(list(call.applied)),
        json.dumps([[n, mark] for n, mark in call.sent], ensure_ascii=False),
        json.dumps([[u.after, u.text, u.level] for u in call.nudges], ensure_ascii=False),
        int(call.bound),
    )


def call_from_row(row: Row) -> GatewayCall:
    return GatewayCall(
        at=row[0],
        wire=row[1],
        sent_bytes=row[2],
        sent_tokens=row[3],
        forwarded_bytes=row[4],
        forwarded_tokens=row[5],
        applied=tuple(int(n) for n in json.loads(row[6])),
        sent=tuple((int(n), str(mark)) for n, mark in json.loads(row[7])),
        nudges=tuple(Nudge(str(a), str(t), int(lv)) for a, t, lv in json.loads(row[8])),
        bound=bool(row[9]),
    )
