"""The Anthropic Messages wire: a request body read into `frs.wire` terms, a plan written back.

`parse` finds every message and content block of a `/v1/messages` body with its character
span; `render` turns a `frs.wire.requests.RewritePlan` into splices of those spans (a message that
changes is rebuilt from its own blocks' original text plus the summaries; nothing else is
re-serialised); `problems` (`server.gateway.anthropic_rules`) checks a body against the rules
the API enforces, and is what the gateway checks a rewrite with before sending it (and the
tests check every request with).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from frs.conversations import from_headers
from frs.wire.anchors import lifetime, markers
from frs.wire.compactions import find as find_compaction
from frs.wire.matching import canonical
from frs.wire.requests import (
    BlockKind,
    Parsed,
    RewritePlan,
    Span,
    Splice,
    WireBlock,
    WireMessage,
    WireRequest,
    apply_splices,
    common_prefix,
)
from server.gateway import anthropic_rules
from server.gateway.spans import array_items, compact, decode, first_item, object_members
from server.gateway.wires import WireFormat

#: The header a Claude Code subagent's requests add to their session's.
AGENT_HEADER = "x-claude-code-agent-id"
#: Paths this wire rewrites (POST); every other path is forwarded as it came.
MESSAGES_PATH = "/v1/messages"
#: The beta the request needs to ask for `drop_block` (and to get `input_transformations`).
BINDING_BETA = "thinking-binding-controls-2026-08-01"
_DROP = '"block_binding":{"prefix_mismatch_behavior":"drop_block"}'

_KINDS: dict[str, BlockKind] = {
    "text": "text",
    "tool_use": "tool_use",
    "tool_result": "tool_result",
    "thinking": "thinking",
    "redacted_thinking": "redacted_thinking",
    "compaction": "compaction",
}


#: Blocks a squash keeps where they are (`frs.wire.requests.WireBlock.pinned`): the server-side tool
#: search's result (its tool_references load deferred tools) and a file put into the
#: code-execution container.
_PINNED = frozenset({"tool_search_tool_result", "container_upload"})


def subscription(headers: Mapping[str, str]) -> bool:
    """Whether the request is signed for a Claude subscription (an OAuth token, not an API
    key): such requests reach the API exactly as sent, whatever the gateway knows."""
    auth = headers.get("authorization", "")
    beta = headers.get("anthropic-beta", "")
    return auth.lower().startswith("bearer sk-ant-oat") or "oauth-" in beta


class AnthropicMessages(WireFormat):
    """The Messages wire (`/v1/messages`): Claude Code's, and every host that speaks Anthropic."""

    name = "anthropic"
    path = MESSAGES_PATH
    local_rules = True  # pairing is with the next message, roles alternate
    beta = BINDING_BETA

    def named(self, headers: Mapping[str, str]) -> tuple[str, str] | None:
        """The conversation a request names in a header (`frs.conversations.HOST_KEYS`, the table
        the MCP server reads too, so both find one session); a Claude Code subagent
        (`X-Claude-Code-Agent-Id`) is a conversation of its own, `<session>/<agent>`."""
        found = from_headers(headers)
        if found is None:
            return None
        agent = headers.get(AGENT_HEADER, "").strip()
        if found.interface == "claude-code" and agent:
            return found.interface, f"{found.id}/{agent}"
        return found.interface, found.id

    def parse(
        self, body: str, headers: Mapping[str, str], previous: Parsed | None = None
    ) -> WireRequest:
        """The request's messages and blocks with their spans; raises ValueError (or KeyError,
        TypeError) on a body that is not a Messages request. Each character is decoded once:
        the messages are read as they are walked, not decoded whole first, and those `previous`
        already read (the same characters at the same place) are taken over as they are."""
        kept = _kept(body, previous)
        array: Span | None = None

        taken = 0  # messages taken over from `previous`

        def messages(text: str, at: int) -> tuple[tuple[WireMessage, ...], int]:
            read: list[WireMessage] = []
            nonlocal array, taken

            def one(text: str, at: int) -> tuple[WireMessage, int]:
                message, end = _message(text, at)
                read.append(message)
                return message, end

            # The messages taken over are not walked again: reading resumes after the last.
            resume = None
            if kept and kept[0].span.start == first_item(text, at):
                read.extend(kept)
                resume = kept[-1].span.end
                taken = len(kept)
            _, array = array_items(text, at, one, resume)
            return tuple(read), array.end

        top, _ = object_members(body, 0, {"messages": messages})
        fields = {m.key: m for m in top}
        if "messages" not in fields:
            raise ValueError("no messages")
        tools = fields.get("tools")
        model = fields["model"].value if "model" in fields else ""
        thinking = fields.get("thinking")
        setting = thinking.value if thinking is not None else None
        binding = None
        if isinstance(setting, dict) and isinstance(setting.get("block_binding"), dict):
            binding = str(setting["block_binding"].get("prefix_mismatch_behavior", "error"))
        read: tuple[WireMessage, ...] = fields["messages"].value
        found = find_compaction(read)
        head = [
            item
            for name in ("tools", "system")
            if name in fields and isinstance(fields[name].value, list)
            for item in fields[name].value
        ]
        automatic = fields.get("cache_control")
        return WireRequest(
            messages=read,
            messages_span=array,
            model=model if isinstance(model, str) else "",
            has_tools=bool(tools and isinstance(tools.value, list) and tools.value),
            untouchable="subscription" if subscription(headers) else None,
            thinking_type=str(setting.get("type")) if isinstance(setting, dict) else None,
            binding=binding,
            settings=thinking.span if isinstance(setting, dict) and thinking is not None else None,
            summarise=found.summarise,
            instruction=found.instruction,
            summary=found.summary,
            head_markers=markers(head),
            automatic_marker=lifetime(automatic.value) if automatic is not None else None,
            # Those of the messages taken over as they were read, then the new ones': a long
            # request is not walked again for its few breakpoints.
            marked=(
                *(m for m in (previous.request.marked if previous else ()) if m[0] < taken),
                *(
                    (i, j, marker)
                    for i in range(taken, len(read))
                    for j, block in enumerate(read[i].blocks)
                    for marker in block.markers
                ),
            ),
        )

    def answer_of(self, raw: bytes, content_type: str) -> WireMessage | None:
        """The assistant message a finished answer holds (a server-sent event stream, or a JSON
        message), as the next request will carry it; None for anything else (an error, a cut
        stream: the next request brings the answer then)."""
        if content_type.startswith("text/event-stream"):
            blocks = _streamed(raw.decode("utf-8"))
        elif content_type.startswith("application/json"):
            message = json.loads(raw)
            if not isinstance(message, dict) or message.get("type") != "message":
                return None
            blocks = message.get("content")
        else:
            return None
        if not isinstance(blocks, list) or not blocks:
            return None
        read = tuple(_block(text, 0)[0] for text in (compact(b) for b in blocks))
        return WireMessage("assistant", Span(0, 0), read)

    def render(self, body: str, request: WireRequest, plan: RewritePlan) -> str:
        """The body with the plan applied: replaced spans spliced, edited messages rebuilt from
        their blocks' own text; every other character as it was. The plan's anchor summary
        carries a prompt-cache breakpoint (`frs.wire.anchors`)."""
        messages = request.messages
        splices: list[Splice] = []
        for r in plan.replacements:
            start = messages[r.first].span.start
            if r.role is None:
                # The messages and the separator after them go, up to the next message.
                splices.append(Splice(Span(start, messages[r.last + 1].span.start), ""))
                continue
            content = [_text(text, plan.anchor) for text in r.texts]
            replacement = compact({"role": r.role, "content": content})
            splices.append(Splice(Span(start, messages[r.last].span.end), replacement))
        edits: dict[int, tuple[list[str], set[int], list[str]]] = {}
        for ins in plan.insertions:
            first, _, last = edits.setdefault(ins.message, ([], set(), []))
            blocks = [compact(_text(text, plan.anchor)) for text in ins.texts]
            (first if ins.where == "first" else last).extend(blocks)
        dropped: dict[int, set[int]] = {}
        for index, block in plan.dropped:
            dropped.setdefault(index, set()).add(block)
        for index, gone in dropped.items():
            held = messages[index].blocks
            if index in edits or messages[index].content_is_text or len(held) - 1 in gone:
                edits.setdefault(index, ([], set(), []))[1].update(gone)
                continue
            # Blocks left out of a message nothing is added to: only their own characters go,
            # each with what separates it from the next block (the last one stays).
            splices.extend(
                Splice(Span(held[j].span.start, held[j + 1].span.start), "") for j in gone
            )
        for index, (first, dropped_here, last) in edits.items():
            message = messages[index]
            if message.content is None:
                raise ValueError("a message to edit has no content")
            if message.content_is_text:
                kept = [compact({"type": "text", "text": message.blocks[0].text})]
            else:
                kept = [
                    body[b.span.start : b.span.end]
                    for j, b in enumerate(message.blocks)
                    if j not in dropped_here
                ]
            splices.append(Splice(message.content, "[" + ",".join([*first, *kept, *last]) + "]"))
        return apply_splices(body, splices)

    def bind(self, original: str, rewritten: str, request: WireRequest) -> str:
        """The rewritten body asking the API to drop the thinking blocks whose prefix changed,
        instead of refusing the request: `block_binding` added to the request's `thinking`
        object, or, when it sets none (its model thinks adaptively by default: `can_bind`), a
        `thinking` of the default type carrying it. Nothing else changes; a request that already
        asks is left as it is. The beta header goes with it (`BINDING_BETA`, the proxy adds it).
        https://platform.claude.com/docs/en/build-with-claude/preserved-thinking ("Libraries,
        proxies, and gateways"; `block_binding` goes with `adaptive` and `enabled`)."""
        if request.binding == "drop_block":
            return rewritten
        settings, array = request.settings, request.messages_span
        if settings is None:
            at = rewritten.index("{") + 1
            added = '"thinking":{"type":"adaptive",' + _DROP + "},"
            return rewritten[:at] + added + rewritten[at:]
        shift = 0
        if array is not None and settings.start >= array.end:
            shift = len(rewritten) - len(original)  # the messages before it changed length
        start, end = settings.start + shift, settings.end + shift - 1  # end: its `}`
        empty = rewritten[start + 1 : end].strip() == ""
        return rewritten[:end] + ("" if empty else ",") + _DROP + rewritten[end:]

    def problems(self, payload: object) -> list[str]:
        """The API's rules, kept in a module of their own (`server.gateway.anthropic_rules`)."""
        return anthropic_rules.problems(payload)


