"""Whose a conversation the gateway records is: the key its caller's thread is kept under.

A caller of the gateway is its tenant (the gateway's token says which; the recorder's `Env`
is the tenant's) and, on a gateway without tokens, its credential: a digest of the API key or
bearer token it sends its provider (`Caller.credential`, never the key). Two callers never
share a thread, never read each other's squashes, never write into each other's:

- A conversation the host names (a header: Claude Code's session id, ...) is kept under the
  host's id for its owner, so the MCP server the host starts finds the same session by that id
  with nothing typed (`frs.conversations`). The owner is the first caller whose request would
  record into it; a session no caller owns yet (the MCP server made it first, or a gateway from
  before owners) goes to the first. Another credential naming the same conversation gets a
  thread of its own, kept under `<id>#<its digest>`. Ownership is kept as scopes
  (`frs.model.Scope`): the gateway's caller in that conversation, `gateway@<digest>`, has the
  session as its current one, and `gateway:owned` in that conversation marks it owned; both
  are set in the transaction that creates or claims the session, so two first requests cannot
  both own it. With tokens the tenant is the owner, and the host's id is the key as it is.
- A conversation the host does not name is known by its first user message
  (`frs.wire.matching.fingerprint`), to which its key adds a digest of the caller's credential and
  of its system prompt: `<fingerprint>~<digest>`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from frs.checks import check_line
from frs.env import Env
from frs.host_threads import RECORDED_GOAL
from frs.model import Conversation, Scope, Session
from frs.sessions import new_session

#: The client name of the gateway's callers' scopes.
GATEWAY = "gateway"
#: Characters of a digest kept in a key: 64 bits, no two credentials alike in practice.
DIGEST_CHARS = 16


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request, as far as its conversations go: digests only."""

    #: Of the API key or bearer token (`digest`); None where the tenant alone says who it is.
    credential: str | None
    system: str = ""  # of the request's system prompt, for a conversation no header names


def digest(*parts: str) -> str:
    """A one-way digest of `parts` (SHA-256, `DIGEST_CHARS` hex digits): what a key keeps of a
    credential or a prompt."""
    joined = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(joined).hexdigest()[:DIGEST_CHARS]


async def thread_key(
    env: Env, caller: Caller, key: tuple[str, str], named: bool, title: str | None
) -> tuple[str, str]:
    """The key of the caller's thread of the conversation `key` (interface, id): `named` when
    a header named it, else `key` is the first message's fingerprint. `title` is given when
    the request would record: a named conversation no one owns is then claimed (and created
    with this title, in the same transaction); without it nothing is claimed."""
    interface, conversation = key
    if not named:
        return interface, f"{conversation}~{digest(caller.credential or '', caller.system)}"
    if caller.credential is None:
        return key
    return interface, await _owned(env, Conversation(interface, conversation), caller, title)


async def _owned(env: Env, place: Conversation, caller: Caller, title: str | None) -> str:
    """`place.id` when the caller owns the conversation's session (or claims it now, no one
    owning it), else the id of a thread of the caller's own."""
    tenant = env.scope.tenant
    mine = Scope(tenant, client=f"{GATEWAY}@{caller.credential}").in_conversation(place)
    owned = Scope(tenant, client=f"{GATEWAY}:owned").in_conversation(place)
    theirs = f"{place.id}#{caller.credential}"
    async with env.store.snapshot() as reader:
        session = await reader.find_conversation(tenant, place.interface, place.id)
        if session is not None and _same(await reader.current_session(mine), session):
            return place.id
        if session is not None and _same(await reader.current_session(owned), session):
            return theirs
    if title is None:  # nothing to record: a thread that does not exist yet has nothing to see
        return place.id if session is None else theirs
    async with env.store.transaction() as tx:
        session = await tx.find_conversation(tenant, place.interface, place.id)
        if session is None:
            title = check_line(title, "title", env.limits) or "Untitled"
            session = new_session(env, title, RECORDED_GOAL, "position", place.interface, place.id)
            await tx.create_session(session)
        elif _same(await tx.current_session(owned), session):  # claimed since the snapshot
            return place.id if _same(await tx.current_session(mine), session) else theirs
        await tx.set_current(owned, session.id)
        await tx.set_current(mine, session.id)
    return place.id


def _same(found: Session | None, session: Session) -> bool:
    return found is not None and found.id == session.id
