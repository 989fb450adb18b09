"""Frozen values of the domain: sessions, messages, squashes, plans.

A message's `number` is its permanent per-session counter (assigned once, never reused); a
`position` is where a live entry sits in the current rendering (1-based, contiguous). Live
entries are ordered by `ord`: an original message's own number, or for a summary the first
number it covers, so a summary takes the place of what it replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, NewType

SessionId = NewType("SessionId", str)

Role = Literal["system", "user", "assistant", "tool"]
Kind = Literal["message", "summary", "thinking"]
Numbering = Literal["position", "absolute"]
StepStatus = Literal["todo", "doing", "done"]

ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")
#: What a view can filter on and count: the four roles, plus summaries as their own lane.
LANES: tuple[str, ...] = ("system", "user", "assistant", "tool", "summary")


@dataclass(frozen=True, slots=True)
class Limits:
    """Sizes a request may not exceed; each refusal names the limit."""

    max_message_chars: int = 200_000
    max_summary_chars: int = 8_000
    max_batch: int = 5_000
    max_calls: int = 1_000  # tool calls one message may make
    max_title_chars: int = 200
    max_field_chars: int = 512  # a name, an id, a run id, a time: short labels
    max_plan_steps: int = 100
    max_focus_depth: int = 8
    preview_chars: int = 1_200
    page_chars: int = 20_000
    view_tokens: int = 20_000  # a whole-thread view larger than this is budgeted to it
    layer_summary_tokens: int = 64  # closing a layer takes a summary this short in any case


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text the model produced, kept verbatim


@dataclass(frozen=True, slots=True)
class CallRecord:
    """The latest call made in a session with one id, and the first result that answers it."""

    number: int  # the message that made the call
    answered_by: int | None = None  # the number of its first result; None while unanswered


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message as a caller hands it in, before it has a number."""

    role: Role
    content: str
    kind: Literal["message", "thinking"] = "message"
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    run_id: str | None = None
    interface_message_id: str | None = None
    created_at: str | None = None
    # A runtime's own item(s) this message was made from, as JSON text, handed back exactly as
    # given (`runtimes`); None for messages recorded through the tools.
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    number: int | None  # None for thinking, which is never numbered
    ord: int
    ord_last: int  # == ord except for a summary, which spans ord..ord_last
    role: Role
    kind: Kind
    content: str
    sha256: str
    tokens: int
    live: bool
    created_at: str | None  # as the caller gave it; None when it gave none (never invented)
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    answers: int | None = None  # number of the assistant message whose call this answers
    run_id: str | None = None
    interface_message_id: str | None = None
    covered: int = 1  # original messages this entry stands for (a summary: all it replaced)
    squash_n: int | None = None  # a summary: the n of its squash (alias SQ.n)
    squash_sha256: str | None = None  # a summary: the hash of its squash's originals
    raw: str | None = None  # a runtime's own item(s), JSON (NewMessage.raw)

    @property
    def lane(self) -> str:
        return "summary" if self.kind == "summary" else self.role

    @property
    def sha8(self) -> str:
        return self.sha256[:8]


@dataclass(frozen=True, slots=True)
class Session:
    id: SessionId
    title: str
    goal: str
    numbering: Numbering
    revision: int
    created_at: str
    updated_at: str
    live_count: int  # numbered entries in the thread now
    live_tokens: int
    lanes: dict[str, int] = field(default_factory=dict)  # live entries per lane
    recorded: int = 0  # original numbered messages ever recorded
    next_number: int = 1  # the number the next message (or summary) gets
    next_squash: int = 1  # the n of the next squash (alias SQ.n)
    interface: str | None = None
    conversation: str | None = None
    tenant: str = "local"  # who owns it; only that tenant's callers see it
    recorded_tokens: int = 0  # estimated tokens of every original ever recorded


