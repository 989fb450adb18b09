"""FRS in the OpenAI Agents SDK: a `Session` the model can distill, and the tools to do it.

``FRSSession(session_id, db_path)`` is built like the SDK's ``SQLiteSession(session_id,
db_path)``: it records every item into the FRS session of (interface ``openai-agents``,
conversation ``session_id``) and `get_items` hands back the distilled thread as Responses input
items. One entry is one item, kept whole as JSON beside the text FRS shows, and handed back
exactly as given (ids, status, provider fields); a reasoning item travels with the item that
follows it, so a squash never leaves one without its following item. A squashed stretch comes
back as one message holding the summary and its alias: an assistant message, or a user one
where the model needs a user turn (`thread_items`). `frs_tools(session)` are the
FRS tools as function tools, and `session.model_input` (a ``call_model_input_filter``) sends the
distilled thread on every model call of a run, so a squash takes effect on the very next call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

try:
    from agents import FunctionTool, RunContextWrapper, function_tool
    from agents.items import TResponseInputItem
    from agents.memory import SessionABC, SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise ImportError(
        "runtimes.openai_agents needs the OpenAI Agents SDK: pip install 'frs-mcp[openai-agents]'"
    ) from exc

from frs import FrsError, Message, NewMessage, Role, ToolCall
from frs.autopilot import Autopilot
from frs.raw import HOLE, Raw, folded, load_all
from runtimes.core import Conversation, FrsTools, summary_role, summary_text

__all__ = ["INTERFACE", "FRSSession", "entry_items", "frs_tools", "item_message", "thread_items"]

#: The FRS interface of every session this adapter keeps (the conversation is the session id).
INTERFACE = "openai-agents"

# What FRS shows for an item it holds only whole: the item's type and these of its fields.
_SHOWN_FIELDS = ("name", "action", "arguments", "input", "output", "query", "status")


class FRSSession(SessionABC):
    """The OpenAI Agents SDK `Session` over FRS: ``FRSSession(session_id, db_path)``.

    `session_id` is the SDK's key of the conversation (its `Session` protocol names it so),
    kept by FRS as the `conversation` of `self.conversation`; FRS's own id of the session that
    keeps it is ``await session.conversation.frs_session_id()``.

    `db_path` is a SQLite file (created if missing) or a ``postgresql://`` URL (the
    ``postgres`` extra). The database opens on first use, in the running event loop; close it
    with ``await session.close()`` (or ``async with FRSSession(...) as session``).
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = "frs.db",
        session_settings: SessionSettings | None = None,
        *,
        autopilot: Autopilot | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        self.conversation = Conversation(db_path, INTERFACE, session_id, autopilot=autopilot)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The distilled thread as Responses input items, oldest first; the newest `limit`."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        # Each entry holds one item or more (a reasoning item and the item it led to).
        entries = await self.conversation.newest(limit)
        if all(isinstance(entry, Raw) for entry in entries):  # recorded here: parsed at once
            items = [item for items in load_all(cast(list[Raw], entries)) for item in items]
        else:
            items = thread_items(entries)
        return items[-limit:] if limit is not None else items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record the items in one transaction, in order."""
        messages: list[NewMessage] = []
        reasoning: list[dict[str, Any]] = []
        for item in items:
            plain = _plain(item)
            if plain.get("type") == "reasoning":
                reasoning.append(plain)  # it travels with the item it led to
                continue
            messages.append(item_message(plain, reasoning))
            reasoning = []
        if reasoning:  # a batch ending in reasoning: kept as an entry of its own, in place
            messages.append(item_message(reasoning.pop(), reasoning))
        await self.conversation.record(messages)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (the SDK rewinds a retried turn so). A squash
        that ends the thread is refused: restore it first (frs_restore)."""
        entry = await self.conversation.remove_newest()
        if entry is None:
            return None
        items = entry_items(entry)
        if len(items) > 1:  # the reasoning before it stays, as the item it was
            rest = [cast(dict[str, Any], item) for item in items[:-1]]
            await self.conversation.record([item_message(rest[-1], rest[:-1])])
        return items[-1]

    async def clear_session(self) -> None:
        """Start the conversation over. FRS loses nothing: the old thread is set aside whole
        (its conversation key marked so), and the next item starts a new FRS session."""
        await self.conversation.clear()

    async def close(self) -> None:
        await self.conversation.close()

    async def __aenter__(self) -> FRSSession:
        await self.conversation.env()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def model_input(self, data: CallModelData[Any]) -> ModelInputData:
        """A ``RunConfig(call_model_input_filter=session.model_input)``: every model call of a
        run gets the distilled thread, so a squash the model made by a tool takes effect on
        its very next call. The runner records each turn before the next call (its input
        before the first), so the session holds everything the call needs; before anything is
        recorded the input passes unchanged."""
        items = await self.get_items()
        if not items:
            return data.model_data
        return ModelInputData(input=_for_replay(items), instructions=data.model_data.instructions)


