"""The frame every change to a session runs in, written once.

`mutation()` opens one transaction, resolves the session (creating a first one if the caller
named none and there is none), refuses a stale `expected_revision` naming what changed since,
and hands the body a `Mutation`. The body writes through `m.tx`, keeps `m.session`'s counters
up to date and says what changed (`m.change`); on leaving, the revision grows by exactly one
and the session row and its change-log line are saved in the same transaction. A body that
raises changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

from frs.env import Env
from frs.errors import StaleRevision
from frs.model import Session, SessionId
from frs.ports import ThreadTx
from frs.sessions import ensure_in


@dataclass(slots=True)
class Mutation:
    tx: ThreadTx
    session: Session  # as the body leaves it: counters updated, revision not yet bumped
    now: str
    change: str = ""  # what changed, for the change log; set by the body

    @property
    def revision(self) -> int:
        """The revision this mutation commits (the session's, plus one)."""
        return self.session.revision + 1


@asynccontextmanager
async def mutation(
    env: Env, session_id: SessionId | None, expected_revision: int | None
) -> AsyncIterator[Mutation]:
    async with env.store.transaction() as tx:
        session = await ensure_in(env, tx, session_id)
        await check_revision(tx, session, expected_revision)
        m = Mutation(tx, session, env.clock())
        yield m
        saved = replace(m.session, revision=session.revision + 1, updated_at=m.now)
        await tx.save_session(saved, m.change)
        m.session = saved
    if session_id is None:  # committed: a first session created here is the caller's now
        env.chosen.choose(env.scope, saved.id)


async def check_revision(tx: ThreadTx, session: Session, expected: int | None) -> None:
    """Refuse a stale expected revision, listing the newest changes since and counting the
    older ones (one change per revision)."""
    if expected is not None and expected != session.revision:
        changes = (
            await tx.changes_since(session.id, expected) if expected < session.revision else []
        )
        unlisted = max(0, session.revision - max(expected, 0) - len(changes))
        raise StaleRevision(expected, session.revision, tuple(changes), unlisted)
