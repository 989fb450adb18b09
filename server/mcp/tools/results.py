"""What the tools answer: the reply text for the model, and the same text, first, in the
structured content beside the data for programs.

Hosts differ in what they hand the model: Gemini CLI and OpenCode give it the text content;
Claude Code and Codex CLI give it the structured content, as JSON, whenever there is some (with
or without an output schema). So every structured result opens with `message`, the reply text
itself (what changed, the new revision, how to read and undo a squash, the warnings), and a
model reads the same guidance whichever part its host forwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field, WithJsonSchema

from frs import Session, SessionId, SessionPage, Squashed, replies


class Reply(BaseModel):
    """Every structured result: `message` first, so a host that hands the model this JSON
    shows the guidance before the data."""

    message: str = Field(
        description="The reply text, as in the text content: what changed, the revision, "
        "the next calls (how to read and undo a squash) and any warnings."
    )


class Revision(Reply):
    session_id: str
    revision: int


# Published as plain arrays: a schema with `items` makes every client and the SDK validate each of
# a 1,000-message batch's 2,000 integers, which cost more than recording them.
_INTEGERS = WithJsonSchema({"type": "array", "description": "Integers, in recording order."})


class RecordOut(Revision):
    positions: Annotated[list[int], _INTEGERS] = Field(
        description="Positions the numbered messages got, in order (contiguous)."
    )
    numbers: Annotated[list[int], _INTEGERS] = Field(
        description="Their permanent numbers (aliases M.<number>), in order (contiguous)."
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="Pairing problems the batch was recorded with (a result for an unknown or "
        "already answered call, a call id made again), each naming messages[index] and the id.",
    )


class SquashDone(BaseModel):
    alias: str = Field(description="Alias of the originals, e.g. SQ.2@0b4f2d11.")
    position: int = Field(description="Where the summary sits now.")
    tokens_before: int
    tokens_after: int


class SquashOut(Revision):
    alias: str = Field(description="Alias of the originals, e.g. SQ.2@0b4f2d11.")
    position: int
    tokens_before: int
    tokens_after: int
    squashes: list[SquashDone] = Field(
        description="Every squash of the call, in the order given (one unless ranges=...)."
    )


class RestoreOut(Revision):
    first: int
    last: int


class SessionSummary(BaseModel):
    id: str
    title: str
    goal: str
    numbering: str
    entries: int = Field(description="Live entries in the thread now.")
    messages: int = Field(description="Original messages ever recorded.")
    revision: int
    created_at: str
    updated_at: str
    interface: str | None
    conversation: str | None
    current: bool = Field(description="Whether tools without session_id use this session.")


class SessionOut(Reply):
    """What `frs_session` did, for programs; `session_id` is set for every action."""

    action: str
    session_id: str | None = Field(
        description="start/use/info: the session acted on; list: the current session (null "
        "when none is set)."
    )
    revision: int | None = Field(default=None, description="start/use/info: its revision.")
    created: bool | None = Field(
        default=None, description="start: false when get-or-create resumed a conversation."
    )
    session: SessionSummary | None = Field(default=None, description="start/use/info.")
    sessions: list[SessionSummary] | None = Field(default=None, description="list: this page.")
    total: int | None = Field(default=None, description="list: sessions in all.")
    offset: int | None = Field(default=None, description="list: this page's offset.")
    next_offset: int | None = Field(
        default=None, description="list: the offset of the next page; null on the last page."
    )
    scope: str | None = Field(
        default=None,
        description="The caller's scope: whose current session tools without session_id use.",
    )


def result(data: Reply) -> CallToolResult:
    """The reply text as the text content, and the whole result, `message` first, as the
    structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=data.message)], structured_content=data.model_dump()
    )


def summary_of(session: Session, current: SessionId | None) -> SessionSummary:
    return SessionSummary(
        id=session.id,
        title=session.title,
        goal=session.goal,
        numbering=session.numbering,
        entries=session.live_count,
        messages=session.recorded,
        revision=session.revision,
        created_at=session.created_at,
        updated_at=session.updated_at,
        interface=session.interface,
        conversation=session.conversation,
        current=session.id == current,
    )


def session_result(
    text: str,
    action: str,
    session: Session,
    current: bool,
    scope: str,
    created: bool | None = None,
) -> CallToolResult:
    out = SessionOut(
        message=text,
        action=action,
        session_id=session.id,
        revision=session.revision,
        created=created,
        session=summary_of(session, session.id if current else None),
        scope=scope,
    )
    return result(out)


def session_page(text: str, page: SessionPage, scope: str) -> SessionOut:
    return SessionOut(
        message=text,
        action="list",
        session_id=page.current,
        sessions=[summary_of(s, page.current) for s in page.sessions],
        total=page.total,
        offset=page.offset,
        next_offset=page.next_offset,
        scope=scope,
    )


def squash_result(done: Squashed | Sequence[Squashed]) -> CallToolResult:
    squashes = [done] if isinstance(done, Squashed) else list(done)
    first = squashes[0]
    out = SquashOut(
        message="\n".join(replies.squashed(s) for s in squashes),
        session_id=first.session_id,
        revision=first.revision,
        alias=first.squash.alias,
        position=first.position,
        tokens_before=first.squash.tokens_before,
        tokens_after=first.squash.tokens_after,
        squashes=[
            SquashDone(
                alias=s.squash.alias,
                position=s.position,
                tokens_before=s.squash.tokens_before,
                tokens_after=s.squash.tokens_after,
            )
            for s in squashes
        ],
    )
    return result(out)
