"""A conversation's turn: which gateway call is settling, whichever instance serves it.

Between the end of a call's answer and the conversation's next request the gateway writes
what the call leaves behind: the answer, the call's row (what it sent, `frs.host_threads`)
and the autopilot's batch. With several gateways on one database, the next request may come
to another instance while that is still being written; rendered from a half-written state,
it would go upstream with other bytes than one gateway would send, and break the prompt
cache. So the call that ends takes the conversation's turn (a row in the store, not a lock
in a process) before the end of its answer reaches the host, and frees it when all is
written; the next request, on any instance, waits for it (`wait_turn`), and only the
turn's holder plans a batch. A turn runs out `TURN_SECONDS` after it was taken, so an
instance that died holding one delays the conversation's next request by that much at most.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from frs.env import Env
from frs.model import SessionId

#: How long a turn lasts unless freed: longer than writing a call's leavings takes (a batch
#: on a 100,000-message thread takes under a second), short enough to wait out a dead holder.
TURN_SECONDS = 10.0


def later(now: str, seconds: float) -> str:
    """The stored time `seconds` after `now` (both as `frs.env.utc_now` writes them)."""
    moment = datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


async def take_turn(
    env: Env, interface: str, conversation: str, holder: str, seconds: float = TURN_SECONDS
) -> SessionId | None:
    """Take the conversation's turn for `holder`: the session's id when it has it; None when
    the conversation has no session yet or another call holds the turn (that call then
    settles, and plans the batch)."""
    now = env.clock()
    async with env.store.transaction() as tx:
        session = await tx.find_conversation(env.scope.tenant, interface, conversation)
        if session is None:
            return None
        taken = await tx.take_gateway_turn(session.id, holder, now, later(now, seconds))
        return session.id if taken else None


async def end_turn(env: Env, session_id: SessionId, holder: str) -> None:
    """Free the turn `holder` took (a turn another took meanwhile stays)."""
    async with env.store.transaction() as tx:
        await tx.end_gateway_turn(session_id, holder)


async def turn_held(env: Env, interface: str, conversation: str) -> bool:
    """Whether a call of the conversation is settling: its turn is held and has not run out."""
    async with env.store.snapshot() as reader:
        session = await reader.find_conversation(env.scope.tenant, interface, conversation)
        if session is None:
            return False
        turn = await reader.gateway_turn(session.id)
    return turn is not None and turn[1] >= env.clock()
