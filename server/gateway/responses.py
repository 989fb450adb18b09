"""The OpenAI Responses wire (`/v1/responses`): input items read into `frs.wire` terms.

`parse` finds every item of `input` with its character span and groups them by side
(`server.gateway.runs`): the model's messages, calls (`function_call`, `custom_tool_call`,
Codex's `tool_search_call`, namespaced calls) and `reasoning` items are assistant runs; the
outputs that answer them (paired by `call_id`) and user messages are user runs; developer and
system messages, `compaction` items and items of kinds the gateway does not know stand alone
and are never touched. `instructions`, `tools` and every other field are outside `input`, so
no rewrite can reach them (the recorder refuses one that would).

Reasoning items. OpenAI documents no binding of a reasoning item to the items before it (unlike
Anthropic's thinking signatures): reasoning from earlier turns is simply not used by the model,
and within a tool loop the reasoning items are to be passed back with the calls they precede.
What the API does refuse is a reasoning item without the item that followed it, or (items sent
by id) an item without its reasoning item. So a reasoning item goes only with its whole turn
(its run is inside a squashed span), and reasoning after a squash, of any turn, is forwarded
exactly as the host sent it: nothing waits for it, nothing of it is left out
(`WireRequest.thinking_signed` False). Its `encrypted_content` is never read or written.

A request that names `previous_response_id` continues state the gateway cannot see, and one
signed for a ChatGPT account is not API-key traffic: both are forwarded byte for byte
(`WireRequest.untouchable`). `store` changes nothing here: with stored items sent by their ids,
whole runs still go together, so no reasoning item is parted from the items that follow it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from frs.conversations import from_headers
from frs.wire.compactions import find as find_compaction
from frs.wire.matching import canonical
from frs.wire.requests import (
    BlockKind,
    Parsed,
    RewritePlan,
    Span,
    WireBlock,
    WireMessage,
    WireRequest,
    WireRole,
)
from server.gateway import runs
from server.gateway.spans import array_items, compact, decode, object_members
from server.gateway.wires import WireFormat

RESPONSES_PATH = "/v1/responses"
#: The header Codex adds when signed in with a ChatGPT account rather than an API key: such a
#: request is recorded but forwarded exactly as sent (API-key traffic only, as for Claude).
CHATGPT_HEADER = "chatgpt-account-id"

#: The model's calls that the host answers with an output item of the paired kind.
CALLS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "tool_search_call": "tool_search_output",
    "computer_call": "computer_call_output",
}
OUTPUTS = {output: call for call, output in CALLS.items()}
#: The model's own items that need no answer from the host (server tools run by OpenAI).
MODEL_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
    }
)
_USER_PARTS = frozenset({"input_text", "input_image", "input_file", "input_audio"})
_ASSISTANT_PARTS = frozenset({"output_text", "refusal"})


class OpenAIResponses(WireFormat):
    """The Responses wire (`/v1/responses`): Codex CLI's."""

    name = "openai-responses"
    path = RESPONSES_PATH

    def named(self, headers: Mapping[str, str]) -> tuple[str, str] | None:
        """The conversation a request names in a header (`frs.conversations.HOST_KEYS`: Codex's
        `session-id`, the id its MCP tool calls carry in `_meta`)."""
        found = from_headers(headers)
        return (found.interface, found.id) if found else None

    def parse(
        self, body: str, headers: Mapping[str, str], previous: Parsed | None = None
    ) -> WireRequest:
        """The request's items grouped into messages, with their spans; raises ValueError (or
        KeyError, TypeError) on a body that is not a Responses request with an input array."""
        reader = runs.Reader(runs.kept(body, previous), _item)
        array: Span | None = None

        def read_input(text: str, at: int) -> tuple[object, int]:
            nonlocal array
            if text[at : at + 1] != "[":
                return decode(text, at)  # a plain string: nothing the gateway can record
            _, array = array_items(text, at, reader)
            return None, array.end

        top, _ = object_members(body, 0, {"input": read_input})
        fields = {m.key: m.value for m in top}
        if "input" not in fields:
            raise ValueError("no input")
        tools = fields.get("tools")
        model = fields.get("model")
        untouchable = "previous_response_id" if fields.get("previous_response_id") else None
        if CHATGPT_HEADER in {name.lower() for name in headers}:
            untouchable = "a ChatGPT subscription"
        messages = runs.grouped(reader.items)
        found = find_compaction(messages)
        return WireRequest(
            messages=messages,
            messages_span=array,
            model=model if isinstance(model, str) else "",
            has_tools=bool(isinstance(tools, list) and tools),
            untouchable=untouchable if array is not None else "input is not an array",
            thinking_signed=False,
            summarise=found.summarise,
            instruction=found.instruction,
            summary=found.summary,
        )

    def answer_of(self, raw: bytes, content_type: str) -> WireMessage | None:
        """The model's output items of a finished answer (a stream that reached
        response.completed, or a JSON response) as the assistant run the next request will carry;
        None for anything else (an error, a failed or cut stream: the next request brings it)."""
        if content_type.startswith("text/event-stream"):
            output = _streamed(raw.decode("utf-8"))
        elif content_type.startswith("application/json"):
            response = json.loads(raw)
            ok = isinstance(response, dict) and response.get("status") in ("completed", None)
            output = response.get("output") if ok and response.get("object") == "response" else None
        else:
            return None
        if not isinstance(output, list) or not output:
            return None
        items = [_item(text, 0)[0] for text in (compact(item) for item in output)]
        if any(item.side != "assistant" for item in items):
            return None
        return WireMessage("assistant", Span(0, 0), tuple(b for item in items for b in item.blocks))

    def render(self, body: str, request: WireRequest, plan: RewritePlan) -> str:
        return runs.render(body, request.messages, plan, summary_item)

    def problems(self, payload: object) -> list[str]:
        """What the Responses API would refuse in this request body (decoded JSON), in words:
        items that are not objects or of an unknown role, messages with no content or parts of the
        wrong side, a call without its call_id or repeated, an output that answers no call made
        before it, a call no output answers, a reasoning item not followed by the model's item it
        belongs to (another reasoning item, a user message or an output are not), a call in a
        namespace or of a deferred tool that neither `tools` nor a tool_search_output before it
        defines (Codex's MCP tools are defined only by the tool search's output)."""
        if not isinstance(payload, dict) or "input" not in payload:
            return ["the body is not an object with an input"]
        tools = payload.get("tools")
        check = _Check(*_defined(tools if isinstance(tools, list) else []))
        items = payload["input"]
        if isinstance(items, str):
            return []
        if not isinstance(items, list):
            return ["input is neither a string nor an array"]
        for i, item in enumerate(items):
            check.item(i, item, items)
        return check.unanswered()


