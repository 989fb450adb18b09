"""The plan and its checkpoints: the steps a view keeps pinned at its top, and named points
of the thread an agent can come back to.

Replacing the plan and adding a checkpoint may be one call and are one revision; a
checkpoint sits after the newest entry and remembers the revision that made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from frs.checks import check_line, check_plan_size
from frs.env import Env
from frs.errors import InvalidRequest
from frs.model import Checkpoint, PlanStep, Session, SessionId
from frs.mutation import mutation
from frs.recording import last_ord
from frs.views.render import plural


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    session: Session  # as saved: its revision is the one this update made
    steps: tuple[PlanStep, ...]  # the plan as it now is


async def update(
    env: Env,
    steps: Sequence[PlanStep] | None = None,
    checkpoint: str | None = None,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> PlanUpdated:
    """Replace the plan and/or add a named checkpoint after the last entry; one revision."""
    if steps is None and checkpoint is None:
        raise InvalidRequest(
            "Nothing to do: pass steps=[{text, status}] to replace the plan, checkpoint='name' "
            "to mark this point of the thread, or both."
        )
    if steps is not None:
        check_plan_size(len(steps), env.limits)
    cleaned = None
    if steps is not None:
        cleaned = [
            replace(step, text=check_line(step.text, f"steps[{i}].text", env.limits, True))
            for i, step in enumerate(steps)
        ]
    name = None if checkpoint is None else check_line(checkpoint, "checkpoint", env.limits, True)
    async with mutation(env, session_id, expected_revision) as m:
        changes = []
        if cleaned is not None:
            await m.tx.replace_plan(m.session.id, cleaned)
            changes.append(f"plan set to {plural(len(cleaned), 'step')}")
        if name is not None:
            after = await last_ord(m.tx, m.session)
            await m.tx.add_checkpoint(m.session.id, Checkpoint(name, m.revision, after, m.now))
            changes.append(f"checkpoint {name!r}")
        m.change = " and ".join(changes)
        plan = await m.tx.plan(m.session.id)
    return PlanUpdated(m.session, tuple(plan))
