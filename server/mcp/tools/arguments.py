"""What the tools take: argument types with their descriptions, and the models of structured
arguments, each checked so a wrong value gets an error naming the choices."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from frs import ROLES, AskedRange, Limits, NewMessage, SessionId, ToolCall
from frs.model import Numbering

SESSION_HELP = "Session id (from frs_session); omit to use your current session."
REVISION_HELP = (
    "The revision your last view showed; if the session changed since, nothing is done and the "
    "error says what changed. Omit to skip the check."
)
NUMBERING_HELP = (
    "'position' (default): 1-based positions in the current view, contiguous, shifting after a "
    "squash. 'absolute': permanent message numbers, stable forever, with gaps after squashes."
)


# The limits every client can see in the schemas; the server checks the same ones (the raw
# arguments' sizes first, `server.mcp.bounds`), with an error that says what to do.
_LIMITS = Limits()
SHORT: dict[str, JsonValue] = {"maxLength": _LIMITS.max_field_chars}
BATCH: dict[str, JsonValue] = {"maxItems": _LIMITS.max_batch}
CALLS: dict[str, JsonValue] = {"maxItems": _LIMITS.max_calls}
STEPS: dict[str, JsonValue] = {"maxItems": _LIMITS.max_plan_steps}
CONTENT: dict[str, JsonValue] = {"maxLength": _LIMITS.max_message_chars}
SUMMARY: dict[str, JsonValue] = {"maxLength": _LIMITS.max_summary_chars}
# Positions, numbers and counts start at 1: published, and checked by the domain's own errors.
FROM_ONE: dict[str, JsonValue] = {"minimum": 1}


def choices(values: tuple[str, ...]) -> dict[str, Any]:
    # Published as an enum, checked by us so a wrong value gets an error naming the choices.
    return {"enum": list(values)}


SessionArg = Annotated[
    str | None,
    Field(description=SESSION_HELP, pattern=r"^[A-Za-z0-9_-]{1,64}$"),
]
RevisionArg = Annotated[int | None, Field(description=REVISION_HELP)]
NumberingArg = Annotated[
    str | None,
    Field(description=NUMBERING_HELP, json_schema_extra=choices(("position", "absolute"))),
]


class ToolCallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="The call id the tool result will answer with tool_call_id.",
        json_schema_extra=SHORT,
    )
    name: str = Field(description="The tool's name.", json_schema_extra=SHORT)
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
        description="system, user, assistant or tool.", json_schema_extra=choices(ROLES)
    )
    content: str = Field(default="", description="The message text.", json_schema_extra=CONTENT)
    name: str | None = Field(
        default=None, description="For tool messages: the tool's name.", json_schema_extra=SHORT
    )
    tool_calls: list[ToolCallIn] | None = Field(
        default=None,
        description="For assistant messages: the tool calls it made, in order.",
        json_schema_extra=CALLS,
    )
    tool_call_id: str | None = Field(
        default=None,
        description="For tool messages: the id of the call this result answers.",
        json_schema_extra=SHORT,
    )
    run_id: str | None = Field(
        default=None,
        description="The agent turn that produced this message.",
        json_schema_extra=SHORT,
    )
    kind: str = Field(
        default="message",
        description="'message', or 'thinking' for reasoning that is kept but never numbered.",
        json_schema_extra=choices(("message", "thinking")),
    )
    interface_message_id: str | None = Field(
        default=None,
        description="The message's id in the interface it came from.",
        json_schema_extra=SHORT,
    )
    created_at: str | None = Field(
        default=None, description="ISO-8601 time; default now.", json_schema_extra=SHORT
    )

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
        json_schema_extra=choices(("todo", "doing", "done")),
    )

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: str) -> str:
        if value not in ("todo", "doing", "done"):
            # The error adds "(got 'x')": the message names the choices only.
            raise ValueError("not one of todo, doing, done")
        return value


class RangeIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: int = Field(
        alias="from",
        description="First position (or number) to squash.",
        json_schema_extra=FROM_ONE,
    )
    to: int = Field(
        description="Last position (or number) to squash, inclusive.", json_schema_extra=FROM_ONE
    )
    summary: str = Field(description="Your summary of this range.", json_schema_extra=SUMMARY)


def numbering_of(value: str | None) -> Numbering | None:
    if value is None or value in ("position", "absolute"):
        return value  # type: ignore[return-value]
    raise ToolError(f"numbering is {value!r}; use 'position' or 'absolute'.")


def session_of(value: str | None) -> SessionId | None:
    return SessionId(value) if value is not None else None


def ranges_asked(
    start: int | None, end: int | None, summary: str | None, ranges: list[RangeIn] | None
) -> list[AskedRange]:
    """The ranges asked for: from/to/summary, or `ranges`, never both."""
    single = (start, end, summary)
    if ranges is not None:
        if any(value is not None for value in single):
            raise ToolError(
                "Give either from, to and summary (one range) or ranges=[{from, to, summary}, "
                "...] (several), not both."
            )
        return [AskedRange(r.from_, r.to, r.summary) for r in ranges]
    if start is None or end is None or summary is None:
        missing = [n for n, v in zip(("from", "to", "summary"), single, strict=True) if v is None]
        raise ToolError(
            f"Missing {', '.join(missing)}: give from, to and summary, or "
            "ranges=[{from, to, summary}, ...]."
        )
    return [AskedRange(start, end, summary)]
