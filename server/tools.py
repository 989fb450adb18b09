"""The MCP tools: validate arguments, call one service method, return text for the model.

Mutating tools also return structured content (revision, positions, aliases) for programs.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from frs import (
    LANES,
    ROLES,
    NewMessage,
    PlanStep,
    Session,
    SessionId,
    SessionPage,
    ToolCall,
    ViewOptions,
    replies,
)
from frs.model import Numbering
from frs.render import escape_inline
from server.deps import DepsContext
from server.errors import tool_errors
from server.progress import with_progress

_Fn = TypeVar("_Fn", bound=Callable[..., Any])

SESSION_HELP = "Session id (from frs_session); omit to use the current session."
REVISION_HELP = (
    "The revision your last view showed; if the session changed since, nothing is done and the "
    "error says what changed. Omit to skip the check."
)
NUMBERING_HELP = (
    "'position' (default): 1-based positions in the current view, contiguous, shifting after a "
    "squash. 'absolute': permanent message numbers, stable forever, with gaps after squashes."
)


def _choices(values: tuple[str, ...]) -> dict[str, Any]:
    # Published as an enum, checked by us so a wrong value gets an error naming the choices.
    return {"enum": list(values)}


SessionArg = Annotated[
    str | None,
    Field(description=SESSION_HELP, pattern=r"^[A-Za-z0-9_-]{1,64}$"),
]
RevisionArg = Annotated[int | None, Field(description=REVISION_HELP)]
NumberingArg = Annotated[
    str | None,
    Field(description=NUMBERING_HELP, json_schema_extra=_choices(("position", "absolute"))),
]


class ToolCallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The call id the tool result will answer with tool_call_id.")
    name: str = Field(description="The tool's name.")
    arguments: str | dict[str, Any] = Field(
        default="", description="The call's arguments, as a JSON string or object."
    )

    def to_domain(self) -> ToolCall:
        args = self.arguments
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return ToolCall(self.id, self.name, text)


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str = Field(
        description="system, user, assistant or tool.", json_schema_extra=_choices(ROLES)
    )
    content: str = Field(default="", description="The message text.")
    name: str | None = Field(default=None, description="For tool messages: the tool's name.")
    tool_calls: list[ToolCallIn] | None = Field(
        default=None, description="For assistant messages: the tool calls it made, in order."
    )
    tool_call_id: str | None = Field(
        default=None, description="For tool messages: the id of the call this result answers."
    )
    run_id: str | None = Field(
        default=None, description="The agent turn that produced this message."
    )
    kind: str = Field(
        default="message",
        description="'message', or 'thinking' for reasoning that is kept but never numbered.",
        json_schema_extra=_choices(("message", "thinking")),
    )
    interface_message_id: str | None = Field(
        default=None, description="The message's id in the interface it came from."
    )
    created_at: str | None = Field(default=None, description="ISO-8601 time; default now.")

    def to_domain(self, index: int) -> NewMessage:
        if self.kind not in ("message", "thinking"):
            raise ToolError(
                f"messages[{index}].kind is {self.kind!r}; use 'message' or 'thinking'."
            )
        if self.role not in ROLES:
            raise ToolError(
                f"messages[{index}].role is {self.role!r}; use one of {', '.join(ROLES)}."
            )
        return NewMessage(
            role=self.role,
            content=self.content,
            kind=self.kind,  # type: ignore[arg-type]
            name=self.name,
            tool_calls=tuple(call.to_domain() for call in self.tool_calls or ()),
            tool_call_id=self.tool_call_id,
            run_id=self.run_id,
            interface_message_id=self.interface_message_id,
            created_at=self.created_at,
        )


class StepIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="What the step does, one line.")
    status: str = Field(
        default="todo",
        description="todo, doing or done.",
        json_schema_extra=_choices(("todo", "doing", "done")),
    )

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: str) -> str:
        if value not in ("todo", "doing", "done"):
            raise ValueError(f"status {value!r} is not one of todo, doing, done")
        return value


class Revision(BaseModel):
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


class SquashOut(Revision):
    alias: str = Field(description="Alias of the originals, e.g. SQ.2@0b4f2d11.")
    position: int
    tokens_before: int
    tokens_after: int


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


class SessionOut(BaseModel):
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


def _numbering(value: str | None) -> Numbering | None:
    if value is None or value in ("position", "absolute"):
        return value  # type: ignore[return-value]
    raise ToolError(f"numbering is {value!r}; use 'position' or 'absolute'.")


def _sid(value: str | None) -> SessionId | None:
    return SessionId(value) if value is not None else None


def _result(text: str, data: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data.model_dump()
    )


def register(server: MCPServer[Any]) -> None:
    # Hints clients show and act on. Squashes keep their originals and can be undone, so no
    # tool but frs_source (whose remove drops an inline text) destroys anything; every tool
    # works on this server's own database (and allowed files), never the open world.
    writes = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    restores = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    sources = ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
    )
    mcp = _Registrar(server)

    @mcp.tool(title="Sessions: start, list, use, info", annotations=writes)
    async def frs_session(
        ctx: DepsContext,
        action: Annotated[
            str,
            Field(
                description="start: new session (becomes current); list: the sessions, a page "
                "at a time; use: make session_id current; info: describe a session (default).",
                json_schema_extra=_choices(("start", "list", "use", "info")),
            ),
        ] = "info",
        title: Annotated[str | None, Field(description="start: a short title.")] = None,
        goal: Annotated[str | None, Field(description="start: what the session is for.")] = None,
        numbering: NumberingArg = None,
        interface: Annotated[
            str | None,
            Field(
                description="start: with conversation, one session per conversation "
                "(get-or-create)."
            ),
        ] = None,
        conversation: Annotated[
            str | None, Field(description="start: the conversation's id.")
        ] = None,
        offset: Annotated[
            int, Field(description="list: how many sessions to skip (the page's start).", ge=0)
        ] = 0,
        limit: Annotated[
            int, Field(description="list: sessions per page (1-200).", ge=1, le=200)
        ] = 50,
        session_id: SessionArg = None,
    ) -> Annotated[CallToolResult, SessionOut]:
        """Start, list, select or describe reasoning sessions.

        Each session is one thread. Tools without session_id use the current session (the last
        started or selected; one is created when none exists). list pages: it says "N of M"
        and gives the call for the next page. The structured result always carries session_id.
        Example: frs_session(action="start", title="Fix flaky test", goal="find the race")
        """
        service = ctx.request_context.lifespan_context.service
        with tool_errors():
            if action == "start":
                session, created = await service.start_session(
                    title or "",
                    goal or "",
                    _numbering(numbering) or "position",
                    interface,
                    conversation,
                )
                return _session_result(
                    replies.session_started(session, created, title, goal, numbering),
                    "start",
                    session,
                    current=True,
                    created=created,
                )
            if action == "list":
                page = await service.list_sessions(limit, offset)
                return _result(replies.session_list(page, limit), _session_page(page))
            if action == "use":
                if session_id is None:
                    raise ToolError(
                        "action='use' needs session_id; see frs_session(action='list')."
                    )
                session = await service.use_session(SessionId(session_id))
                text = (
                    f'Session {session.id} "{session.title}" is now current'
                    f" · revision {session.revision}"
                )
                return _session_result(text, "use", session, current=True)
            if action == "info":
                session = await service.session(_sid(session_id))
                # Without session_id, info describes the current session.
                return _session_result(
                    replies.session_info(session), "info", session, current=session_id is None
                )
        raise ToolError(f"action is {action!r}; use start, list, use or info.")

    @mcp.tool(title="Record messages", annotations=writes)
    async def frs_record(
        ctx: DepsContext,
        messages: Annotated[
            list[MessageIn],
            Field(description="Messages to append, oldest first. Tool results carry tool_call_id."),
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
        service = ctx.request_context.lifespan_context.service
        batch = [message.to_domain(i) for i, message in enumerate(messages)]
        with tool_errors():
            done = await with_progress(
                ctx,
                "messages recorded",
                lambda progress: service.record(
                    batch, _sid(session_id), expected_revision, progress
                ),
            )
        out = RecordOut(
            session_id=done.session_id,
            revision=done.revision,
            positions=list(done.positions),
            numbers=list(done.numbers),
            warnings=list(done.warnings),
        )
        return _result(done.text(), out)

    @mcp.tool(title="View the thread", annotations=reads, structured_output=False)
    async def frs_view_thread(
        ctx: DepsContext,
        numbering: NumberingArg = None,
        roles: Annotated[
            list[str] | None,
            Field(
                description="Only these: system, user, assistant, tool, summary.",
                json_schema_extra={"items": {"type": "string", "enum": list(LANES)}},
            ),
        ] = None,
        last: Annotated[int | None, Field(description="Only the last N entries.", ge=1)] = None,
        from_: Annotated[
            int | None,
            Field(validation_alias="from", description="First position (or number) to show."),
        ] = None,
        to: Annotated[int | None, Field(description="Last position (or number) to show.")] = None,
        show_plan: Annotated[bool, Field(description="Show the plan line.")] = True,
        show_thinking: Annotated[bool, Field(description="Show thinking blocks.")] = False,
        budget_tokens: Annotated[
            int | None,
            Field(
                description="Fit the view in this many estimated tokens: the task on top, newest "
                "entries whole, older ones as cards, one-line cards and group lines, the oldest "
                "left out (the last line says which)."
            ),
        ] = None,
        show_sources: Annotated[
            bool, Field(description="List registered sources, marking changed files.")
        ] = False,
        merge_runs: Annotated[
            bool,
            Field(
                description="Show consecutive assistant and tool messages of one run as one "
                "entry [4–8], each tool call annotated where it happened, results by alias."
            ),
        ] = False,
        show_times: Annotated[
            bool,
            Field(description="Stamp user messages [YYYY-MM-DD HH:MM]; indent their replies."),
        ] = False,
        run_id: Annotated[
            str | None, Field(description="Only the messages of this run (agent turn).")
        ] = None,
        preview_chars: Annotated[
            int | None,
            Field(
                description="Longer messages become cards: head, tail and alias.",
                ge=200,
                le=100_000,
            ),
        ] = None,
        session_id: SessionArg = None,
    ) -> str:
        """Show the thread as numbered entries: [n] Role: text. Read this instead of raw output.

        Long messages appear as cards (head, tail, alias M.n@sha8: get_alias shows all of it);
        summaries as "Summary of K messages (SQ.m@sha8)". The last line gives counts, the
        revision (pass it as expected_revision when you squash) and the whole live thread's
        estimated tokens (not this view's).
        budget_tokens=N fits the view into N estimated tokens: the task stays on top, the newest
        entries whole, older ones shrink to cards, one-line cards and group lines [a–b], the
        oldest are left out; the last line says which and the call that shows them. A whole
        thread over the server's cap is shown that way by default. An append changes such a
        view only near its end, so a prompt cache keeps hitting; last=N moves its first entry
        with every append, while from=<a fixed position> keeps the cache.
        merge_runs=true shows each agent turn as one entry.
        Example: frs_view_thread(last=20) or frs_view_thread(from=10, to=30)
        """
        service = ctx.request_context.lifespan_context.service
        options = ViewOptions(
            numbering=_numbering(numbering),
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
            return await service.view(options, _sid(session_id))

    @mcp.tool(title="Squash a range", annotations=writes)
    async def frs_compress_range(
        ctx: DepsContext,
        from_: Annotated[
            int, Field(validation_alias="from", description="First position (or number) to squash.")
        ],
        to: Annotated[int, Field(description="Last position (or number) to squash, inclusive.")],
        summary: Annotated[
            str, Field(description="Your summary; it replaces the range in the view.")
        ],
        numbering: NumberingArg = None,
        expected_revision: RevisionArg = None,
        session_id: SessionArg = None,
    ) -> Annotated[CallToolResult, SquashOut]:
        """Squash entries from..to (inclusive) into your summary; the originals stay retrievable.

        Use it when a stretch (a finished investigation, long tool output) matters only for its
        result. Keep decisions, numbers, file names and open questions in the summary. A range
        may not separate a tool call from its result. Undo with frs_restore.
        Example: frs_compress_range(from=3, to=9, summary="Ran the suite 20x: test_sync fails
          4/20 with 3 != 4; race in Syncer.flush", expected_revision=12)
        """
        service = ctx.request_context.lifespan_context.service
        with tool_errors():
            done = await service.compress_range(
                from_, to, summary, _numbering(numbering), _sid(session_id), expected_revision
            )
        return _squash_result(done)

    @mcp.tool(title="Squash the newest entries", annotations=writes)
    async def frs_compress_last(
        ctx: DepsContext,
        count: Annotated[int, Field(description="How many of the newest entries to squash.")],
        summary: Annotated[str, Field(description="Your summary of them.")],
        expected_revision: RevisionArg = None,
        session_id: SessionArg = None,
    ) -> Annotated[CallToolResult, SquashOut]:
        """Squash the last `count` entries of the thread into your summary.

        Use it right after finishing a step whose details you will not need verbatim.
        Example: frs_compress_last(count=6, summary="Installed deps; build passes.")
        """
        service = ctx.request_context.lifespan_context.service
        with tool_errors():
            done = await service.compress_last(count, summary, _sid(session_id), expected_revision)
        return _squash_result(done)

    @mcp.tool(title="Read the text behind an alias", annotations=reads, structured_output=False)
    async def get_alias(
        ctx: DepsContext,
        alias: Annotated[
            str,
            Field(
                description="M.<number> (a message) or SQ.<n> (a squash's originals), "
                "@sha8 optional."
            ),
        ],
        offset: Annotated[int, Field(description="Character offset to start from.", ge=0)] = 0,
        max_chars: Annotated[
            int | None,
            Field(description="Page size in characters (default 20,000).", ge=1, le=100_000),
        ] = None,
        session_id: SessionArg = None,
    ) -> str:
        """Show the full text behind an alias, a page at a time.

        Cards in the view show M.n@sha8; summaries show SQ.n@sha8 (what was squashed, as it was).
        Each page says what remains and the exact call for the next one.
        Example: get_alias(alias="SQ.2@0b4f2d11") or get_alias(alias="M.17", offset=20000)
        """
        service = ctx.request_context.lifespan_context.service
        with tool_errors():
            page = await service.get_alias(alias, offset, max_chars, _sid(session_id))
        return page.render()

    @mcp.tool(title="Undo a squash", annotations=restores)
    async def frs_restore(
        ctx: DepsContext,
        alias: Annotated[str, Field(description="The squash to undo: SQ.<n>, @sha8 optional.")],
        expected_revision: RevisionArg = None,
        session_id: SessionArg = None,
    ) -> Annotated[CallToolResult, RestoreOut]:
        """Undo a squash: its originals take the summary's place again.

        Restore the later of two nested squashes first.
        Example: frs_restore(alias="SQ.2")
        """
        service = ctx.request_context.lifespan_context.service
        with tool_errors():
            done = await service.restore(alias, _sid(session_id), expected_revision)
        out = RestoreOut(
            session_id=done.session_id, revision=done.revision, first=done.first, last=done.last
        )
        return _result(done.text(), out)

    @mcp.tool(title="Set the plan or a checkpoint", annotations=writes)
    async def frs_plan(
        ctx: DepsContext,
        steps: Annotated[
            list[StepIn] | None,
            Field(description="The whole plan, replacing the old one: [{text, status}]."),
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
        service = ctx.request_context.lifespan_context.service
        plan = [PlanStep(s.text, s.status) for s in steps] if steps is not None else None  # type: ignore[arg-type]
        with tool_errors():
            session, current = await service.update_plan(
                plan, checkpoint, _sid(session_id), expected_revision
            )
        shown = " · ".join(f"{s.status}: {s.text}" for s in current) or "no steps"
        marked = f"; checkpoint {checkpoint.strip()!r} added" if checkpoint else ""
        return _result(
            f"Plan: {shown}{marked} · revision {session.revision}",
            Revision(session_id=session.id, revision=session.revision),
        )

    @mcp.tool(title="Context sources", annotations=sources, structured_output=False)
    async def frs_source(
        ctx: DepsContext,
        action: Annotated[
            str,
            Field(
                description="add: register text or a file under an alias; list: every source; "
                "verify: re-hash every file and list the changed ones; remove: forget one.",
                json_schema_extra=_choices(("add", "list", "verify", "remove")),
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
        service = ctx.request_context.lifespan_context.service
        sid = _sid(session_id)
        with tool_errors():
            if action == "add":
                source, revision = await service.add_source(
                    alias, text, path, sid, expected_revision
                )
                size = f"{source.lines:,} {'line' if source.lines == 1 else 'lines'}"
                return (
                    f"Registered {source.alias}@{source.sha8} {escape_inline(source.where)} · "
                    f"{size} · {source.chars:,} chars. Read it with "
                    f'get_alias(alias="{source.alias}") · revision {revision}'
                )
            if action == "remove":
                if alias is None:
                    raise ToolError("action='remove' needs alias, e.g. alias='H.main'.")
                source, revision = await service.remove_source(alias, sid, expected_revision)
                where = escape_inline(source.where)
                return f"Removed source {source.alias} ({where}) · revision {revision}"
            if action in ("list", "verify"):
                session, states = await service.source_states(sid, check=action == "verify")
                if not states:
                    return (
                        f"No sources in session {session.id}. Register one with "
                        "frs_source(action='add', alias=..., text=... or path=...)."
                    )
                lines = [state.line() for state in states]
                if action == "verify":
                    changed = sum(1 for s in states if s.changed or s.sha256 is None)
                    lines.append(f"{changed} of {len(states)} sources changed or unreadable")
                return "\n".join(lines)
        raise ToolError(f"action is {action!r}; use add, list, verify or remove.")

    @mcp.tool(title="Open or close a focus layer", annotations=writes)
    async def frs_focus(
        ctx: DepsContext,
        action: Annotated[
            str,
            Field(
                description="open: start a nested focus layer with a goal; close: squash the "
                "innermost layer into one summary in its parent.",
                json_schema_extra=_choices(("open", "close")),
            ),
        ],
        goal: Annotated[str | None, Field(description="open: what this layer is for.")] = None,
        summary: Annotated[
            str | None, Field(description="close: what the layer established.")
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
        service = ctx.request_context.lifespan_context.service
        sid = _sid(session_id)
        with tool_errors():
            if action == "open":
                layer, revision, used = await service.open_focus(goal or "", sid, expected_revision)
                text = (
                    f"Opened focus layer {layer.depth} ({layer.goal!r}); messages recorded now "
                    f"belong to it · revision {revision}"
                )
            elif action == "close":
                layer, squashed, revision, used = await service.close_focus(
                    summary or "", sid, expected_revision
                )
                text = f"Closed focus layer {layer.depth} ({layer.goal!r}). " + (
                    squashed.text() if squashed else f"It was empty · revision {revision}"
                )
            else:
                raise ToolError(f"action is {action!r}; use open or close.")
        return _result(text, Revision(session_id=used, revision=revision))


class _Registrar:
    """`mcp.tool(...)` with the docstring as description, its indentation removed: the tools
    list reaches the model with every request, and leading spaces are tokens too."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self.server = server

    def tool(self, **options: Any) -> Callable[[_Fn], _Fn]:
        def register(fn: _Fn) -> _Fn:
            description = inspect.cleandoc(fn.__doc__ or "")
            return self.server.tool(description=description, **options)(fn)

        return register


def _summary(session: Session, current: SessionId | None) -> SessionSummary:
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


def _session_result(
    text: str, action: str, session: Session, current: bool, created: bool | None = None
) -> CallToolResult:
    out = SessionOut(
        action=action,
        session_id=session.id,
        revision=session.revision,
        created=created,
        session=_summary(session, session.id if current else None),
    )
    return _result(text, out)


def _session_page(page: SessionPage) -> SessionOut:
    return SessionOut(
        action="list",
        session_id=page.current,
        sessions=[_summary(s, page.current) for s in page.sessions],
        total=page.total,
        offset=page.offset,
        next_offset=page.next_offset,
    )


def _squash_result(done: Any) -> CallToolResult:
    out = SquashOut(
        session_id=done.session_id,
        revision=done.revision,
        alias=done.squash.alias,
        position=done.position,
        tokens_before=done.squash.tokens_before,
        tokens_after=done.squash.tokens_after,
    )
    return _result(done.text(), out)
