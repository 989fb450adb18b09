"""A host conversation as the gateway records it: one session per (interface, conversation).

`load_thread` reads what the gateway needs to match a request and rewrite it: every stored
message's key (live, or inside a live squash, nested squashes unfolded) and each live
squash with the keys of the originals it stands for. `record_new` appends the units of a
request that are not stored yet. Keys are kept in `interface_message_id` (`frs.wire.matching`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from frs import recording, sessions
from frs.env import Env
from frs.model import Compaction, GatewayCall, Message, Session, SessionId, Squash
from frs.ports import ThreadReader
from frs.recording import Compacting, Recorded
from frs.views.render import COMPACTION
from frs.wire.matching import Unit, messages_of
from frs.wire.rewriting import LiveSquash


@dataclass(frozen=True, slots=True)
class StoredThread:
    """A conversation's session as the gateway matches requests against it."""

    session: Session
    keys: frozenset[str]  # every stored original's key
    first_key: str | None  # the key of its first recorded message, if the gateway keyed it
    squashes: tuple[LiveSquash, ...]
    #: Where each live, unsquashed message the gateway keyed sits in the view (its
    #: position), as read: messages recorded since are not in it.
    positions: Mapping[str, int] = field(default_factory=dict)
    #: Each stored original's number, by key (as read).
    numbers: Mapping[str, int] = field(default_factory=dict)
    #: The host's compactions, oldest first: after one, its requests begin elsewhere.
    compactions: tuple[Compaction, ...] = ()

    @property
    def first_keys(self) -> frozenset[str]:
        """The keys a request of the conversation may begin with: its first message's, and
        after each compaction of the host's the one its requests begin with since."""
        keys = {c.first_key for c in self.compactions if c.first_key}
        if self.first_key is not None:
            keys.add(self.first_key)
        return frozenset(keys)


async def find_thread(env: Env, interface: str, conversation: str) -> StoredThread | None:
    """The conversation's session and keys, or None when it has no session yet."""
    async with env.store.snapshot() as reader:
        session = await reader.find_conversation(env.scope.tenant, interface, conversation)
        if session is None:
            return None
        return await load_thread(reader, session)


async def find_session(env: Env, interface: str, conversation: str) -> Session | None:
    """Only the session row: cheap enough to ask on every request (its revision says
    whether a kept `StoredThread` is still current)."""
    async with env.store.snapshot() as reader:
        return await reader.find_conversation(env.scope.tenant, interface, conversation)


async def add_call(env: Env, interface: str, conversation: str, call: GatewayCall) -> bool:
    """Store a request the gateway forwarded for the conversation's session; False when it has
    no session (nothing of it was recorded)."""
    async with env.store.transaction() as tx:
        session = await tx.find_conversation(env.scope.tenant, interface, conversation)
        if session is None:
            return False
        await tx.add_gateway_call(session.id, call)
        return True


async def last_call(env: Env, session_id: SessionId) -> GatewayCall | None:
    """The newest request the gateway forwarded for the session, if any: what it had sent."""
    async with env.store.snapshot() as reader:
        found = await reader.gateway_calls(session_id, 1)
    return found[-1] if found else None


async def load_thread(reader: ThreadReader, session: Session) -> StoredThread:
    entries = (
        await reader.entries_at(session.id, 1, session.live_count) if session.live_count else []
    )
    keys: set[str] = set()
    firsts: list[tuple[int, str]] = []
    squashes: list[LiveSquash] = []
    positions: dict[str, int] = {}
    numbers: dict[str, int] = {}
    for position, entry in enumerate(entries, start=1):
        if entry.kind != "summary" or entry.squash_n is None:
            _keep(entry, keys, firsts, numbers)
            if entry.interface_message_id:
                positions[entry.interface_message_id] = position
            continue
        members = await _originals(reader, session.id, entry.squash_n)
        member_keys = set()
        for member in members:
            _keep(member, keys, firsts, numbers)
            if member.interface_message_id:
                member_keys.add(member.interface_message_id)
        squash = await reader.squash(session.id, entry.squash_n)
        # A squash of messages the gateway never keyed cannot be found in a request.
        if squash is not None and len(member_keys) == len(members):
            squashes.append(
                LiveSquash(
                    squash.n, squash.alias, squash.summary, squash.covered, frozenset(member_keys)
                )
            )
    first = min(firsts)[1] if firsts else None
    compactions = tuple(await reader.compactions(session.id))
    return StoredThread(
        session, frozenset(keys), first, tuple(squashes), positions, numbers, compactions
    )


def _keep(
    message: Message, keys: set[str], firsts: list[tuple[int, str]], numbers: dict[str, int]
) -> None:
    key = message.interface_message_id
    if key:
        keys.add(key)
        firsts.append((message.number or 0, key))
        if message.number is not None:
            numbers[key] = message.number


async def _originals(reader: ThreadReader, session_id: SessionId, n: int) -> list[Message]:
    """The original messages squash n stands for, in thread order, nested squashes unfolded."""
    out: list[Message] = []
    for member in await reader.squash_members(session_id, n):
        if member.kind == "summary" and member.squash_n is not None:
            out.extend(await _originals(reader, session_id, member.squash_n))
        else:
            out.append(member)
    return out


#: The goal a session the gateway creates starts with: the view shows it to the model, so it
#: neither records the conversation again nor wonders where the thread came from.
RECORDED_GOAL = (
    "Recorded by frs-mcp gateway from the host's model calls: no frs_record needed; "
    "a squash replaces its messages in what the model is sent from the next call on."
)


