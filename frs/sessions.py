"""Sessions: starting, selecting, finding and listing them, and the current one.

A session is one thread, owned by the tenant whose caller created it; a caller sees only its
tenant's sessions, and another tenant's id is answered exactly like an unknown one. Tools
that name no session use the caller's current session: the one its connection started or
chose, else its scope's (`frs.model.Scope`), else, for a client that never chose one, the
default client's (what an import or a runtime made current). A scope narrowed to a host's
conversation instead falls back to the conversation's own session, keyed by (interface,
conversation). A write that finds no session at all creates a first one ("Untitled", or the
conversation's) and makes it current, so an agent can record before it starts anything.
Reads never create one.

Four ways to get a session, one per need: `get` a named one (raises SessionNotFound),
`find_current` the caller's current one (None when there is none yet), `ensure` the named
one or else the current one, creating a first session when there is none, and `ensure_in`
the same inside a transaction the caller holds. A call that names a session and then finds
nothing is refused; only the current one may be absent.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from frs.checks import check_field, check_line
from frs.env import Env
from frs.errors import InvalidRequest, SessionNotFound
from frs.model import DEFAULT_CLIENT, LANES, Message, Numbering, Session, SessionId, Squash
from frs.ports import ThreadReader, ThreadTx
from frs.views.render import plural


@dataclass(frozen=True, slots=True)
class SessionStarted:
    session: Session
    created: bool  # False: get-or-create found the conversation's session


@dataclass(frozen=True, slots=True)
class SessionPage:
    """A page of sessions, most recently updated first: `sessions` are numbers offset+1.. of
    `total`."""

    sessions: tuple[Session, ...]
    current: SessionId | None
    total: int
    offset: int

    @property
    def next_offset(self) -> int | None:
        """The offset of the next page, None on the last."""
        end = self.offset + len(self.sessions)
        return end if end < self.total else None


@dataclass(frozen=True, slots=True)
class LiveThread:
    """Every entry of a session in thread order: what exports and runtimes build from."""

    session: Session
    entries: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class SquashLog:
    session: Session
    squashes: tuple[Squash, ...]


async def start(
    env: Env,
    title: str = "",
    goal: str = "",
    numbering: Numbering = "position",
    interface: str | None = None,
    conversation: str | None = None,
) -> SessionStarted:
    """Create a session and make it current; with interface+conversation, get-or-create."""
    title = check_line(title, "title", env.limits) or "Untitled"
    goal = goal.strip()
    check_field(
        goal, "goal", env.limits, "State the goal in a sentence or two; record the details."
    )
    for name, value in (("interface", interface), ("conversation", conversation)):
        if value is not None:
            check_field(value, name, env.limits)
    if (interface is None) != (conversation is None):
        raise InvalidRequest(
            "Give interface and conversation together (e.g. interface='telegram', "
            "conversation='12345'), or neither."
        )
    async with env.store.transaction() as tx:
        found = None
        if interface is not None and conversation is not None:
            found = await tx.find_conversation(env.scope.tenant, interface, conversation)
        session = found or new_session(env, title, goal, numbering, interface, conversation)
        if found is None:
            await tx.create_session(session)
        await tx.set_current(env.scope, session.id)
    env.chosen.choose(env.scope, session.id)
    return SessionStarted(session, created=found is None)


async def set_aside(env: Env, session_id: SessionId) -> Session:
    """Detach a session from its conversation, keeping it whole: its conversation key gains
    ` (set aside at <time>)`, so get-or-create on the conversation starts a new session, and
    this one stays findable by id and in the list. A session of no conversation is unchanged.
    """
    async with env.store.transaction() as tx:
        session = await get(env, tx, session_id)
        if session.conversation is None:
            return session
        now = env.clock()
        aside = replace(
            session,
            conversation=f"{session.conversation} (set aside at {now})",
            revision=session.revision + 1,
            updated_at=now,
        )
        await tx.save_session(aside, "set aside from its conversation")
    return aside


async def use(env: Env, session_id: SessionId) -> Session:
    """Make an existing session current."""
    async with env.store.transaction() as tx:
        session = await get(env, tx, session_id)
        await tx.set_current(env.scope, session.id)
    env.chosen.choose(env.scope, session.id)
    return session


async def page(env: Env, limit: int = 50, offset: int = 0) -> SessionPage:
    """One page of the sessions, most recently updated first, with the total to page by."""
    if limit < 1 or offset < 0:
        raise InvalidRequest(
            f"limit={limit}, offset={offset}: limit is 1 or more and offset 0 or more."
        )
    async with env.store.snapshot() as reader:
        total = await reader.count_sessions(env.scope.tenant)
        if offset > total:
            raise InvalidRequest(
                f"offset={offset:,} is past the end: there are {plural(total, 'session')}. "
                "Use an offset from 0 to the total."
            )
        found = await reader.list_sessions(env.scope.tenant, limit, offset)
        current = await find_current(env, reader)
        return SessionPage(tuple(found), current.id if current else None, total, offset)


async def ensure(env: Env, session_id: SessionId | None = None) -> Session:
    """The given session (raises SessionNotFound), else the current one, created if there is
    none: read in a snapshot first, so only the first call of a caller takes the writer."""
    async with env.store.snapshot() as reader:
        found = await _named_or_current(env, reader, session_id)
    if found is not None:
        return found
    async with env.store.transaction() as tx:
        session = await ensure_in(env, tx, session_id)
    env.chosen.choose(env.scope, session.id)
    return session


async def live_thread(env: Env, session_id: SessionId | None = None) -> LiveThread:
    """Every entry of the session in thread order, read in one snapshot."""
    session = await ensure(env, session_id)
    async with env.store.snapshot() as reader:
        session = await get(env, reader, session.id)
        live = session.live_count
        entries = await reader.entries_at(session.id, 1, live) if live else []
        return LiveThread(session, tuple(entries))


async def squash_log(env: Env, session_id: SessionId | None = None) -> SquashLog:
    """Every squash of the session, restored or not: the audit trail."""
    session = await ensure(env, session_id)
    async with env.store.snapshot() as reader:
        return SquashLog(session, tuple(await reader.squashes(session.id)))


async def get_session(env: Env, session_id: SessionId) -> Session:
    """The session with this id; raises SessionNotFound. A read: it never creates one."""
    async with env.store.snapshot() as reader:
        return await get(env, reader, session_id)


async def find_current_session(env: Env) -> Session | None:
    """The caller's current session; None when there is none yet. A read: it never creates
    one."""
    async with env.store.snapshot() as reader:
        return await find_current(env, reader)


async def find_current(env: Env, reader: ThreadReader) -> Session | None:
    """The caller's current session: its connection's choice, else its scope's, else its
    conversation's session (a scope narrowed to a conversation) or its tenant's default
    client's; None when there is none."""
    chosen = env.chosen.get(env.scope)
    if chosen is not None:
        found = await reader.find_session(env.scope.tenant, chosen)
        if found is not None:
            return found
    current = await reader.current_session(env.scope)
    conversation = env.scope.conversation
    if current is None and conversation is not None:
        # A host's conversation that chose no session has its own, found by its key; it never
        # continues another conversation's (or the workspace's) current session.
        current = await reader.find_conversation(
            env.scope.tenant, conversation.interface, conversation.id
        )
    elif current is None and env.scope.client != DEFAULT_CLIENT:
        # A client that never chose one continues the tenant's default current session: the
        # one an import or a runtime made current, or the database's before scopes existed.
        current = await reader.current_session(replace(env.scope, client=DEFAULT_CLIENT))
    if current is not None:
        # The connection keeps this one, though another connection of its client chooses
        # another later.
        env.chosen.choose(env.scope, current.id)
    return current