WIRE = AnthropicMessages()


def _kept(body: str, previous: Parsed | None) -> tuple[WireMessage, ...]:
    """The previous request's messages that end inside the prefix `body` shares with it."""
    if previous is None or not previous.request.messages:
        return ()
    shared = common_prefix(body, previous.body)
    kept = [m for m in previous.request.messages if m.span.end <= shared]
    return tuple(kept)


def _message(body: str, at: int) -> tuple[WireMessage, int]:
    members, span = object_members(body, at, {"content": _content})
    fields = {m.key: m for m in members}
    role = fields["role"].value
    if role not in ("user", "assistant", "system"):
        raise ValueError("a message role that is not user, assistant or system")
    content = fields["content"]
    blocks, array = content.value
    if array is None:  # one string
        text = blocks
        if not isinstance(text, str):
            raise ValueError("content that is neither a string nor an array")
        block = WireBlock("text", content.span, text, digest=_hash("t", text))
        return WireMessage(role, span, (block,), content.span, content_is_text=True), span.end
    return WireMessage(role, span, blocks, array), span.end


def _content(body: str, at: int) -> tuple[tuple[Any, Span | None], int]:
    if body[at : at + 1] != "[":
        value, end = decode(body, at)
        return (value, None), end
    items, span = array_items(body, at, _block)
    return (tuple(item.value for item in items), span), span.end