async def ensure_session(env: Env, interface: str, conversation: str, title: str) -> Session:
    """The conversation's session, created (with this title and `RECORDED_GOAL`) the first
    time; one another edge created first (the MCP server the host started) is used as it is."""
    started = await sessions.start(env, title, RECORDED_GOAL, "position", interface, conversation)
    return started.session


async def record_new(
    env: Env,
    session_id: SessionId,
    units: Sequence[Unit],
    expected_revision: int | None = None,
) -> Recorded | None:
    """Record these units (already known to be new), in one transaction when they fit one
    batch (`Limits.max_batch` messages, thinking included), else in as many batches as they
    need, in order (a conversation a host resumes through the gateway may bring thousands):
    what the last one recorded, with the numbers and positions of all; None for none.
    With `expected_revision`, each batch is written only at the revision the one before it
    left (the first at that one), else StaleRevision: another instance recorded meanwhile,
    and the caller reads the thread again for what is still new."""
    if not units:
        return None
    chunks: list[list[Unit]] = [[]]
    size = 0
    for unit in units:
        need = 1 + len(unit.thinking)
        if chunks[-1] and size + need > env.limits.max_batch:
            chunks.append([])
            size = 0
        chunks[-1].append(unit)
        size += need
    numbers: list[int] = []
    positions: list[int] = []
    revision = expected_revision
    for chunk in chunks:
        done = await recording.record(env, messages_of(chunk), session_id, revision)
        revision = None if revision is None else done.revision
        numbers.extend(done.numbers)
        positions.extend(done.positions)
    return replace(done, numbers=tuple(numbers), positions=tuple(positions))


async def record_compaction(
    env: Env,
    session_id: SessionId,
    summary: Unit,
    kept: Sequence[int],
    first_key: str | None,
    new: Sequence[Unit],
    stored_calls: frozenset[str] = frozenset(),
    expected_revision: int | None = None,
) -> Recorded:
    """Record a host's compaction in one transaction: the results of calls already stored
    that come with it first (the round the host kept, whose results it had not sent yet), then
    its summary as the thread's next entry (positions go on), the compaction
    (`frs.model.Compaction`: `kept`, the numbers of the stored messages the host still sends,
    and `first_key`, what its requests begin with now), then the units that follow."""
    said = replace(summary.new, role="user", tool_calls=(), kind="message", name=COMPACTION)
    entry = replace(summary, new=said)
    rest = [unit for unit in new if unit.key != summary.key]
    lead = 0
    while lead < len(rest) and rest[lead].new.tool_call_id in stored_calls:
        lead += 1
    batch = messages_of([*rest[:lead], entry, *rest[lead:]])
    compacting = Compacting(tuple(kept), first_key, len(messages_of(rest[:lead])))
    return await recording.record(
        env, batch, session_id, expected_revision=expected_revision, compacting=compacting
    )


async def restored_numbers(env: Env, session_id: SessionId) -> frozenset[int]:
    """The numbers of the messages of every squash the model restored: spans it asked back,
    which the autopilot leaves alone (`frs.autopilot`)."""
    return (await squash_kinds(env, session_id))[0]


async def squash_kinds(env: Env, session_id: SessionId) -> tuple[frozenset[int], frozenset[int]]:
    """What the autopilot must know of the session's squashes: the numbers of the messages
    of every squash the model restored (spans it asked back, left alone), and the n of every
    live squash the autopilot made (whose summaries it may roll up)."""
    async with env.store.snapshot() as reader:
        squashes = await reader.squashes(session_id)
        undone = [s.n for s in squashes if s.restored]
        members = [await reader.squash_members(session_id, n) for n in undone]
    restored = frozenset(m.number for found in members for m in found if m.number is not None)
    return restored, frozenset(s.n for s in squashes if s.automatic and not s.restored)


async def window_from(
    env: Env, session_id: SessionId, position: int
) -> tuple[Session, list[Message]] | None:
    """The session as it is now and its live entries from `position` to the newest; None
    when the session is gone."""
    async with env.store.snapshot() as reader:
        session = await reader.find_session(env.scope.tenant, session_id)
        if session is None:
            return None
        count = session.live_count - position + 1
        entries = await reader.entries_at(session_id, position, count) if count > 0 else []
        return session, entries


@dataclass(frozen=True, slots=True)
class SquashCalls:
    """When a squash of a gateway thread was made and first sent: the call it was made after
    (1-based: the calls forwarded before it), the call that first sent it (None: not yet)."""

    n: int
    made: int
    sent: int | None

    @property
    def delay(self) -> int | None:
        """Calls from made to first sent (1: the very next call)."""
        return None if self.sent is None else self.sent - self.made


def squash_calls(calls: Sequence[GatewayCall], squashes: Sequence[Squash]) -> list[SquashCalls]:
    """Per squash: the call it was made after and the call that first sent it, from the
    session's forwarded calls (all of them, oldest first: a call's `at` is when it came).
    A host that sends its next request as soon as the answer is in may send it while the
    autopilot writes the batch it made after that answer: the request waits for the batch
    and sends it, so it came before the batch was made, yet the batch was made after the
    call before it, never after the call that sent it."""
    times = [call.at for call in calls]
    out = []
    for squash in squashes:
        made = bisect.bisect_left(times, squash.created_at)
        sent = next((i for i, c in enumerate(calls, start=1) if squash.n in c.applied), None)
        if sent is not None:
            made = min(made, sent - 1)
        out.append(SquashCalls(squash.n, made, sent))
    return out