WIRE = OpenAIResponses()


def _item(body: str, at: int) -> tuple[runs.Item, int]:
    value, end = decode(body, at)
    span = Span(at, end)
    if not isinstance(value, dict):
        raise ValueError("an input item that is not an object")
    kind = str(value.get("type", "message"))
    side: WireRole
    if kind == "message":
        role = value.get("role")
        text = _parts_text(value.get("content"))
        block = WireBlock("text", span, text, digest=_hash("t", str(role), text))
        if role in ("user", "assistant"):
            side = "user" if role == "user" else "assistant"
            return runs.Item(side, span, (block,)), end
        return runs.Item("system", span, (block,)), end
    if kind in CALLS:
        call = str(value.get("call_id", ""))
        name = str(value.get("name") or ("tool_search" if kind == "tool_search_call" else kind))
        namespace = value.get("namespace")
        if isinstance(namespace, str) and namespace and not name.startswith(namespace):
            name = f"{namespace}__{name}"
        arguments = value.get("arguments", value.get("input", value.get("action", "")))
        shown = arguments if isinstance(arguments, str) else compact(arguments)
        block = WireBlock("tool_use", span, shown, tool_id=call, name=name, digest=_hash("u", call))
        return runs.Item("assistant", span, (block,)), end
    if kind in OUTPUTS:
        call = str(value.get("call_id", ""))
        block = WireBlock(
            "tool_result",
            span,
            _output_text(value),
            tool_id=call,
            digest=_hash("r", call),
            # A tool search's output carries the definitions of the tools it loads: Codex
            # sends its MCP tools nowhere else.
            pinned=kind == "tool_search_output",
        )
        return runs.Item("user", span, (block,)), end
    if kind == "reasoning":
        summary = value.get("summary")
        text = "\n".join(
            str(part.get("text", ""))
            for part in (summary if isinstance(summary, list) else [])
            if isinstance(part, dict)
        )
        marker = str(value.get("encrypted_content") or value.get("id") or canonical(value))
        return runs.Item(
            "assistant", span, (WireBlock("thinking", span, text, digest=_hash("th", marker)),)
        ), end
    if kind in MODEL_ITEMS:
        block = WireBlock("other", span, f"[{kind}]", digest=_digest(value))
        return runs.Item("assistant", span, (block,)), end
    # compaction items, item references, anything new: stand alone, never touched.
    block_kind: BlockKind = "compaction" if kind.startswith("compaction") else "other"
    block = WireBlock(block_kind, span, f"[{kind}]", digest=_digest(value))
    return runs.Item("system", span, (block,)), end


def _parts_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        str(part.get("text", ""))
        if part.get("type") in ("input_text", "output_text", "text")
        else str(part.get("refusal", ""))
        if part.get("type") == "refusal"
        else f"[{part.get('type')}]"
        for part in content
        if isinstance(part, dict)
    ]
    return "\n".join(parts)


def _output_text(item: Mapping[str, Any]) -> str:
    if item.get("type") == "tool_search_output":
        return compact(item.get("tools"))
    output = item.get("output")
    if isinstance(output, dict) and "content" in output:
        output = output["content"]
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _parts_text(output)
    return compact(output) if output is not None else ""