def _block(body: str, at: int) -> tuple[WireBlock, int]:
    value, end = decode(body, at)
    if not isinstance(value, dict):
        raise ValueError("a content block that is not an object")
    block, end = _read_block(value, Span(at, end))
    found = markers(value)
    return (replace(block, markers=found) if found else block), end


def _read_block(value: dict[str, Any], span: Span) -> tuple[WireBlock, int]:
    end = span.end
    kind = _KINDS.get(str(value.get("type")), "other")
    if kind == "text":
        text = str(value.get("text", ""))
        return WireBlock(kind, span, text, digest=_hash("t", text)), end
    if kind == "tool_use":
        call = str(value.get("id", ""))
        block = WireBlock(
            kind,
            span,
            compact(value.get("input", {})),
            tool_id=call,
            name=str(value.get("name", "")),
            digest=_hash("u", call),
        )
        return block, end
    if kind == "tool_result":
        call = str(value.get("tool_use_id", ""))
        block = WireBlock(
            kind,
            span,
            _result_text(value.get("content")),
            tool_id=call,
            error=bool(value.get("is_error")),
            digest=_hash("r", call),
            pinned=_loads_tools(value.get("content")),
        )
        return block, end
    if kind == "thinking":
        text = str(value.get("thinking", ""))
        return WireBlock(kind, span, text, digest=_hash("th", str(value.get("signature")))), end
    if kind == "redacted_thinking":
        return WireBlock(kind, span, "", digest=_hash("rt", str(value.get("data")))), end
    pinned = value.get("type") in _PINNED
    block = WireBlock(kind, span, f"[{value.get('type')}]", digest=_digest(value), pinned=pinned)
    return block, end