async def get(env: Env, reader: ThreadReader, session_id: SessionId) -> Session:
    """The caller's tenant's session with this id; raises SessionNotFound, in the same words
    for an id of another tenant as for one that never existed."""
    session = await reader.find_session(env.scope.tenant, session_id)
    if session is None:
        raise SessionNotFound(session_id)
    return session


async def ensure_in(env: Env, tx: ThreadTx, session_id: SessionId | None) -> Session:
    """`ensure` inside the caller's transaction: the given session (raises SessionNotFound),
    else the current one, creating a first session if none exists (the caller then chooses
    it, once the transaction commits: `Chosen.choose`)."""
    found = await _named_or_current(env, tx, session_id)
    if found is not None:
        return found
    conversation = env.scope.conversation
    if conversation is None:
        session = new_session(env)
    else:  # the conversation's own session, made on its first write
        title = f"{conversation.interface} conversation {conversation.id[:8]}"
        session = new_session(env, title, "", "position", conversation.interface, conversation.id)
    await tx.create_session(session)
    await tx.set_current(env.scope, session.id)
    return session


async def _named_or_current(
    env: Env, reader: ThreadReader, session_id: SessionId | None
) -> Session | None:
    if session_id is not None:
        return await get(env, reader, session_id)
    return await find_current(env, reader)


def new_session(
    env: Env,
    title: str = "Untitled",
    goal: str = "",
    numbering: Numbering = "position",
    interface: str | None = None,
    conversation: str | None = None,
) -> Session:
    """A session with a fresh id, nothing in it yet, at revision 0."""
    now = env.clock()
    return Session(
        id=SessionId(uuid.uuid4().hex[:12]),
        title=title,
        goal=goal,
        numbering=numbering,
        revision=0,
        created_at=now,
        updated_at=now,
        live_count=0,
        live_tokens=0,
        lanes=dict.fromkeys(LANES, 0),
        interface=interface,
        conversation=conversation,
        tenant=env.scope.tenant,
    )
