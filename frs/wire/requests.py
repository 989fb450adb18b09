"""A model request as the gateway sees it, whatever the provider: messages made of blocks.

A wire module (`server.gateway.anthropic`, later OpenAI's) parses a request body into a
`WireRequest` that keeps, for every message and block, where its text starts and ends in the
body (`Span`, character offsets into the body decoded as UTF-8), so a change splices only
the spans it replaces (`apply_splices`) and every other byte reaches the model as the host
sent it. The domain decides what changes (`frs.wire.rewriting`); the wire module renders the bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

#: What a block is, across providers: text the user or model wrote, a tool call and its
#: result, the model's thinking (signed or redacted: never edited), a provider's compaction
#: block (never edited), anything else (images, documents, server tools: kept as they are).
BlockKind = Literal[
    "text", "tool_use", "tool_result", "thinking", "redacted_thinking", "compaction", "other"
]
#: "system": an instruction the host puts between the turns (Claude Code's mid-conversation
#: system messages); never recorded, never replaced, never carries a summary.
WireRole = Literal["user", "assistant", "system"]


@dataclass(frozen=True, slots=True)
class Span:
    """Characters start..end (end exclusive) of the body, as text."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class WireBlock:
    kind: BlockKind
    span: Span
    text: str = ""  # the text it shows (a result's text, a call's JSON input, thinking)
    tool_id: str | None = None  # a call's id, or the id of the call a result answers
    name: str | None = None  # a call's tool name
    error: bool = False  # a result the host marked as an error
    #: What the model must go on seeing where it is: a result that loads deferred tools
    #: (Anthropic's `tool_reference`s, the Responses API's `tool_search_output`), a file put
    #: into a code-execution container. A squash keeps the exchange holding it in place
    #: (`frs.wire.rewriting`): without it the model would lose tools it needs, the frs tools too.
    pinned: bool = False
    #: What the block says, hashed so it is stable across requests: no cache markers.
    digest: str = ""
    #: The prompt-cache breakpoints the host put on the block or the blocks it holds
    #: (Anthropic's `cache_control`): each one's lifetime, "5m" or "1h".
    markers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WireMessage:
    role: WireRole
    span: Span  # the whole message object
    blocks: tuple[WireBlock, ...]
    #: Where new blocks go: the content array's inside, just after `[` (`first`) and just
    #: before `]` (`last`); None when the content is a plain string, not an array.
    content: Span | None = None
    content_is_text: bool = False  # `content` given as one string


@dataclass(frozen=True, slots=True)
class WireRequest:
    """What a request asks: its messages in order, and facts that decide whether it may be
    touched at all."""

    messages: tuple[WireMessage, ...]
    #: The messages array itself (`[` to `]`): a rewrite changes nothing outside it.
    messages_span: Span | None = None
    model: str = ""
    has_tools: bool = False
    #: Set when the request continues server-side state the gateway cannot see
    #: (`previous_response_id`) or is signed over its body (a subscription): pass it through.
    untouchable: str | None = None
    #: Whether thinking blocks sign everything before them (Anthropic): then a squash that
    #: changes the prefix of thinking sent after it asks the API to drop the blocks it made
    #: invalid (`binding`), or, where the request cannot ask, waits for the next user turn
    #: and leaves the thinking of earlier turns out. OpenAI's reasoning items bind to no
    #: prefix (False): kept as they are.
    thinking_signed: bool = True
    #: The request's own thinking settings, where its wire has them: `thinking.type` (None:
    #: the request sets no `thinking`) and what it asks of a thinking block whose prefix
    #: changed (`prefix_mismatch_behavior`: None when it says nothing, "error" when it sets
    #: `block_binding` without asking to drop).
    thinking_type: str | None = None
    binding: str | None = None
    #: Where the thinking settings object is in the body (its `{` to `}`), if there is one:
    #: where a rewrite adds what it asks of the API (`RewritePlan.drop_block`).
    settings: Span | None = None
    #: A host's own compaction (`frs.wire.compactions`). `summarise`: the request asks the
    #: model for a summary of the conversation; the message at `instruction` (if any) holds
    #: that ask, which is not part of the conversation, nor is the answer. `summary`: the index
    #: of the message holding the summary the host now sends instead of its history.
    summarise: bool = False
    instruction: int | None = None
    summary: int | None = None
    #: The prompt-cache breakpoints the host set outside the messages, in prompt order (tools,
    #: system, then a top-level automatic one, which lands on the last block): each one's
    #: lifetime, "5m" or "1h". With the messages' own (`marked`) they are all the breakpoints
    #: the request spends (`frs.wire.anchors`).
    head_markers: tuple[str, ...] = ()
    automatic_marker: str | None = None
    #: The messages' breakpoints, in order: (message index, block index, lifetime), one per
    #: breakpoint in or under the block (`WireBlock.markers`).
    marked: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Parsed:
    """A body and what it was read into: a conversation's previous request, whose messages a
    wire module reuses where the next body repeats them byte for byte (hosts resend the whole
    transcript every call, so reading only what is new keeps the gateway's time flat)."""

    body: str
    request: WireRequest
    units: tuple[object, ...] = ()  # `frs.wire.matching.Unit`s of `request`


