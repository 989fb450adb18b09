"""What frames the thread: the plan and its checkpoints, and context sources."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from frs import PlanStep, plans, replies, sources
from server.mcp.deps import DepsContext, env_of
from server.mcp.errors import tool_errors
from server.mcp.live import Change, changed, creates
from server.mcp.tools.arguments import STEPS, RevisionArg, SessionArg, StepIn, choices, session_of
from server.mcp.tools.results import Revision, result


async def frs_plan(
    ctx: DepsContext,
    steps: Annotated[
        list[StepIn] | None,
        Field(
            description="The whole plan, replacing the old one: [{text, status}].",
            json_schema_extra=STEPS,
        ),
    ] = None,
    checkpoint: Annotated[
        str | None, Field(description="Name a checkpoint after the newest entry.")
    ] = None,
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, Revision]:
    """Set the plan (shown under the title: ✓ done · ▶ doing · ○ todo) and/or add a checkpoint.

    Example: frs_plan(steps=[{"text": "reproduce", "status": "done"},
      {"text": "find cause", "status": "doing"}, {"text": "fix"}], checkpoint="reproduced")
    """
    plan = [PlanStep(s.text, s.status) for s in steps] if steps is not None else None  # type: ignore[arg-type]
    with tool_errors():
        new = await creates(ctx, session_id)
        done = await plans.update(
            env_of(ctx), plan, checkpoint, session_of(session_id), expected_revision
        )
    await changed(ctx, done.session.id, Change.FRAMED, new)
    text = replies.plan_updated(done, checkpoint)
    return result(
        Revision(message=text, session_id=done.session.id, revision=done.session.revision)
    )


async def frs_source(
    ctx: DepsContext,
    action: Annotated[
        str,
        Field(
            description="add: register text or a file under an alias; list: every source; "
            "verify: re-hash every file and list the changed ones; remove: forget one.",
            json_schema_extra=choices(("add", "list", "verify", "remove")),
        ),
    ] = "list",
    alias: Annotated[
        str | None,
        Field(
            description="PREFIX.name, e.g. H.main (code), S.entities (schema), D.readme "
            "(docs), A.adr1 (decision), T.contract (tests), P (prep), PR (profiles); for a "
            "file, a prefix alone (H) or nothing derives the name from the file name."
        ),
    ] = None,
    text: Annotated[str | None, Field(description="add: the text, registered inline.")] = None,
    path: Annotated[
        str | None,
        Field(description="add: a file under a folder the operator allowed (--allow-root)."),
    ] = None,
    expected_revision: RevisionArg = None,
    session_id: SessionArg = None,
) -> str:
    """Register large artifacts (files, schemas, decisions) under short aliases.

    The view then lists one line per source instead of the whole text, and get_alias(alias)
    returns the full current text; a file that changed since registration is reported with
    its old and new sha8.
    Example: frs_source(action="add", path="handlers/main.py") -> H.main@9f8e7d6c
    """
    sid = session_of(session_id)
    with tool_errors():
        if action == "add":
            new = await creates(ctx, session_id)
            added = await sources.add(env_of(ctx), alias, text, path, sid, expected_revision)
            await changed(ctx, added.session_id, Change.FRAMED, new)
            return replies.source_added(added)
        if action == "remove":
            if alias is None:
                raise ToolError("action='remove' needs alias, e.g. alias='H.main'.")
            new = await creates(ctx, session_id)
            removed = await sources.remove(env_of(ctx), alias, sid, expected_revision)
            await changed(ctx, removed.session_id, Change.FRAMED, new)
            return replies.source_removed(removed)
        if action in ("list", "verify"):
            verify = action == "verify"
            found = await sources.states(env_of(ctx), sid, check=verify)
            return replies.source_list(found, verify)
    raise ToolError(f"action is {action!r}; use add, list, verify or remove.")