def _hash(*parts: str) -> str:
    """What identifies an item across requests: a message's role and words, a call's or an
    output's call_id, a reasoning item's encrypted content (or id)."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _digest(item: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(dict(item)).encode()).hexdigest()[:32]


def _streamed(text: str) -> list[Any] | None:
    """The output of the stream's response.completed event; None unless it came."""
    for event in text.split("\n\n"):
        data = "".join(line[5:].lstrip() for line in event.splitlines() if line.startswith("data:"))
        if not data or '"response.completed"' not in data:
            continue
        payload = json.loads(data)
        if payload.get("type") == "response.completed":
            output = payload.get("response", {}).get("output")
            return output if isinstance(output, list) else None
    return None


def summary_item(role: str, texts: tuple[str, ...]) -> str:
    """A message item holding the summaries: input_text for the user, output_text for the
    model, as the API takes them back."""
    part = "input_text" if role == "user" else "output_text"
    content = [{"type": part, "text": text} for text in texts]
    return compact({"type": "message", "role": role, "content": content})


@dataclass(slots=True)
class _Check:
    """The Responses API's rules read over one request's input, item by item (`problems`):
    what it found so far, the calls made (and where), those answered, the tools defined."""

    defined: set[str]  # callable names: functions, namespaces, tools a search loaded
    deferred: set[str]  # deferred tools: callable once a tool_search_output defines them
    found: list[str] = field(default_factory=list)
    calls: dict[str, tuple[int, str]] = field(default_factory=dict)  # call_id -> (at, kind)
    answered: set[str] = field(default_factory=set)

    def item(self, i: int, item: object, items: list[Any]) -> None:
        where = f"input[{i}]"
        if not isinstance(item, dict):
            self.found.append(f"{where} is not an object")
            return
        kind = str(item.get("type", "message"))
        if kind == "message":
            self.found.extend(_message_problems(where, item))
        elif kind in CALLS:
            self._call(i, where, item, kind)
        elif kind in OUTPUTS:
            self._output(where, item, kind)
        elif kind == "reasoning":
            if not isinstance(item.get("summary"), list):
                self.found.append(f"{where} is a reasoning item without its summary")
            following = items[i + 1] if i + 1 < len(items) else None
            if not _model_item(following):
                self.found.append(f"{where} is a reasoning item without the item that followed it")

    def _call(self, i: int, where: str, item: Mapping[str, Any], kind: str) -> None:
        call = item.get("call_id")
        if not isinstance(call, str) or not call:
            self.found.append(f"{where} is a {kind} without a call_id")
            return
        if call in self.calls:
            self.found.append(f"{where} repeats call_id {call}")
        self.calls[call] = (i, kind)
        if kind == "function_call" and not (
            isinstance(item.get("name"), str) and isinstance(item.get("arguments"), str)
        ):
            self.found.append(f"{where} is a function_call without its name or arguments")
        namespace = item.get("namespace")
        spaced = isinstance(namespace, str) and bool(namespace)
        tool = namespace if spaced else item.get("name")
        if (spaced or tool in self.deferred) and tool not in self.defined:
            self.found.append(
                f"{where} calls {tool}, which no tool and no tool_search_output before it defines"
            )

    def _output(self, where: str, item: Mapping[str, Any], kind: str) -> None:
        if kind == "tool_search_output":
            self.defined |= _defined(item.get("tools") or [])[0]
        call = str(item.get("call_id"))
        made = self.calls.get(call)
        if made is None or made[1] != OUTPUTS[kind]:
            self.found.append(f"{where} answers call_id {call}, not called before it")
        self.answered.add(call)

    def unanswered(self) -> list[str]:
        """What was found, and then every call no output answered."""
        return [
            *self.found,
            *(
                f"input[{i}] calls call_id {call}, not answered after it"
                for call, (i, _) in self.calls.items()
                if call not in self.answered
            ),
        ]


def _defined(tools: object) -> tuple[set[str], set[str]]:
    """The names a tool list makes callable (functions, namespaces), and those it defers."""
    defined: set[str] = set()
    deferred: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            (deferred if tool.get("defer_loading") is True else defined).add(tool["name"])
    return defined, deferred


def _message_problems(where: str, item: Mapping[str, Any]) -> list[str]:
    role = item.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        return [f"{where} is a message of role {role!r}"]
    content = item.get("content")
    if isinstance(content, str):
        return [] if content else [f"{where} has no content"]
    if not isinstance(content, list) or not content:
        return [f"{where} has no content"]
    allowed = _ASSISTANT_PARTS if role == "assistant" else _USER_PARTS
    return [
        f"{where}.content[{j}] is not a part a {role} message takes"
        for j, part in enumerate(content)
        if not isinstance(part, dict) or part.get("type") not in allowed
    ]


def _model_item(item: object) -> bool:
    """An item the model wrote that may follow its reasoning."""
    if not isinstance(item, dict):
        return False
    kind = str(item.get("type", "message"))
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in CALLS or kind in MODEL_ITEMS
