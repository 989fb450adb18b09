"""LangChain v1: the model of a `create_agent` agent reads its FRS-distilled thread.

`FRSMiddleware` is an `AgentMiddleware`. Before every model call it records the graph state's
new messages into the FRS session of the run's thread (get-or-create by interface
``"langchain"`` and conversation = the ``thread_id`` of the run config), then hands the model
the session's live thread: squashed stretches as their summary, every other message exactly as
it was recorded (its id, tool calls, metadata, content blocks), so a squash takes effect on
the very next call and everything before the first changed entry stays byte-identical. The
graph state is never changed: the checkpointer keeps every original message. The middleware
also brings the FRS tools (`tools`), bound to the same thread, so the model can view and
squash its own thread.

Why a middleware and not a `ContextEdit` for `ContextEditingMiddleware`: an edit's `apply` is
synchronous and sees only the message list, while this needs the run config (which thread)
and the store, which is asynchronous; `awrap_model_call` has both and, like the context
edits, changes only the request. The model calls must therefore be asynchronous
(``ainvoke``/``astream``); a synchronous ``invoke`` is refused by LangChain with a message
saying so.

What comes after the newest message recorded is recorded (`runtimes.core.newest_recorded_id`,
by message id), so nothing is recorded twice across calls, runs or processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.agents.middleware.types import ModelResponse
    from langchain.tools import ToolRuntime
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        message_to_dict,
        messages_from_dict,
    )
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.config import get_config
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "runtimes.langchain needs LangChain v1 and LangGraph; install the extra: "
        "pip install 'frs-mcp[langchain]'"
    ) from exc

from frs import FrsError, Message, NewMessage, ToolCall
from frs.autopilot import Autopilot
from frs.model import Limits, Role
from runtimes.core import (
    Conversation,
    Conversations,
    FrsTools,
    newest_recorded_id,
    summary_role,
    summary_text,
    unrecorded,
)

__all__ = ["INTERFACE", "FRSMiddleware"]

#: The FRS session's interface key: frs-mcp finds a thread's session with
#: ``frs_session(action="start", interface="langchain", conversation=<thread_id>)``.
INTERFACE = "langchain"


class FRSMiddleware(AgentMiddleware):
    """FRS for a LangChain v1 agent: ``create_agent(model, middleware=[FRSMiddleware(db)])``.

    `db` is the SQLite file (or ``postgresql://`` URL) frs-mcp serves. The store opens on the
    first model call, in the running loop; close it in that loop (``await frs.aclose()``, or
    ``async with FRSMiddleware(db) as frs:``). Every run needs a ``thread_id`` in its config:
    it names the FRS session.
    """

    def __init__(
        self,
        db: str | os.PathLike[str],
        *,
        limits: Limits | None = None,
        autopilot: Autopilot | None = None,
    ) -> None:
        super().__init__()
        self.conversations = Conversations(db, INTERFACE, limits=limits, autopilot=autopilot)
        self.tools: Sequence[BaseTool] = frs_tools(self.conversations)

    async def aclose(self) -> None:
        """Close the store; the next model call opens it again."""
        await self.conversations.close()

    async def __aenter__(self) -> FRSMiddleware:
        await self.conversations.env()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        """Record the state's new messages, then call the model on the distilled thread."""
        conversation = self.conversations.get(thread_id(get_config()))
        messages = await distill(conversation, request.state["messages"])
        return await handler(request.override(messages=messages))

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Record the run's last messages (its answer), which no model call follows."""
        conversation = self.conversations.get(thread_id(get_config()))
        await record_new(conversation, state["messages"])
        return None


def thread_id(config: RunnableConfig) -> str:
    """The run's ``thread_id``: the conversation its FRS session is kept under."""
    found = (config.get("configurable") or {}).get("thread_id")
    if found is None or str(found) == "":
        raise ValueError(
            "FRSMiddleware keeps one FRS session per LangGraph thread, and this run has no "
            "thread_id. Run the agent with config={'configurable': {'thread_id': '...'}}."
        )
    return str(found)


async def distill(conversation: Conversation, state: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Record what `state` holds after the newest recorded message; the live thread back as
    LangChain messages (`to_thread`)."""
    entries = await conversation.entries()
    if await record_new(conversation, state, entries):
        entries = await conversation.entries()
    return to_thread(entries)


async def record_new(
    conversation: Conversation,
    state: Sequence[AnyMessage],
    entries: Sequence[Message] | None = None,
) -> int:
    """Record the messages of `state` after the newest one recorded; how many."""
    if entries is None:
        entries = await conversation.entries()
    last = await newest_recorded_id(conversation, entries)
    new = [state[i] for i in unrecorded([message.id for message in state], last, entries)]
    await conversation.record([to_frs(message) for message in new])
    return len(new)


# -- messages both ways --------------------------------------------------------------------------

_ROLES: dict[str, Role] = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def to_frs(message: BaseMessage) -> NewMessage:
    """A LangChain message as FRS records it: role, text, tool calls, and the whole message
    (`message_to_dict`) as its raw item, which `to_langchain` gives back."""
    role = _ROLES.get(message.type) or _chat_role(message)
    calls: tuple[ToolCall, ...] = ()
    if isinstance(message, AIMessage):
        calls = tuple(
            ToolCall(call["id"] or f"{message.id}/{index}", call["name"], _json(call["args"]))
            for index, call in enumerate(message.tool_calls)
        )
    return NewMessage(
        role=role,
        content=_text(message),
        name=message.name if isinstance(message, ToolMessage) else None,
        tool_calls=calls,
        tool_call_id=message.tool_call_id if isinstance(message, ToolMessage) else None,
        interface_message_id=message.id,
        raw=_json(message_to_dict(message)),
    )


def to_thread(entries: Sequence[Message]) -> list[AnyMessage]:
    """The live thread as the model receives it (`to_langchain`), each summary in the role
    `summary_role` gives it: where a user turn is needed, a `HumanMessage`, merged into the
    human message right after it (the summary its first text block) so turns alternate."""
    out: list[AnyMessage] = []
    for entry in entries:
        message = to_langchain(entry)
        if message is None:
            continue
        if entry.kind == "summary":
            before = [m for m in out if not isinstance(m, SystemMessage)]
            if summary_role(_role(before[-1]) if before else None) == "user":
                message = HumanMessage(content=message.content, id=message.id)
        elif isinstance(message, HumanMessage) and out and _is_summary(out[-1]):
            blocks = [*_blocks(out[-1].content), *_blocks(message.content)]
            out[-1] = message.model_copy(update={"content": blocks})
            continue
        out.append(message)
    return out


def _is_summary(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and str(message.id).startswith("frs-SQ.")


def _blocks(content: str | list[str | dict[Any, Any]]) -> list[str | dict[Any, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{"type": "text", "text": b} if isinstance(b, str) else b for b in content]


def _role(message: BaseMessage) -> Role:
    return _ROLES.get(message.type) or _chat_role(message)


def to_langchain(entry: Message) -> AnyMessage | None:
    """An entry of the live thread as the model receives it: the recorded message itself, a
    summary as an `AIMessage`, a message recorded without one (through frs-mcp) from its
    fields; None for thinking, which the model is not sent."""
    if entry.kind == "thinking":
        return None
    if entry.kind == "summary":
        return AIMessage(content=summary_text(entry), id=f"frs-SQ.{entry.squash_n}")
    if entry.raw is not None:
        (message,) = messages_from_dict([json.loads(entry.raw)])
        return message  # type: ignore[return-value]  # every message type is an AnyMessage
    ident = f"frs-M.{entry.number}"
    if entry.role == "assistant":
        calls = [
            {"id": call.id, "name": call.name, "args": _arguments(call.arguments)}
            for call in entry.tool_calls
        ]
        return AIMessage(content=entry.content, tool_calls=calls, id=ident)
    if entry.role == "tool":
        return ToolMessage(
            content=entry.content, tool_call_id=entry.tool_call_id or "", name=entry.name, id=ident
        )
    if entry.role == "system":
        return SystemMessage(content=entry.content, id=ident)
    return HumanMessage(content=entry.content, id=ident)


def _chat_role(message: BaseMessage) -> Role:
    role = getattr(message, "role", "user")
    return _ROLES.get(role) or ("assistant" if role == "assistant" else "user")


def _text(message: BaseMessage) -> str:
    """What FRS shows of a message: its text blocks, or its content as JSON if it has none."""
    text = message.text
    if text or isinstance(message.content, str):
        return text
    return _json(message.content)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _arguments(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


# -- the FRS tools -------------------------------------------------------------------------------


def frs_tools(conversations: Conversations) -> list[BaseTool]:
    """The FRS tools as LangChain tools, each acting on the FRS session of the thread it runs
    in; an FRS refusal comes back to the model as the tool's error text."""

    def bound(runtime: ToolRuntime) -> FrsTools:
        return FrsTools(conversations.get(thread_id(runtime.config)))

    async def frs_view_thread(runtime: ToolRuntime, last: int | None = None) -> str:
        return await _answer(bound(runtime).frs_view_thread(last))

    async def frs_compress_range(runtime: ToolRuntime, start: int, end: int, summary: str) -> str:
        return await _answer(bound(runtime).frs_compress_range(start, end, summary))

    async def frs_compress_last(runtime: ToolRuntime, count: int, summary: str) -> str:
        return await _answer(bound(runtime).frs_compress_last(count, summary))

    async def get_alias(
        runtime: ToolRuntime, alias: str, offset: int = 0, max_chars: int | None = None
    ) -> str:
        return await _answer(bound(runtime).get_alias(alias, offset, max_chars))

    async def frs_restore(runtime: ToolRuntime, alias: str) -> str:
        return await _answer(bound(runtime).frs_restore(alias))

    tools: list[BaseTool] = []
    for function in (
        frs_view_thread,
        frs_compress_range,
        frs_compress_last,
        get_alias,
        frs_restore,
    ):
        function.__doc__ = getattr(FrsTools, function.__name__).__doc__
        tools.append(
            StructuredTool.from_function(
                coroutine=function, parse_docstring=True, handle_tool_error=True
            )
        )
    return tools


async def _answer(call: Awaitable[str]) -> str:
    try:
        return await call
    except FrsError as exc:
        raise ToolException(str(exc)) from exc
