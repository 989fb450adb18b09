"""Writing and reading the thread: frs_record, frs_view_thread, get_alias."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from frs import LANES, ViewOptions, pages, recording, replies, viewing
from server.mcp.deps import DepsContext, env_of
from server.mcp.errors import tool_errors
from server.mcp.live import Change, changed, creates
from server.mcp.progress import with_progress
from server.mcp.tools.arguments import (
    BATCH,
    FROM_ONE,
    MessageIn,
    NumberingArg,
    RevisionArg,
    SessionArg,
    numbering_of,
    session_of,
)
from server.mcp.tools.results import RecordOut, result


async def frs_record(
    ctx: DepsContext,
    messages: Annotated[
        list[MessageIn],
        Field(
            description="Messages to append, oldest first. Tool results carry tool_call_id.",
            json_schema_extra=BATCH,
        ),
    ],
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, RecordOut]:
    """Append messages to the thread, in one transaction; answers with their positions.

    Record what you say, the tools you call (tool_calls) and their results (role tool with
    tool_call_id), so the thread can be viewed and distilled. thinking messages are kept but
    never numbered. A result for a call id never made or already answered, or a call id made
    again, is recorded with a Warning line naming messages[index].
    Example: frs_record(messages=[{"role": "user", "content": "Fix the flaky test"},
      {"role": "assistant", "content": "Running it", "tool_calls": [{"id": "c1", "name": "bash",
      "arguments": {"cmd": "pytest -x"}}]}, {"role": "tool", "name": "bash",
      "tool_call_id": "c1", "content": "1 failed"}])
    """
    batch = [message.to_domain(i) for i, message in enumerate(messages)]
    with tool_errors():
        new = await creates(ctx, session_id)
        done = await with_progress(
            ctx,
            "messages recorded",
            lambda progress: recording.record(
                env_of(ctx), batch, session_of(session_id), expected_revision, progress
            ),
        )
    await changed(ctx, done.session_id, Change.RECORDED, new)
    out = RecordOut(
        message=replies.recorded(done),
        session_id=done.session_id,
        revision=done.revision,
        positions=list(done.positions),
        numbers=list(done.numbers),
        warnings=list(done.warnings),
    )
    return result(out)


# The view's options as the tool's input schema shows them, a field each (MCP clients see
# these descriptions and limits; tests pin the schema).
RolesArg = Annotated[
    list[str] | None,
    Field(
        description="Only these: system, user, assistant, tool, summary.",
        json_schema_extra={"items": {"type": "string", "enum": list(LANES)}},
    ),
]
LastArg = Annotated[int | None, Field(description="Only the last N entries.", ge=1)]
ViewFromArg = Annotated[
    int | None,
    Field(
        validation_alias="from",
        description="First position (or number) to show.",
        json_schema_extra=FROM_ONE,
    ),
]
ViewToArg = Annotated[
    int | None,
    Field(description="Last position (or number) to show.", json_schema_extra=FROM_ONE),
]
ShowPlanArg = Annotated[bool, Field(description="Show the plan line.")]
ShowThinkingArg = Annotated[bool, Field(description="Show thinking blocks.")]
BudgetArg = Annotated[
    int | None,
    Field(
        description="Fit the view in this many estimated tokens: the oldest entries on "
        "top (the task among them), newest entries whole, the ones between as cards, "
        "one-line cards and group lines, a middle span left out (the last line says which)."
    ),
]
ShowSourcesArg = Annotated[
    bool, Field(description="List registered sources, marking changed files.")
]
MergeRunsArg = Annotated[
    bool,
    Field(
        description="Show consecutive assistant and tool messages of one run as one "
        "entry [4–8], each tool call annotated where it happened, results by alias."
    ),
]
ShowTimesArg = Annotated[
    bool,
    Field(description="Stamp user messages [YYYY-MM-DD HH:MM]; indent their replies."),
]
RunIdArg = Annotated[str | None, Field(description="Only the messages of this run (agent turn).")]
PreviewArg = Annotated[
    int | None,
    Field(
        description="Longer messages become cards: head, tail and alias.",
        ge=200,
        le=100_000,
    ),
]


async def frs_view_thread(
    ctx: DepsContext,
    numbering: NumberingArg = None,
    roles: RolesArg = None,
    last: LastArg = None,
    from_: ViewFromArg = None,
    to: ViewToArg = None,
    show_plan: ShowPlanArg = True,
    show_thinking: ShowThinkingArg = False,
    budget_tokens: BudgetArg = None,
    show_sources: ShowSourcesArg = False,
    merge_runs: MergeRunsArg = False,
    show_times: ShowTimesArg = False,
    run_id: RunIdArg = None,
    preview_chars: PreviewArg = None,
    session_id: SessionArg = None,
) -> str:
    """Show the thread as numbered entries, to choose what to squash: [n] Role: text.

    Long messages appear as cards (head, tail, alias M.n@sha8: get_alias shows all of it);
    summaries as "Summary of K messages (SQ.m@sha8)". The last line gives counts, the
    revision (pass it as expected_revision when you squash) and the whole live thread's
    estimated tokens (not this view's).
    budget_tokens=N fits the view into N estimated tokens: the newest entries whole, older
    ones shrink to cards, one-line cards and group lines [a–b]; the oldest (the task among
    them) stay on top as cards and one-line cards and the span after them is left out; the
    last line says which and the call that shows them. A whole
    thread over the server's cap is shown that way by default. An append changes such a
    view only near its end, so a prompt cache keeps hitting; last=N moves its first entry
    with every append, while from=<a fixed position> keeps the cache.
    merge_runs=true shows each agent turn as one entry.
    Example: frs_view_thread(last=20) or frs_view_thread(from=10, to=30)
    """
    options = ViewOptions(
        numbering=numbering_of(numbering),
        roles=tuple(roles or ()),
        last=last,
        start=from_,
        end=to,
        show_plan=show_plan,
        show_thinking=show_thinking,
        show_sources=show_sources,
        preview_chars=preview_chars,
        budget_tokens=budget_tokens,
        merge_runs=merge_runs,
        show_times=show_times,
        run_id=run_id,
    )
    with tool_errors():
        return await viewing.view(env_of(ctx), options, session_of(session_id))


async def get_alias(
    ctx: DepsContext,
    alias: Annotated[
        str,
        Field(
            description="M.<number> (a message), SQ.<n> (a squash's originals) or a source's "
            "alias (PREFIX.name, as frs_source registered it: H.main, D.readme), @sha8 optional."
        ),
    ],
    offset: Annotated[int, Field(description="Character offset to start from.", ge=0)] = 0,
    max_chars: Annotated[
        int | None,
        Field(description="Page size in characters (default 20,000).", ge=1, le=100_000),
    ] = None,
    session_id: SessionArg = None,
) -> str:
    """Expand an alias: the full text behind a card (M.n), a squash (SQ.n) or a source, paged.

    Cards in the view show M.n@sha8; summaries show SQ.n@sha8 (what was squashed, as it was);
    a registered source reads by its own alias (H.main, D.readme: see frs_source).
    Each page says what remains and the exact call for the next one.
    Example: get_alias(alias="SQ.2@0b4f2d11") or get_alias(alias="M.17", offset=20000)
    """
    with tool_errors():
        page = await pages.get_alias(env_of(ctx), alias, offset, max_chars, session_of(session_id))
    return page.render()
