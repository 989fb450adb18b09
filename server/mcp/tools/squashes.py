"""Distilling the thread: squashes, restores and focus layers."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from frs import focus, replies, squashes
from server.mcp.deps import DepsContext, env_of
from server.mcp.errors import tool_errors
from server.mcp.live import Change, changed, creates
from server.mcp.tools.arguments import (
    FROM_ONE,
    SUMMARY,
    NumberingArg,
    RangeIn,
    RevisionArg,
    SessionArg,
    choices,
    numbering_of,
    ranges_asked,
    session_of,
)
from server.mcp.tools.results import RestoreOut, Revision, SquashOut, result, squash_result


async def frs_compress_range(
    ctx: DepsContext,
    from_: Annotated[
        int | None,
        Field(
            validation_alias="from",
            description="First position (or number) to squash.",
            json_schema_extra=FROM_ONE,
        ),
    ] = None,
    to: Annotated[
        int | None,
        Field(
            description="Last position (or number) to squash, inclusive.",
            json_schema_extra=FROM_ONE,
        ),
    ] = None,
    summary: Annotated[
        str | None,
        Field(
            description="Your summary; it replaces the range in the view.",
            json_schema_extra=SUMMARY,
        ),
    ] = None,
    ranges: Annotated[
        list[RangeIn] | None,
        Field(
            description="Instead of from/to/summary: several non-overlapping ranges, each "
            "with its summary, all named as in the view you read; squashed all or none, "
            "in one revision.",
            max_length=100,
        ),
    ] = None,
    numbering: NumberingArg = None,
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, SquashOut]:
    """Squash (compress, summarize) entries from..to into your summary; originals are kept.

    Use it when a stretch (a finished investigation, long tool output) matters only for its
    result. Keep decisions, numbers, file names and open questions in the summary. A range
    may not separate a tool call from its result. Undo with frs_restore. To squash several
    stretches of one view, pass ranges=[{from, to, summary}, ...]: one call, one revision.
    Example: frs_compress_range(from=3, to=9, summary="Ran the suite 20x: test_sync fails
      4/20 with 3 != 4; race in Syncer.flush", expected_revision=12)
    """
    asked = ranges_asked(from_, to, summary, ranges)
    with tool_errors():
        new = await creates(ctx, session_id)
        done = await squashes.compress_ranges(
            env_of(ctx), asked, numbering_of(numbering), session_of(session_id), expected_revision
        )
    await changed(ctx, done[0].session_id, Change.SQUASHED, new)
    return squash_result(done)


async def frs_compress_last(
    ctx: DepsContext,
    count: Annotated[
        int,
        Field(description="How many of the newest entries to squash.", json_schema_extra=FROM_ONE),
    ],
    summary: Annotated[str, Field(description="Your summary of them.", json_schema_extra=SUMMARY)],
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, SquashOut]:
    """Squash (compress) the last `count` entries of the thread into your summary.

    Use it right after finishing a step whose details you will not need verbatim.
    Example: frs_compress_last(count=6, summary="Installed deps; build passes.")
    """
    with tool_errors():
        new = await creates(ctx, session_id)
        done = await squashes.compress_last(
            env_of(ctx), count, summary, session_of(session_id), expected_revision
        )
    await changed(ctx, done.session_id, Change.SQUASHED, new)
    return squash_result(done)


async def frs_restore(
    ctx: DepsContext,
    alias: Annotated[str, Field(description="The squash to undo: SQ.<n>, @sha8 optional.")],
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, RestoreOut]:
    """Undo a squash (restore it): its originals take the summary's place again.

    Restore the later of two nested squashes first.
    Example: frs_restore(alias="SQ.2")
    """
    with tool_errors():
        new = await creates(ctx, session_id)
        done = await squashes.restore(env_of(ctx), alias, session_of(session_id), expected_revision)
    await changed(ctx, done.session_id, Change.SQUASHED, new)
    out = RestoreOut(
        message=replies.restored(done),
        session_id=done.session_id,
        revision=done.revision,
        first=done.first,
        last=done.last,
    )
    return result(out)


async def frs_focus(
    ctx: DepsContext,
    action: Annotated[
        str,
        Field(
            description="open: start a nested focus layer with a goal; close: squash the "
            "innermost layer into one summary in its parent.",
            json_schema_extra=choices(("open", "close")),
        ),
    ],
    goal: Annotated[str | None, Field(description="open: what this layer is for.")] = None,
    summary: Annotated[
        str | None,
        Field(description="close: what the layer established.", json_schema_extra=SUMMARY),
    ] = None,
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, Revision]:
    """Open or close a focus layer: a sub-task whose detail collapses into one summary.

    Messages recorded after open belong to the layer; the view shows its goal above its
    first entry. frs_compress_last stays inside the innermost open layer. close squashes
    the whole layer (restorable with frs_restore like any squash).
    Example: frs_focus(action="open", goal="find why test_sync is flaky"), later
      frs_focus(action="close", summary="Race in Syncer.flush; fixed by a lock.")
    """
    sid = session_of(session_id)
    with tool_errors():
        new = await creates(ctx, session_id)
        if action == "open":
            opened = await focus.open_layer(env_of(ctx), goal or "", sid, expected_revision)
            await changed(ctx, opened.session_id, Change.FRAMED, new)
            text = replies.layer_opened(opened)
            return result(
                Revision(message=text, session_id=opened.session_id, revision=opened.revision)
            )
        if action == "close":
            closed = await focus.close_layer(env_of(ctx), summary or "", sid, expected_revision)
            await changed(ctx, closed.session_id, Change.SQUASHED, new)
            text = replies.layer_closed(closed)
            return result(
                Revision(message=text, session_id=closed.session_id, revision=closed.revision)
            )
    raise ToolError(f"action is {action!r}; use open or close.")