#: The tenant of every caller on stdio, in process, and over HTTP with one token or none.
LOCAL_TENANT = "local"
#: The client of a caller that does not name itself (a runtime, the CLI).
DEFAULT_CLIENT = "default"


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of a host, as the host names it (`frs.conversations`): the session
    keyed by (interface, id) is its thread."""

    interface: str  # e.g. "claude-code"
    id: str  # the host's id of the conversation, e.g. its session id

    @property
    def key(self) -> str:
        return f"{self.interface}:{self.id}"


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose current session a call without `session_id` uses.

    A tenant owns sessions and sees only its own. Within a tenant, each client (a host as it
    names itself, in its workspace) has its own current session, kept in the store, so a host
    restarted in the same workspace continues its thread. `connection`, when the transport has
    one, is the live connection: a session it started or chose stays its current session even
    when another connection of the same client chooses another. `conversation`, when the host
    says which of its conversations a call belongs to, narrows the scope to that conversation
    (`in_conversation`).
    """

    tenant: str = LOCAL_TENANT
    client: str = DEFAULT_CLIENT
    connection: str | None = None
    conversation: Conversation | None = None

    @property
    def name(self) -> str:
        """`client`, or `tenant/client` for a tenant other than the local one."""
        return self.client if self.tenant == LOCAL_TENANT else f"{self.tenant}/{self.client}"

    def in_conversation(self, conversation: Conversation) -> Scope:
        """This scope narrowed to one conversation of its host: the client's name gains
        `#interface:id`, so the conversation keeps its own current session in the store (a
        resumed conversation finds it again), and a conversation that chose none gets its
        own session, get-or-create by (interface, id) (`frs.sessions.find_current`)."""
        return replace(self, client=f"{self.client}#{conversation.key}", conversation=conversation)


@dataclass(frozen=True, slots=True)
class Squash:
    n: int
    summary_number: int
    first: int  # ord span the summary covers
    last: int
    count: int  # live entries it replaced
    covered: int  # original messages those entries stood for
    tokens_before: int
    tokens_after: int
    sha256: str  # of the originals as rendered by get_alias
    created_at: str
    restored: bool = False
    summary: str = ""
    chars: int = 0  # length of the originals as rendered by get_alias
    automatic: bool = False  # made by the gateway's autopilot, not by a model or a person

    @property
    def alias(self) -> str:
        return f"SQ.{self.n}@{self.sha256[:8]}"


@dataclass(frozen=True, slots=True)
class FileText:
    """A file as read just now: its text, where it sits, and its hash."""

    path: str  # resolved, absolute
    display: str  # relative to the allowed root it lies under
    text: str
    sha256: str


@dataclass(frozen=True, slots=True)
class Source:
    """A registered context source: inline text, or a file re-read (and re-hashed) on each use."""

    alias: str  # PREFIX.name
    kind: Literal["text", "file"]
    sha256: str  # at registration
    chars: int
    lines: int
    created_at: str
    path: str | None = None
    display: str | None = None
    text: str | None = None  # inline sources only

    @property
    def sha8(self) -> str:
        return self.sha256[:8]

    @property
    def where(self) -> str:
        return self.display or self.path or "inline text"


@dataclass(frozen=True, slots=True)
class FocusLayer:
    """A nested focus: every entry from `start_ord` on belongs to it while it is open."""

    n: int
    depth: int
    goal: str
    start_ord: int
    created_at: str
    closed_at: str | None = None
    squash_n: int | None = None

    @property
    def open(self) -> bool:
        return self.closed_at is None


@dataclass(frozen=True, slots=True)
class PlanStep:
    text: str
    status: StepStatus = "todo"


@dataclass(frozen=True, slots=True)
class Nudge:
    """A reminder to squash the gateway made once: the key of the unit it follows, and its
    text (`frs.wire.nudges`)."""

    after: str
    text: str
    level: int  # the threshold it answered: `level` × step tokens


@dataclass(frozen=True, slots=True)
class GatewayCall:
    """One request the gateway forwarded for a session: what the host sent and what went
    upstream (bytes, estimated tokens), the squashes sent in place of their originals, and
    the frozen state after it (every squash sent so far with its mark, every reminder), from
    which a restarted gateway renders the same bytes."""

    at: str
    wire: str
    sent_bytes: int
    sent_tokens: int
    forwarded_bytes: int
    forwarded_tokens: int
    applied: tuple[int, ...] = ()
    sent: tuple[tuple[int, str], ...] = ()  # squash n and its mark, by n
    nudges: tuple[Nudge, ...] = ()
    #: The conversation asks the API to drop thinking a squash made stale, from this call on.
    bound: bool = False


@dataclass(frozen=True, slots=True)
class Change:
    """One line of a session's change log: the revision, what changed, and the counters that
    revision left (None on lines logged before the store kept them)."""

    revision: int
    change: str
    created_at: str
    live_count: int | None = None
    live_tokens: int | None = None
    recorded: int | None = None
    recorded_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Compaction:
    """A host replaced the history it sends its model with a summary of its own (Claude Code's
    auto-compaction and /compact, Codex's and OpenCode's): the entry that holds the summary,
    the first number the host sends the model from then on (the turns it kept verbatim can
    come before the summary's entry), and the key of the first message the host's requests
    begin with after it (a host's later requests of the conversation begin so)."""

    number: int
    sent_from: int
    created_at: str
    first_key: str | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    name: str
    revision: int
    after_ord: int  # the mark sits after the live entry covering this ord (0: before all)
    created_at: str
