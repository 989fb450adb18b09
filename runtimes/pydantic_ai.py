"""FRS in Pydantic AI: a history-processing capability the model can distill, and its tools.

``Agent(model, capabilities=[FRSHistory("frs.db")])``: before every model request (Pydantic
AI's `ProcessHistory` capability) the messages the run has not recorded yet go into the FRS
session of (interface ``pydantic-ai``, conversation = the run's ``conversation_id``), and the
model gets the distilled thread instead: squashed stretches as one response holding the
summary and its alias (a user prompt where the model needs a user turn: `_thread`), every
other message exactly as it was recorded (kept whole as JSON:
thinking parts, signatures, ids, provider details). The run ends by recording its final
response. The capability also brings the FRS tools (`FRSHistory.toolset`, a `FunctionToolset`),
so a squash the model makes takes effect on its very next request.

A message is recorded once: the capability marks what it recorded or handed out
(``metadata["frs"]``, which Pydantic AI never sends to a model), so passing a run's
``all_messages()`` back as ``message_history`` records nothing twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

try:
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise ImportError(
        "runtimes.pydantic_ai needs Pydantic AI: pip install 'frs-mcp[pydantic-ai]'"
    ) from exc

from frs import FrsError, Message, NewMessage, Role, ToolCall
from frs.autopilot import Autopilot
from frs.raw import Raw
from runtimes.core import Conversation, Conversations, FrsTools, summary_role, summary_text

__all__ = ["INTERFACE", "MARK", "FRSHistory"]

#: The FRS interface of every session this adapter keeps (the conversation is the run's
#: `conversation_id`).
INTERFACE = "pydantic-ai"
#: The `metadata` key that marks a message the capability recorded or handed out.
MARK = "frs"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FRSHistory(ProcessHistory[Any]):
    """Pydantic AI's `ProcessHistory` over FRS, with the FRS tools as its toolset.

    `db_path` is a SQLite file (created if missing) or a ``postgresql://`` URL. One instance
    serves every conversation of an agent (each run's ``conversation_id`` names its FRS
    session); pass ``conversation_id=`` to ``agent.run`` to continue one. It remembers the
    `keep` conversations used last (`runtimes.core.Conversations`): one dropped is found again
    by get-or-create. The store opens on first use in the running event loop; ``await
    history.close()`` closes it.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] = "frs.db",
        *,
        tools: bool = True,
        keep: int = 1024,
        autopilot: Autopilot | None = None,
    ) -> None:
        super().__init__(processor=self.process)
        self.conversations = Conversations(db_path, INTERFACE, keep=keep, autopilot=autopilot)
        self.tools = tools
        self.toolset: FunctionToolset[Any] = frs_toolset(self.conversation)

    def get_toolset(self) -> FunctionToolset[Any] | None:
        return self.toolset if self.tools else None

    async def close(self) -> None:
        await self.conversations.close()

    def conversation(self, conversation_id: str | None) -> Conversation:
        """The FRS conversation of a run's `conversation_id`."""
        return self.conversations.get(conversation_id or "default")

    # -- the history processor and the end of a run --------------------------------------------

    async def process(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """Record what is new, then hand back the distilled thread (the whole thread FRS holds
        for the run's conversation, in order)."""
        conversation = self.conversation(ctx.conversation_id)
        await conversation.record(_new_messages(messages))
        entries = await conversation.newest()
        return _thread(entries) or messages

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        # The final response came after the last request: record it now, so the thread is
        # whole even for an app that passes no message_history next time.
        await self.conversation(ctx.conversation_id).record(_new_messages(result.all_messages()))
        return result


def frs_toolset(conversation: Callable[[str | None], Conversation]) -> FunctionToolset[Any]:
    """The FRS tools (`runtimes.core.FrsTools`, their descriptions too) as Pydantic AI tools,
    each acting on the conversation of the run it runs in (`conversation`, by the run's
    ``conversation_id``); an FRS refusal goes back to the model as a retry prompt."""

    def bound(ctx: RunContext[Any]) -> FrsTools:
        return FrsTools(conversation(ctx.conversation_id))

    async def frs_view_thread(ctx: RunContext[Any], last: int | None = None) -> str:
        with _retry_on_refusal():
            return await bound(ctx).frs_view_thread(last)

    async def frs_compress_range(ctx: RunContext[Any], start: int, end: int, summary: str) -> str:
        with _retry_on_refusal():
            return await bound(ctx).frs_compress_range(start, end, summary)

    async def frs_compress_last(ctx: RunContext[Any], count: int, summary: str) -> str:
        with _retry_on_refusal():
            return await bound(ctx).frs_compress_last(count, summary)

    async def get_alias(
        ctx: RunContext[Any], alias: str, offset: int = 0, max_chars: int | None = None
    ) -> str:
        with _retry_on_refusal():
            return await bound(ctx).get_alias(alias, offset, max_chars)

    async def frs_restore(ctx: RunContext[Any], alias: str) -> str:
        with _retry_on_refusal():
            return await bound(ctx).frs_restore(alias)

    functions: list[Callable[..., Any]] = [
        frs_view_thread,
        frs_compress_range,
        frs_compress_last,
        get_alias,
        frs_restore,
    ]
    for function in functions:
        function.__doc__ = getattr(FrsTools, function.__name__).__doc__
    return FunctionToolset(functions)


@contextmanager
def _retry_on_refusal() -> Iterator[None]:
    """A refusal (`FrsError`) goes back to the model as a retry prompt with its words."""
    try:
        yield
    except FrsError as error:
        raise ModelRetry(str(error)) from error


# -- messages <-> FRS entries ----------------------------------------------------------------------


def _new_messages(messages: Sequence[ModelMessage]) -> list[NewMessage]:
    """The FRS messages for every message not marked yet, which are marked now: a response
    is one entry, a request one entry per part (so each tool return pairs with its call)."""
    recorded: list[NewMessage] = []
    for message in messages:
        if (message.metadata or {}).get(MARK):
            continue
        message.metadata = {**(message.metadata or {}), MARK: True}
        if isinstance(message, ModelResponse):
            recorded.append(_response_message(message))
        else:
            recorded.extend(_request_messages(message))
    return recorded


def _dump(message: ModelMessage) -> str:
    return ModelMessagesTypeAdapter.dump_json([message]).decode()


def _response_message(response: ModelResponse) -> NewMessage:
    text = "\n".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = tuple(
        ToolCall(p.tool_call_id, p.tool_name, p.args_as_json_str())
        for p in response.parts
        if isinstance(p, ToolCallPart)
    )
    if not text and not calls:
        text = "[" + ", ".join(type(p).__name__ for p in response.parts) + "]"
    return NewMessage("assistant", text, tool_calls=calls, raw=_dump(response))


def _request_messages(request: ModelRequest) -> list[NewMessage]:
    out = []
    for part in request.parts:
        # Each part with the request around it: consecutive parts of one request come back
        # as that request (`_thread`).
        raw = _dump(ModelRequest([part], **_envelope(request)))
        role: Role = "user"
        name = call_id = None
        if isinstance(part, SystemPromptPart):
            role, text = "system", part.content
        elif isinstance(part, UserPromptPart):
            text = _prompt_text(part)
        elif isinstance(part, ToolReturnPart):
            role, text = "tool", part.model_response_str()
            name, call_id = part.tool_name, part.tool_call_id
        elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
            role, text = "tool", part.model_response()
            name, call_id = part.tool_name, part.tool_call_id
        elif isinstance(part, RetryPromptPart):
            text = part.model_response()
        else:
            text = f"[{type(part).__name__}]"
        out.append(NewMessage(role, text or "(empty)", name=name, tool_call_id=call_id, raw=raw))
    return out


def _prompt_text(part: UserPromptPart) -> str:
    """A prompt's text; other content (images, files) named by its kind."""
    if isinstance(part.content, str):
        return part.content
    return "\n".join(c if isinstance(c, str) else f"[{type(c).__name__}]" for c in part.content)


def _envelope(request: ModelRequest) -> dict[str, Any]:
    """A request's fields but its parts."""
    return {
        "timestamp": request.timestamp,
        "instructions": request.instructions,
        "run_id": request.run_id,
        "conversation_id": request.conversation_id,
        "metadata": request.metadata,
    }


def _thread(entries: Sequence[Message | Raw]) -> list[ModelMessage]:
    """The entries as model messages, in order: recorded ones exactly as recorded (the parts
    of one request together again), a summary as a response holding it with its alias, one
    recorded elsewhere (frs-mcp) as the message it stands for; each marked. A summary goes in
    the role `summary_role` gives it: where the model needs a user turn (first, or after a
    response), a request with it as a user prompt, merged into the request right after it (its
    first part), so requests and responses alternate from a request on."""
    out: list[ModelMessage] = []
    envelope: str | None = None
    summary: ModelRequest | None = None  # a user-role summary ending `out`
    for entry in entries:
        message = _entry_message(entry)
        message.metadata = {**(message.metadata or {}), MARK: True}
        if isinstance(entry, Message) and entry.kind == "summary":
            summary = None
            if summary_role(_last_role(out)) == "user":
                when = message.timestamp or _EPOCH
                prompt = UserPromptPart(summary_text(entry), timestamp=when)
                message = summary = ModelRequest(
                    [prompt], timestamp=when, metadata=message.metadata
                )
            out.append(message)
            envelope = None
            continue
        if isinstance(message, ModelRequest) and isinstance(entry, Raw):
            same = _request_key(entry.text())
            if envelope == same and isinstance(out[-1], ModelRequest):
                out[-1].parts = [*out[-1].parts, *message.parts]
                continue
            envelope = same
        else:
            envelope = None
        if summary is not None and isinstance(message, ModelRequest):
            message.parts = [*summary.parts, *message.parts]
            out[-1] = message
        else:
            out.append(message)
        summary = None
    return out


def _last_role(messages: Sequence[ModelMessage]) -> str | None:
    """The role of the last turn `messages` give the model (system prompts aside)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return "assistant"
        if not all(isinstance(part, SystemPromptPart) for part in message.parts):
            return "user"
    return None


def _request_key(raw: str) -> str:
    (request,) = json.loads(raw)
    request.pop("parts", None)
    return json.dumps(request, sort_keys=True)


def _entry_message(entry: Message | Raw) -> ModelMessage:
    if isinstance(entry, Raw):
        (message,) = ModelMessagesTypeAdapter.validate_json(entry.text())
        return message
    when = datetime.fromisoformat(entry.created_at) if entry.created_at else _EPOCH
    if entry.kind == "summary":
        return ModelResponse([TextPart(summary_text(entry))], timestamp=when)
    if entry.role == "assistant":
        parts: list[Any] = [TextPart(entry.content)] if entry.content else []
        parts += [ToolCallPart(c.name, c.arguments, tool_call_id=c.id) for c in entry.tool_calls]
        return ModelResponse(parts, timestamp=when)
    if entry.role == "tool":
        part: Any = ToolReturnPart(entry.name or "tool", entry.content, entry.tool_call_id or "")
    elif entry.role == "system":
        part = SystemPromptPart(entry.content)
    else:
        part = UserPromptPart(entry.content)
    return ModelRequest([part], timestamp=when)
