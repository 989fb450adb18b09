"""A page of a thread as the model sees it, with every squash opened to its originals.

The entries, their labels, thinking, checkpoints and focus headings come from the domain
(`frs.views`), exactly as a view builds them; only the HTML differs from the text view. A page
is the newest `PAGE` entries before a position, read by position through the store's block
counts, so its cost does not grow with the thread. A squash opens to at most `MEMBERS_SHOWN`
originals, nested squashes `NESTING` deep; its own page shows the rest. A page opens squashes
until their originals hold `PAGE_CHARS` characters (a text counted at most `WHOLE_CHARS`, what
a page shows of one); the originals past that are on the squash's own page, which is bounded
the same way and pages on (`skip`): one squash of 20 MB once made its thread's page 20 MB, and
its own page and its Markdown 20 MB more.
"""

from __future__ import annotations

from dataclasses import dataclass

from frs.host_threads import SquashCalls, squash_calls
from frs.model import GatewayCall, Message, Session, SessionId, Squash
from frs.ports import ThreadReader
from frs.views.layout import Shown, attach, focus_headings, label
from frs.views.render import Entry
from frs.views.selection import Frame, load_frame

PAGE = 200
CALLS_SHOWN = 50  # the newest requests the gateway forwarded for the session
#: A session with fewer calls than this has each squash's made and first-sent call shown (they
#: are counted over all of its calls).
CALLS_TIMED = 20_000
MEMBERS_SHOWN = 200
NESTING = 8
#: The most a page shows of one text: its head and tail, the middle left out (`get_alias`).
WHOLE_CHARS = 100_000
#: The characters of originals one thread page opens, all its squashes together.
PAGE_CHARS = 1_000_000


class Budget:
    """What is left of a page's `PAGE_CHARS`, spent by each original it opens."""

    def __init__(self, chars: int = PAGE_CHARS) -> None:
        self.left = chars

    def spend(self, message: Message) -> bool:
        """Take `message`'s share; False (and nothing taken) once the page is full."""
        cost = min(len(message.content), WHOLE_CHARS)
        if cost > self.left:
            self.left = 0
            return False
        self.left -= cost
        return True


@dataclass(frozen=True, slots=True)
class Opened:
    """A squash and the originals it replaced (some of them squashes, opened in turn)."""

    squash: Squash
    members: tuple[Node, ...]
    hidden: int  # members after those shown (past MEMBERS_SHOWN or the budget; all past NESTING)
    skipped: int = 0  # members before those shown, on the pages before this one
    hidden_chars: int = 0  # the characters of the hidden members' own texts (0: not read)

    @property
    def next_member(self) -> int:
        """The 1-based number of the first member not shown: where the next page starts."""
        return self.skipped + len(self.members) + 1


@dataclass(frozen=True, slots=True)
class Node:
    """One entry (or original) to show, and, for a summary, its squash opened."""

    entry: Entry
    opened: Opened | None = None


@dataclass(frozen=True, slots=True)
class ThreadPage:
    session: Session
    frame: Frame
    first: int  # the position of the first entry shown (1-based)
    nodes: tuple[Node, ...]
    leading: tuple[str, ...]  # thinking and marks before the first entry of the thread
    trailing: tuple[str, ...]  # focus goals with no entry yet
    calls: tuple[GatewayCall, ...] = ()  # the newest the gateway forwarded, oldest first
    #: Per squash of a gateway thread: the call it was made after, the call that first sent it.
    timing: tuple[SquashCalls, ...] = ()
    automatic: frozenset[int] = frozenset()  # the squashes the gateway's autopilot made

    @property
    def end(self) -> int:
        """One past the last position shown."""
        return self.first + len(self.nodes)


async def load_page(
    reader: ThreadReader, session: Session, before: int | None, count: int = PAGE
) -> ThreadPage:
    """The `count` entries before position `before` (None: the newest), in thread order."""
    end = session.live_count + 1
    stop = end if before is None else max(1, min(before, end))
    first = max(1, stop - count)
    messages = await reader.entries_at(session.id, first, stop - first)
    shown = [Shown(first + i, m) for i, m in enumerate(messages)]
    labels = [label(s.message, s.position, session.numbering) for s in shown]
    frame = await load_frame(reader, session)
    thinking: list[Message] = []
    if first == 1:
        thinking = await reader.thinking(session.id, 0, 0)
    if shown:
        thinking += await reader.thinking(session.id, shown[0].message.ord, messages[-1].ord_last)
    entries, leading = attach(shown, labels, thinking, frame.checkpoints, first == 1)
    entries, trailing = focus_headings(entries, frame.layers, stop == end)
    budget = Budget()
    nodes = [
        Node(entry, await open_squash(reader, session.id, entry.message, budget=budget))
        for entry in entries
    ]
    calls = await reader.gateway_calls(session.id, CALLS_SHOWN)
    timing: list[SquashCalls] = []
    automatic: frozenset[int] = frozenset()
    if calls:
        squashes = await reader.squashes(session.id)
        every = await reader.gateway_calls(session.id, CALLS_TIMED)
        timing = squash_calls(every, squashes) if len(every) < CALLS_TIMED else []
        automatic = frozenset(s.n for s in squashes if s.automatic)
    return ThreadPage(
        session,
        frame,
        first,
        tuple(nodes),
        tuple(leading),
        tuple(trailing),
        tuple(calls),
        tuple(timing),
        automatic,
    )


async def open_squash(
    reader: ThreadReader,
    session_id: SessionId,
    message: Message,
    depth: int = 0,
    shown: int = MEMBERS_SHOWN,
    budget: Budget | None = None,
    skip: int = 0,
) -> Opened | None:
    """For a summary, its squash with the originals it replaced (at most `shown` after the
    first `skip`, and those `budget` has room for); None for any other entry."""
    if message.kind != "summary" or message.squash_n is None:
        return None
    squash = await reader.squash(session_id, message.squash_n)
    if squash is None:
        return None
    if depth >= NESTING:
        return Opened(squash, (), squash.count)
    members = await reader.squash_members(session_id, squash.n)
    nodes: list[Node] = []
    for m in members[skip : skip + shown]:
        if budget is not None and not budget.spend(m):
            break
        opened = await open_squash(reader, session_id, m, depth + 1, budget=budget)
        nodes.append(Node(Entry(member_label(m), m), opened))
    rest = members[skip + len(nodes) :]
    return Opened(
        squash, tuple(nodes), len(rest), skip, hidden_chars=sum(len(m.content) for m in rest)
    )


def member_label(message: Message) -> str:
    """An original inside a squash has no position: it is named as `get_alias` names it."""
    if message.kind == "summary":
        return f"SQ.{message.squash_n}"
    return f"M.{message.number}"


def anchor(message: Message) -> str:
    """The permalink of an entry or original: `SQ.2` for a summary, `M.7` for a message."""
    return member_label(message)
