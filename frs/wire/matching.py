"""A host's request matched to the stored thread by content, never by position.

Each request message becomes units, the things FRS records: a user message's own words (one
unit, its tool results aside), each tool result (keyed by the call it answers), an assistant
message (its text and calls; its thinking rides along as thinking). A unit's key is stable
across requests, because hosts resend the whole transcript each call: a result's is the id of
its call, a message's the hash of its blocks (cache markers and thinking left out), with
`#k` for its k-th repeat in the same transcript. A unit is new when its key is not stored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from frs.model import Limits, NewMessage, ToolCall
from frs.text import estimate_tokens, message_body, shorten
from frs.wire.requests import WireBlock, WireMessage, WireRequest

#: Block kinds that are not what a message says: thinking is kept apart, and hosts may leave
#: it out of older turns without the message becoming another.
_UNSAID = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class Unit:
    """One thing to record, where it sits in the request, and the key that finds it again."""

    key: str
    message: int  # index of its message in the request
    new: NewMessage
    thinking: tuple[NewMessage, ...] = ()  # recorded just before it (an assistant's)

    tokens: int = 0  # estimated tokens of what it says (`frs.text`), thinking aside


def units_of(request: WireRequest, kept: Sequence[Unit] = (), reused: int = 0) -> list[Unit]:
    """The request's units in transcript order, each with its key. `kept` are the units of
    a previous request whose first `reused` messages this one took over unchanged
    (`frs.wire.requests.reused`): theirs are taken as they were, only the rest is worked out."""
    units = [unit for unit in kept if unit.message < reused]
    seen: dict[str, int] = {}
    names: dict[str, str] = {}
    for unit in units:
        base = unit.key.split("#", 1)[0]
        seen[base] = seen.get(base, 0) + 1
        names.update((call.id, call.name) for call in unit.new.tool_calls)
    names.update(
        (block.tool_id, block.name or "")
        for message in request.messages[reused:]
        for block in message.blocks
        if block.kind == "tool_use" and block.tool_id
    )

    def keyed(base: str) -> str:
        seen[base] = seen.get(base, 0) + 1
        return base if seen[base] == 1 else f"{base}#{seen[base]}"

    for index, message in enumerate(request.messages[reused:], start=reused):
        if message.role == "system":  # the host's instruction, not the conversation
            continue
        if message.role == "assistant":
            answer = _assistant(index, message, keyed)
            if answer is not None:
                units.append(answer)
            continue
        for block in message.blocks:
            if block.kind == "tool_result" and block.tool_id:
                new = NewMessage(
                    role="tool",
                    # An empty result is stored empty: get_alias hands back what the tool
                    # said, nothing made up (an error with no text keeps a word for it).
                    content=block.text or ("(error)" if block.error else ""),
                    name=names.get(block.tool_id) or None,
                    tool_call_id=block.tool_id,
                )
                units.append(Unit(keyed(f"tr:{block.tool_id}"), index, new, tokens=_size(new)))
        said = [b for b in message.blocks if b.kind != "tool_result" and b.kind not in _UNSAID]
        if said:
            text = _text_of(said)
            words = NewMessage("user", text)
            units.append(Unit(keyed("u:" + _digest(said)), index, words, tokens=_size(words)))
    return units


def _assistant(index: int, message: WireMessage, keyed: Callable[[str], str]) -> Unit | None:
    said = [b for b in message.blocks if b.kind not in _UNSAID]
    if not said:
        return None
    calls = tuple(
        ToolCall(b.tool_id or "", b.name or "", b.text)
        for b in said
        if b.kind == "tool_use" and b.tool_id
    )
    texts = [b for b in said if b.kind != "tool_use"]
    key = keyed("a:" + _digest(said))
    run = f"gw:{key[2:18]}"
    thinking = tuple(
        NewMessage(
            "assistant",
            b.text if b.kind == "thinking" and b.text else "(redacted thinking)",
            kind="thinking",
            run_id=run,
        )
        for b in message.blocks
        if b.kind in _UNSAID
    )
    new = NewMessage("assistant", _text_of(texts), tool_calls=calls, run_id=run)
    return Unit(key, index, new, thinking, _size(new))


def answer_unit(answer: WireMessage, units: Sequence[Unit]) -> Unit | None:
    """The unit a model's answer to a request with these `units` will be in the next request
    (the same key: its repeats in the transcript so far counted), or None when it says
    nothing (thinking alone)."""
    index = max((unit.message for unit in units), default=-1) + 1
    counts: dict[str, int] = {}
    for unit in units:
        base = unit.key.split("#", 1)[0]
        counts[base] = counts.get(base, 0) + 1

    def keyed(base: str) -> str:
        seen = counts.get(base, 0) + 1
        return base if seen == 1 else f"{base}#{seen}"

    return _assistant(index, answer, keyed)


def _size(new: NewMessage) -> int:
    return estimate_tokens(message_body(new.content, new.tool_calls))


def _digest(blocks: Sequence[WireBlock]) -> str:
    return hashlib.sha256("\n".join(b.digest for b in blocks).encode()).hexdigest()[:32]


def _text_of(blocks: Iterable[WireBlock]) -> str:
    parts = [b.text if b.kind == "text" else b.text or f"[{b.kind}]" for b in blocks]
    return "\n\n".join(p for p in parts if p)


def new_units(units: Sequence[Unit], known: Iterable[str]) -> list[Unit]:
    """The units after the last one already stored: what this request adds to the thread.

    Units before that one that are not stored (a message the host edited or inserted in its
    history) are not recorded: the stored thread keeps its order.
    """
    stored = set(known)
    last = max((i for i, unit in enumerate(units) if unit.key in stored), default=-1)
    return [unit for unit in units[last + 1 :] if unit.key not in stored]


def messages_of(units: Sequence[Unit]) -> list[NewMessage]:
    """What `frs.recording.record` stores for these units, in order, each keyed by its
    `interface_message_id`."""
    out: list[NewMessage] = []
    for unit in units:
        out.extend(unit.thinking)
        out.append(_with_key(unit.new, unit.key))
    return out


def _with_key(new: NewMessage, key: str) -> NewMessage:
    return NewMessage(
        role=new.role,
        content=new.content,
        kind=new.kind,
        name=new.name,
        tool_calls=new.tool_calls,
        tool_call_id=new.tool_call_id,
        run_id=new.run_id,
        interface_message_id=key,
    )


def fit(unit: Unit, limits: Limits, by: str = "the gateway") -> Unit:
    """The unit with content cut to what a message may hold: a long result is recorded
    with its head and a note naming who left the rest out (`by`), never refused."""
    room = limits.max_message_chars - sum(len(c.arguments) for c in unit.new.tool_calls) - 200
    content = unit.new.content
    if len(content) <= room:
        return unit
    cut = max(room, 0)
    note = f"\n… [{len(content) - cut:,} more characters not recorded by {by}]"
    return replace(unit, new=replace(unit.new, content=content[:cut] + note))


#: What Claude Code adds to a user's words for the model, not what the user said.
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def title_of(units: Sequence[Unit]) -> str:
    """A conversation's session title: the first user words, the host's reminders left out."""
    for unit in units:
        if unit.new.role == "user":
            words = " ".join(_REMINDER.sub(" ", unit.new.content).split())
            return shorten(words, 80) or "Untitled"
    return "Untitled"


def fingerprint(units: Sequence[Unit]) -> str | None:
    """A conversation's name when its host sends none: the key of its first user words."""
    for unit in units:
        if unit.new.role == "user":
            return "fp:" + hashlib.sha256(unit.key.encode()).hexdigest()[:24]
    return None


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonical(value: object) -> str:
    """One text for a JSON value however a host spaced or ordered it: what digests hash."""
    return _CANONICAL.encode(value)