def common_prefix(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share: whole blocks compared while they are
    equal, then the differing block halved until one character is left (never a loop over
    characters: a body of megabytes is compared in well under a millisecond)."""
    block, at, end = 1 << 16, 0, min(len(a), len(b))
    while at < end and a[at : at + block] == b[at : at + block]:
        at += block
    if at >= end:
        return end
    low, high = at, min(at + block, end)  # a[:low] == b[:low]; they differ before `high`
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low if a[low] != b[low] else low + 1


def reused(request: WireRequest, previous: WireRequest | None) -> int:
    """How many leading messages `request` took over from `previous` as they were."""
    if previous is None:
        return 0
    count = 0
    for mine, theirs in zip(request.messages, previous.messages, strict=False):
        if mine is not theirs:
            break
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class Splice:
    """Replace characters span.start..span.end of the body by `text`."""

    span: Span
    text: str


def apply_splices(body: str, splices: Sequence[Splice]) -> str:
    """The body with every splice applied; spans must not overlap (raises ValueError)."""
    out: list[str] = []
    at = 0
    for splice in sorted(splices, key=lambda s: (s.span.start, s.span.end)):
        if splice.span.start < at:
            raise ValueError(f"splices overlap at character {splice.span.start}")
        out.append(body[at : splice.span.start])
        out.append(splice.text)
        at = splice.span.end
    out.append(body[at:])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Insertion:
    """Summary texts to add at the start or the end of a kept message's content."""

    message: int  # index of the message in the request
    where: Literal["first", "last"]
    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Replacement:
    """Messages first..last (indices, inclusive) go; when `role` is set, one message of that
    role holding `texts` takes their place."""

    first: int
    last: int
    role: Literal["user", "assistant"] | None
    texts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RewritePlan:
    """What the domain decided for one request: the wire module turns it into splices."""

    replacements: tuple[Replacement, ...] = ()
    insertions: tuple[Insertion, ...] = ()
    #: (message index, block index) of thinking blocks of earlier turns left out, because a
    #: squash before them changed the prefix their signatures bind to.
    dropped: tuple[tuple[int, int], ...] = ()
    applied: tuple[int, ...] = ()  # squash n's sent instead of their originals
    waiting: tuple[int, ...] = ()  # squash n's that could apply but must wait (thinking)
    skipped: tuple[tuple[int, str], ...] = field(default=())  # (n, why) that cannot apply
    #: Ask the API to drop the thinking blocks whose prefix a squash changed, instead of
    #: refusing the request (Anthropic's `thinking.block_binding.prefix_mismatch_behavior:
    #: "drop_block"`, which the wire module adds with its beta header).
    drop_block: bool = False
    #: The summary text (one of the plan's) that carries a prompt-cache breakpoint, and its
    #: lifetime ("5m", "1h"): where the next request's cache can pick up again after the
    #: next squash (`frs.wire.anchors`). None: no breakpoint added.
    anchor: tuple[str, str] | None = None

    @property
    def changes(self) -> bool:
        return bool(self.replacements or self.insertions or self.dropped or self.drop_block)
