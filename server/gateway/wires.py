"""What a provider's wire gives the gateway core (`WireFormat`), and whether a rewrite in it
may be sent (`refusal_of`): the bytes outside the messages unchanged, and no rule of the
provider broken that the host's own request kept. A rewrite that repeats the last one passed
is checked from where it differs on (`_from_repeat`), so a long conversation's checks stay
short.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from frs.wire.anchors import broken, lifetimes
from frs.wire.matching import Unit, canonical, fingerprint
from frs.wire.requests import Parsed, RewritePlan, WireMessage, WireRequest, reused


class WireFormat(ABC):
    """One provider's wire, as the gateway core uses it: a class per wire
    (`server.gateway.anthropic.AnthropicMessages`, `server.gateway.responses.OpenAIResponses`,
    `server.gateway.chat.OpenAIChat`), each module holding one instance, `WIRE`."""

    name: ClassVar[str]  # also the interface a conversation it identifies by content is kept in
    path: ClassVar[str]  # the path whose POSTs it reads (every other path is forwarded unread)
    #: True when what `problems` asks of a message depends only on its neighbours (and on
    #: the first message being a user's): a rewrite that repeats the last one passed is then
    #: checked from its last repeated assistant message on (`_from_repeat`), else whole.
    local_rules: ClassVar[bool] = False
    #: Asks the API to drop thinking whose prefix a rewrite changed (`RewritePlan.drop_block`):
    #: (the host's body, the rewrite, the request) -> the rewrite asking. A wire whose
    #: reasoning binds to a prefix defines it as a method; None (the default): the wire's
    #: reasoning binds to no prefix. `beta` is the header value the asking needs.
    bind: Callable[[str, str, WireRequest], str] | None = None
    beta: ClassVar[str | None] = None

    @abstractmethod
    def named(self, headers: Mapping[str, str]) -> tuple[str, str] | None:
        """The conversation a request names in its headers (before its body is read), if any."""

    @abstractmethod
    def parse(
        self, body: str, headers: Mapping[str, str], previous: Parsed | None = None
    ) -> WireRequest:
        """Reads a body; `previous` is the conversation's previous request, reused where
        repeated. Raises ValueError (or KeyError, TypeError) on a body not of this wire."""

    @abstractmethod
    def answer_of(self, raw: bytes, content_type: str) -> WireMessage | None:
        """The assistant message a finished answer holds (its bytes, its content type), if any."""

    @abstractmethod
    def render(self, body: str, request: WireRequest, plan: RewritePlan) -> str:
        """The body with the plan applied as splices of its own text."""

    @abstractmethod
    def problems(self, payload: object) -> list[str]:
        """The rules a rewritten body must keep: what the provider would refuse, in words."""

    def conversation_of(
        self, headers: Mapping[str, str], units: Sequence[Unit]
    ) -> tuple[str, str] | None:
        """(interface, conversation) of a request: the one it names (`named`), else the
        first user message's fingerprint under the wire's name; None when there is neither."""
        given = self.named(headers)
        if given is not None:
            return given
        found = fingerprint(units)
        return (self.name, found) if found else None

    def decode(self, body: str) -> object:
        """A body as `problems` reads it."""
        return json.loads(body)


def refusal_of(
    wire: WireFormat,
    request: WireRequest,
    original: str,
    rewritten: str,
    last: Parsed | None,
    headers: Mapping[str, str],
) -> tuple[str | None, Parsed | None]:
    """Why a rewrite must not be sent: a change outside the messages array (system, tools,
    every other field must stay byte for byte), or a rule it breaks that the host's request
    kept; None when it may go. With it, the rewrite as read when it may go and its wire's
    rules are local (`last` for the next check: the last rewrite of this wire that passed),
    else None."""
    array = request.messages_span
    if array is None:
        return "the messages were not found", None
    moved = len(rewritten) - len(original)
    if (
        rewritten[: array.start] != original[: array.start]
        or rewritten[array.end + moved :] != original[array.end :]
    ):
        return "it changed something outside the messages", None
    read: WireRequest | None = None
    checked_body = rewritten
    if wire.local_rules:
        read = wire.parse(rewritten, headers, last)
        checked_body = _from_repeat(rewritten, read, last)
    found = wire.problems(wire.decode(checked_body))
    if read is not None and checked_body is not rewritten:
        # The messages the check left out may hold breakpoints: they are counted as parsed.
        found += [p for p in broken(lifetimes(read)) if p not in found]
    refusal = None
    if found:
        # Rare: only then is the host's own request checked, so its own faults are not ours.
        # Both are checked whole and compared by what each problem names, not where: a
        # squash moves every message after it, and a fault the host's request already had
        # must not block every later rewrite.
        mine = wire.decode(rewritten)
        theirs = wire.decode(original)
        found = wire.problems(mine) if checked_body is not rewritten else found
        known = set(_anchored(wire.problems(theirs), theirs))
        new = [p for p, a in zip(found, _anchored(found, mine), strict=True) if a not in known]
        refusal = "; ".join(sorted(new)[:3]) if new else None
    if refusal is None and read is not None:
        return None, Parsed(rewritten, read)
    return refusal, None


#: Stands for the messages a check leaves out: a user message, as the first must be.
_STAND_IN = '{"role":"user","content":"(earlier messages, checked before)"},'


def _from_repeat(text: str, read: WireRequest, previous: Parsed | None) -> str:
    """The body to check: `text` whole, or, when it repeats the last rewrite that passed
    (`previous`), with the messages before the last repeated assistant message left out and
    one stand-in user message in their place. What the rules ask of a message depends only
    on its neighbours, and those left out were checked as they are; frozen bytes make a
    long conversation's rewrites repeat all but their end, so a check stays short. (A call
    id of the end repeating one of the part left out is not seen: the host's to send.)"""
    span = read.messages_span
    if previous is None or span is None:
        return text
    repeated = reused(read, previous.request)
    start = next(
        (i for i in range(repeated - 1, 0, -1) if read.messages[i].role == "assistant"), None
    )
    if start is None:
        return text
    first = read.messages[start].span.start
    return text[: span.start] + "[" + _STAND_IN + text[first:]


#: Where a problem names an item of the request: `messages[3]`, `input[12]`.
_PLACE = re.compile(r"\b(messages|input)\[(\d+)\]")


def _anchored(found: Sequence[str], payload: Any) -> list[str]:
    """Each problem with every item it names by index named by the item's content instead
    (a hash of its canonical JSON): the same fault of the same message reads the same
    wherever the message sits."""
    items: dict[str, Any] = {}
    if isinstance(payload, dict):
        items = {k: payload.get(k) for k in ("messages", "input")}

    def anchor(match: re.Match[str]) -> str:
        listed = items.get(match.group(1))
        index = int(match.group(2))
        if not isinstance(listed, list) or index >= len(listed):
            return match.group(0)
        digest = hashlib.sha256(canonical(listed[index]).encode()).hexdigest()[:16]
        return f"{match.group(1)}<{digest}>"

    return [_PLACE.sub(anchor, problem) for problem in found]