def frs_tools(session: FRSSession) -> list[FunctionTool]:
    """The FRS tools (view, squash a range or the newest entries, read an alias, restore) as
    function tools bound to `session`'s thread. A refusal reaches the model as the tool's
    result, in words it can act on."""
    tools = FrsTools(session.conversation)
    return [
        function_tool(fn, failure_error_function=_tool_error, strict_mode=False)
        for fn in tools.functions()
    ]


def _tool_error(context: RunContextWrapper[Any], error: Exception) -> str:
    if isinstance(error, FrsError):
        return str(error)
    return f"The FRS tool failed: {type(error).__name__}: {error}"


# -- items <-> messages ---------------------------------------------------------------------------


def _plain(item: Any) -> dict[str, Any]:
    """An item as a plain dict (the SDK hands in TypedDicts; a model object, dumped)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is not None:
        return cast(dict[str, Any], dump(exclude_unset=True))
    raise TypeError(f"Not a Responses input item: {type(item).__name__}")


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its parts' texts (other parts named)."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, dict):
            text = part.get("text", part.get("refusal"))
            parts.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
    return "\n".join(parts)


def item_message(item: dict[str, Any], reasoning: Sequence[dict[str, Any]] = ()) -> NewMessage:
    """The FRS message for one item (and the reasoning items that led to it): a message as its
    role and text, a call as an assistant's tool call, an output as the result that answers
    it, anything else as an assistant entry showing its type; the items themselves as `raw`."""
    items = [*reasoning, item]
    kind = item.get("type")
    role = item.get("role")
    call_id = item.get("call_id")
    if kind in (None, "message") and role in ("user", "assistant", "system", "developer"):
        frs_role: Role = "system" if role == "developer" else role
        text = _text(item.get("content"))
        return NewMessage(frs_role, text, raw=_raw(items, text))
    if kind == "function_call":
        call = ToolCall(str(call_id), str(item.get("name")), str(item.get("arguments") or "{}"))
        return NewMessage("assistant", "", tool_calls=(call,), raw=_raw(items))
    if isinstance(kind, str) and kind.endswith("_output") and isinstance(call_id, str):
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return NewMessage("tool", text, tool_call_id=call_id, raw=_raw(items, text))
    shown = {key: item[key] for key in _SHOWN_FIELDS if key in item}
    text = f"[{kind or 'item'}] {json.dumps(shown, ensure_ascii=False)}" if shown else f"[{kind}]"
    if isinstance(call_id, str) and isinstance(kind, str) and kind.endswith("_call"):
        # A hosted or custom tool call answered by a `<type>_output` later: paired like a
        # function call, so a squash never separates them.
        call = ToolCall(call_id, str(item.get("name") or kind), "{}")
        return NewMessage("assistant", text, tool_calls=(call,), raw=_raw(items))
    return NewMessage("assistant", text, raw=_raw(items))


def _raw(items: list[dict[str, Any]], text: str = "") -> str:
    """The items as JSON for `raw`; when the last one holds `text` as its content, its text
    part's text or its output, folded around it (`frs.raw.folded`): stored once, not twice."""
    *before, item = items
    if text:
        content = item.get("content")
        if content == text:
            return folded([*before, {**item, "content": HOLE}])
        if item.get("output") == text:
            return folded([*before, {**item, "output": HOLE}])
        if isinstance(content, list):
            texts = [
                i for i, part in enumerate(content) if isinstance(part, dict) and "text" in part
            ]
            if len(texts) == 1 and content[texts[0]]["text"] == text:
                parts = list(content)
                parts[texts[0]] = {**parts[texts[0]], "text": HOLE}
                return folded([*before, {**item, "content": parts}])
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