def _text(text: str, anchor: tuple[str, str] | None) -> dict[str, Any]:
    """A summary's text block; the anchor's with its breakpoint (a 5-minute one as the API's
    default, unsaid; a 1-hour one said)."""
    block: dict[str, Any] = {"type": "text", "text": text}
    if anchor is not None and anchor[0] == text:
        marker = {"type": "ephemeral"}
        block["cache_control"] = marker if anchor[1] == "5m" else {**marker, "ttl": anchor[1]}
    return block


def _loads_tools(content: object) -> bool:
    """Whether a tool result loads deferred tools: Claude Code's ToolSearch (and any
    client-side tool search) answers with `tool_reference` blocks, which make the tools they
    name callable from there on."""
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_reference" for part in content
    )


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", "")) if part.get("type") == "text" else f"[{part.get('type')}]"
            for part in content
            if isinstance(part, dict)
        ]
        return "\n".join(parts)
    return ""


def _hash(*parts: str) -> str:
    """A block's digest from what identifies it: a text's words, a call's or a result's id (a
    host may clear an old result's content; it is still that result), a thinking block's
    signature. Cache markers, which hosts move from call to call, play no part."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _digest(block: Mapping[str, Any]) -> str:
    """Any other block's digest: its JSON without its cache marker."""
    kept = {k: v for k, v in block.items() if k != "cache_control"}
    return hashlib.sha256(canonical(kept).encode()).hexdigest()[:32]


def _streamed(text: str) -> list[dict[str, Any]] | None:
    """The content blocks an event stream built, or None unless it reached message_stop."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    stopped = False
    for event in text.split("\n\n"):
        data = "".join(line[6:] for line in event.splitlines() if line.startswith("data: "))
        if not data:
            continue
        item = json.loads(data)
        kind = item.get("type")
        if kind == "content_block_start":
            blocks[item["index"]] = dict(item["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[item["index"]], item["delta"]
            match delta.get("type"):
                case "text_delta":
                    block["text"] = block.get("text", "") + delta["text"]
                case "input_json_delta":
                    partial.setdefault(item["index"], []).append(delta["partial_json"])
                case "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + delta["thinking"]
                case "signature_delta":
                    block["signature"] = delta["signature"]
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            return None
    for index, parts in partial.items():
        joined = "".join(parts)
        blocks[index]["input"] = json.loads(joined) if joined else {}
    return [blocks[i] for i in sorted(blocks)] if stopped else None
