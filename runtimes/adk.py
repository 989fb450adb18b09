"""Google ADK: an `LlmAgent`'s model reads its FRS-distilled thread.

`FRSModelCallback` is a ``before_model_callback``. ADK builds each request's contents from the
session's events; the callback records the contents it has not recorded yet into the FRS
session of the ADK session (get-or-create by interface ``"adk"`` and conversation = the ADK
session id), then replaces the request's contents with the session's live thread: squashed
stretches as one model-role summary (ADK's own compaction puts its summaries in that role;
a user-role one where Gemini needs a user turn: `to_contents`), every other content exactly
as ADK built it when it was recorded (function call ids, thought signatures, every part),
so a squash takes effect on the very next call and everything before the first changed entry
stays byte-identical. The ADK session's events are never changed.

Why a callback and not an events-compaction summarizer (`EventsCompactionConfig`): ADK picks
the span a summarizer compacts (a sliding window of invocations) and asks for a summary; FRS's
model picks its own span with the FRS tools, and may restore it. A callback that sends the
distilled thread lets it.

A content has no id, so each is known by a fingerprint of its JSON without function call ids
(ADK strips its own ``adk-`` ids for some models) and the count of equal contents before it;
what comes after the newest one recorded is recorded (`runtimes.core.newest_recorded_id`). A
model content becomes one assistant message; a content of function responses one tool
message per response, the first carrying the content. Calls without an id (Gemini pairs them
by position) get one made from the content's fingerprint, so FRS keeps them paired.

A model turn is recorded from the next request, as ADK sends it back (with the function call
ids it gave the calls). A turn that calls nothing, the run's answer, has no next request in
the run: `FRSModelCallback.after_model`, given as the agent's ``after_model_callback``,
records it at once under the key the next request will give it; without it, it is recorded
when the session's next model call is built.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "runtimes.adk needs Google ADK; install the extra: pip install 'frs-mcp[adk]'"
    ) from exc

from frs import FrsError, Message, NewMessage, ToolCall
from frs.autopilot import Autopilot
from frs.model import Limits
from runtimes.core import (
    Conversation,
    Conversations,
    FrsTools,
    newest_recorded_id,
    summary_role,
    summary_text,
    unrecorded,
)

__all__ = ["INTERFACE", "FRSModelCallback"]

#: The FRS session's interface key: frs-mcp finds an ADK session's FRS session with
#: ``frs_session(action="start", interface="adk", conversation=<ADK session id>)``.
INTERFACE = "adk"


class FRSModelCallback:
    """FRS for an ADK agent: ``LlmAgent(..., before_model_callback=frs, tools=frs.tools)``.

    `db` is the SQLite file (or ``postgresql://`` URL) frs-mcp serves. The store opens on the
    first model call, in the running loop; close it in that loop (``await frs.aclose()``, or
    ``async with FRSModelCallback(db) as frs:``).
    """

    def __init__(
        self,
        db: str | os.PathLike[str],
        *,
        limits: Limits | None = None,
        keep: int = 1024,
        autopilot: Autopilot | None = None,
    ) -> None:
        self.conversations = Conversations(
            db, INTERFACE, limits=limits, keep=keep, autopilot=autopilot
        )
        self.tools: list[FunctionTool] = frs_tools(self.conversations)
        # Per ADK session, how many contents of each fingerprint its last request held: the
        # key `after_model` gives the answer is the one the next request will give it.
        self._counts: OrderedDict[str, Counter[str]] = OrderedDict()
        self._keep = keep

    async def __call__(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """Record the request's new contents; send the distilled thread instead of them."""
        session = callback_context.session.id
        keys = content_keys(llm_request.contents)
        self._counts.pop(session, None)
        self._counts[session] = Counter(key.rsplit("#", 1)[0] for key in keys)
        while len(self._counts) > self._keep:
            self._counts.popitem(last=False)
        conversation = self.conversations.get(session)
        llm_request.contents = await distill(conversation, llm_request.contents, keys)
        return None

    async def after_model(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        """Record a model turn that calls no tool (the run's answer) as soon as it is made;
        the agent's ``after_model_callback``. Other turns are left to the next request."""
        content = llm_response.content
        session = callback_context.session.id
        counts = self._counts.get(session)
        if llm_response.partial or content is None or content.role != "model" or counts is None:
            return None
        if any(part.function_call for part in content.parts or []):
            return None
        key = f"adk:{fingerprint(content)}"
        recorded = to_frs([content], [f"{key}#{counts[key]}"], 0)
        counts[key] += 1
        await self.conversations.get(session).record(recorded)
        return None

    async def aclose(self) -> None:
        """Close the store; the next model call opens it again."""
        await self.conversations.close()

    async def __aenter__(self) -> FRSModelCallback:
        await self.conversations.env()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def distill(
    conversation: Conversation,
    contents: Sequence[types.Content],
    keys: Sequence[str] | None = None,
) -> list[types.Content]:
    """Record the contents after the newest recorded one (`keys`: their `content_keys`); the
    live thread back as contents."""
    entries = await conversation.entries()
    keys = keys if keys is not None else content_keys(contents)
    last = await newest_recorded_id(conversation, entries)
    # A function response after a content's first is recorded as `<key>+<n>`: its content's.
    indexes = unrecorded(keys, last.split("+", 1)[0] if last else None, entries)
    new = [message for index in indexes for message in to_frs(contents, keys, index)]
    if new:
        await conversation.record(new)
        entries = await conversation.entries()
    return to_contents(entries)


def to_contents(entries: Sequence[Message]) -> list[types.Content]:
    """The live thread as the model receives it (`to_content`), each summary in the role
    `summary_role` gives it (user-role where Gemini needs a user turn: first, or after a model
    turn) and merged into the content right after it when that one has the same role (the
    summary its first part), so the first content is user-role and roles alternate."""
    out: list[types.Content] = []
    summary: types.Content | None = None  # the summary ending `out`
    for entry in entries:
        content = to_content(entry)
        if content is None:
            continue
        if entry.kind == "summary":
            previous = None if not out else "assistant" if out[-1].role == "model" else "user"
            role = "user" if summary_role(previous) == "user" else "model"
            summary = types.Content(role=role, parts=content.parts)
            out.append(summary)
            continue
        if summary is not None and content.role == summary.role:
            parts = [*(summary.parts or []), *(content.parts or [])]
            out[-1] = types.Content(role=content.role, parts=parts)
        else:
            out.append(content)
        summary = None
    return out


def content_keys(contents: Sequence[types.Content]) -> list[str]:
    """Each content's key: its fingerprint and how many equal contents come before it."""
    seen: dict[str, int] = {}
    keys = []
    for content in contents:
        print_ = fingerprint(content)
        keys.append(f"adk:{print_}#{seen.get(print_, 0)}")
        seen[print_] = seen.get(print_, 0) + 1
    return keys


def fingerprint(content: types.Content) -> str:
    """The first 16 hex digits of the SHA-256 of the content's JSON, function call ids left
    out (ADK sends its own ``adk-`` ids to some models only)."""
    data = content.model_dump(mode="json", exclude_none=True)
    for part in data.get("parts") or []:
        for field in ("function_call", "function_response"):
            if isinstance(part.get(field), dict):
                part[field].pop("id", None)
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- contents both ways --------------------------------------------------------------------------


def to_frs(contents: Sequence[types.Content], keys: Sequence[str], index: int) -> list[NewMessage]:
    """Content `index` as FRS records it (module docstring); the content itself is the raw
    item of the first message, and the others carry an empty one (`to_content` skips them)."""
    content, key = contents[index], keys[index]
    parts = content.parts or []
    raw = content.model_dump_json(exclude_none=True)
    text = "\n".join(_describe(part) for part in parts if _shown(part))
    if content.role == "model":
        calls = tuple(
            ToolCall(call.id or f"{key}/{n}", call.name or "", _json(call.args or {}))
            for n, call in enumerate(part.function_call for part in parts if part.function_call)
        )
        return [NewMessage("assistant", text, tool_calls=calls, interface_message_id=key, raw=raw)]
    responses = [part.function_response for part in parts if part.function_response]
    if not responses:
        return [NewMessage("user", text, interface_message_id=key, raw=raw)]
    answered = _pending_calls(contents, keys, index)
    messages = []
    for n, response in enumerate(responses):
        body = _json(response.response or {})
        messages.append(
            NewMessage(
                "tool",
                f"{body}\n{text}" if n == 0 and text else body,
                name=response.name,
                tool_call_id=response.id or _answering(answered, response.name),
                interface_message_id=key if n == 0 else f"{key}+{n}",
                raw=raw if n == 0 else "",
            )
        )
    return messages


def _pending_calls(
    contents: Sequence[types.Content], keys: Sequence[str], index: int
) -> list[tuple[str, str]]:
    """The calls (name, FRS id) of the model content right before content `index`: the ones
    its function responses answer when they carry no id."""
    if index == 0 or contents[index - 1].role != "model":
        return []
    parts = contents[index - 1].parts or []
    calls = [part.function_call for part in parts if part.function_call]
    return [(call.name or "", call.id or f"{keys[index - 1]}/{n}") for n, call in enumerate(calls)]


def _answering(pending: list[tuple[str, str]], name: str | None) -> str | None:
    """The FRS id of the first pending call of that name (taken off the list), else None."""
    for n, (call_name, call_id) in enumerate(pending):
        if call_name == (name or ""):
            del pending[n]
            return call_id
    return None


def to_content(entry: Message) -> types.Content | None:
    """An entry of the live thread as the model receives it: the recorded content itself, a
    summary as a model-role text, a message recorded through frs-mcp from its fields; None for
    thinking and for the messages whose content another message carries."""
    if entry.kind == "thinking" or entry.raw == "":
        return None
    if entry.kind == "summary":
        return types.Content(role="model", parts=[types.Part(text=summary_text(entry))])
    if entry.raw is not None:
        return types.Content.model_validate_json(entry.raw)
    if entry.role == "assistant":
        parts = [types.Part(text=entry.content)] if entry.content else []
        parts += [
            types.Part(
                function_call=types.FunctionCall(
                    id=call.id, name=call.name, args=_arguments(call.arguments)
                )
            )
            for call in entry.tool_calls
        ]
        return types.Content(role="model", parts=parts or [types.Part(text="")])
    if entry.role == "tool":
        response = types.FunctionResponse(
            id=entry.tool_call_id, name=entry.name, response=_arguments(entry.content, "result")
        )
        return types.Content(role="user", parts=[types.Part(function_response=response)])
    return types.Content(role="user", parts=[types.Part(text=entry.content)])


def _shown(part: types.Part) -> bool:
    """Whether FRS shows the part as text: not a thought, a call or a response."""
    return not (part.thought or part.function_call or part.function_response)


def _describe(part: types.Part) -> str:
    """A part as text: its text, code, or what the data is."""
    if part.text is not None:
        return part.text
    if part.executable_code is not None:
        return part.executable_code.code or ""
    if part.code_execution_result is not None:
        return part.code_execution_result.output or ""
    if part.inline_data is not None:
        size = len(part.inline_data.data or b"")
        return f"[{part.inline_data.mime_type or 'data'}, {size:,} bytes]"
    if part.file_data is not None:
        return f"[{part.file_data.mime_type or 'file'}: {part.file_data.file_uri}]"
    return ""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _arguments(text: str, key: str = "arguments") -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {key: text}
    return value if isinstance(value, dict) else {key: value}


# -- the FRS tools -------------------------------------------------------------------------------


def frs_tools(conversations: Conversations) -> list[FunctionTool]:
    """The FRS tools as ADK function tools, each acting on the FRS session of the ADK session
    it runs in; an FRS refusal comes back to the model as ``{"error": ...}``."""

    def bound(tool_context: ToolContext) -> FrsTools:
        return FrsTools(conversations.get(tool_context.session.id))

    async def frs_view_thread(tool_context: ToolContext, last: int | None = None) -> Any:
        return await _answer(bound(tool_context).frs_view_thread, last)

    async def frs_compress_range(
        tool_context: ToolContext, start: int, end: int, summary: str
    ) -> Any:
        return await _answer(bound(tool_context).frs_compress_range, start, end, summary)

    async def frs_compress_last(tool_context: ToolContext, count: int, summary: str) -> Any:
        return await _answer(bound(tool_context).frs_compress_last, count, summary)

    async def get_alias(
        tool_context: ToolContext, alias: str, offset: int = 0, max_chars: int | None = None
    ) -> Any:
        return await _answer(bound(tool_context).get_alias, alias, offset, max_chars)

    async def frs_restore(tool_context: ToolContext, alias: str) -> Any:
        return await _answer(bound(tool_context).frs_restore, alias)

    tools = []
    for function in (
        frs_view_thread,
        frs_compress_range,
        frs_compress_last,
        get_alias,
        frs_restore,
    ):
        function.__doc__ = getattr(FrsTools, function.__name__).__doc__
        tools.append(FunctionTool(function))
    return tools


async def _answer(operation: Any, *args: Any) -> Any:
    try:
        return await operation(*args)
    except FrsError as exc:
        return {"error": str(exc)}