def entry_items(entry: Message | Raw) -> list[TResponseInputItem]:
    """The Responses input items of one entry: its own items exactly as recorded, a summary
    as an assistant message with its alias, a message recorded elsewhere (frs-mcp) as the
    items it stands for."""
    if isinstance(entry, Raw):
        return cast(list[TResponseInputItem], entry.value())
    if entry.raw is not None:
        return cast(list[TResponseInputItem], json.loads(entry.raw))
    if entry.kind == "summary":
        return [_message("assistant", summary_text(entry))]
    if entry.role == "tool":
        return [
            cast(
                TResponseInputItem,
                {
                    "type": "function_call_output",
                    "call_id": entry.tool_call_id or "",
                    "output": entry.content,
                },
            )
        ]
    items = [_message(entry.role, entry.content)] if entry.content or not entry.tool_calls else []
    items.extend(
        cast(
            TResponseInputItem,
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            },
        )
        for call in entry.tool_calls
    )
    return items


def thread_items(entries: Sequence[Message | Raw]) -> list[TResponseInputItem]:
    """The entries as the model receives them (`entry_items`), each summary in the role
    `summary_role` gives it: where the model needs a user turn (first, or after an assistant
    turn), a user message, merged into the user message right after it (the summary its first
    part), so a model behind the SDK (Anthropic, Gemini through LiteLLM) gets alternating
    turns that open with the user's."""
    out: list[TResponseInputItem] = []
    summary: dict[str, Any] | None = None  # a user-role summary ending `out`
    for entry in entries:
        if isinstance(entry, Message) and entry.kind == "summary":
            role = summary_role(_last_role(out))
            out.append(_message(role, summary_text(entry)))
            summary = cast(dict[str, Any], out[-1]) if role == "user" else None
            continue
        items = entry_items(entry)
        if summary is not None and items and _last_role(items[:1]) == "user":
            first = cast(dict[str, Any], items[0])
            parts = [*_parts(summary["content"]), *_parts(first.get("content"))]
            out[-1] = cast(TResponseInputItem, {**first, "content": parts})
            items = items[1:]
        summary = None
        out.extend(items)
    return out


def _last_role(items: Sequence[TResponseInputItem]) -> str | None:
    """The role of the last turn `items` give the model (system ones aside), None if none."""
    for item in reversed(items):
        plain = cast(dict[str, Any], item)
        kind = plain.get("type")
        if kind in (None, "message"):
            role = plain.get("role")
            if role in ("system", "developer"):
                continue
            return "assistant" if role == "assistant" else "user"
        return "tool" if isinstance(kind, str) and kind.endswith("_output") else "assistant"
    return None


def _parts(content: Any) -> list[Any]:
    """A user message's content as input parts."""
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return list(content or [])


def _message(role: str, text: str) -> TResponseInputItem:
    return cast(TResponseInputItem, {"role": role, "content": text})


def _for_replay(items: list[TResponseInputItem]) -> list[TResponseInputItem]:
    """Items as the runner itself replays session history (its session-only metadata
    stripped), so the filtered input is what the SDK would have sent."""
    try:
        from agents.run_internal.items import normalize_input_items_for_api
    except ImportError:  # pragma: no cover - a later SDK that moved it
        return items
    return normalize_input_items_for_api(items)
