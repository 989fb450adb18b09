"""What a host's hooks do with one of its conversations (`frs-mcp hook`): record what the host's
own transcript adds to the conversation's thread, and read the thread back for the digest that
follows a compaction.

The session is the conversation's: get-or-create by (interface, conversation), the one the
gateway and the MCP server the host started find too. A transcript is read into units keyed as
the gateway keys the same messages (`frs.wire.matching`): a unit already stored, by an earlier
hook or by the gateway, is never recorded again, and only what follows the last stored unit is
recorded (`new_units`). The write names the revision the keys were read at, so a writer that
slips in between makes the import read the keys again instead of recording twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frs import recording, sessions
from frs.digest import HEADINGS, digest
from frs.env import Env
from frs.errors import StaleRevision
from frs.host_threads import RECORDED_GOAL, find_thread
from frs.model import Message, PlanStep, Session, SessionId
from frs.wire.matching import Unit, messages_of, new_units

#: The goal a session the hooks create starts with: the view shows it to the model, so it does
#: not record the conversation again with frs_record.
HOOKED_GOAL = (
    "Recorded by frs-mcp hook from the host's own transcript: no frs_record needed; "
    "get_alias returns any original."
)
BATCH = 500  # units a transaction records
ATTEMPTS = 3  # reads of the stored keys, when writers keep slipping in between


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import did: the conversation's session (None when it has none and there was
    nothing to record) and how many units it recorded now."""

    session: Session | None
    recorded: int


async def record_transcript(
    env: Env, interface: str, conversation: str, units: Sequence[Unit], title: str
) -> Imported:
    """Record the units of a host's transcript that the conversation's session does not hold
    yet, creating the session (titled `title`) the first time; raises StaleRevision only when
    other writers moved the session `ATTEMPTS` times over."""
    stale: StaleRevision | None = None
    for _ in range(ATTEMPTS):
        thread = await find_thread(env, interface, conversation)
        new = new_units(units, thread.keys if thread else ())
        if not new:
            return Imported(thread.session if thread else None, 0)
        if thread is None:
            started = await sessions.start(
                env, title, HOOKED_GOAL, "position", interface, conversation
            )
            session = started.session
        else:
            session = thread.session
        try:
            revision = session.revision
            for start in range(0, len(new), BATCH):
                batch = messages_of(new[start : start + BATCH])
                done = await recording.record(env, batch, session.id, expected_revision=revision)
                revision = done.revision
        except StaleRevision as exc:
            stale = exc  # batches already written are stored keys now: the next read skips them
            continue
        return Imported(session, len(new))
    assert stale is not None
    raise stale


@dataclass(frozen=True, slots=True)
class Recorded:
    """A conversation's session, its entries in thread order and its plan: what a digest
    reads."""

    session: Session
    entries: tuple[Message, ...]
    plan: tuple[PlanStep, ...] = ()


async def find_recorded(env: Env, interface: str, conversation: str) -> Recorded | None:
    """The conversation's session, its live entries and its plan; None when it has no
    session."""
    async with env.store.snapshot() as reader:
        session = await reader.find_conversation(env.scope.tenant, interface, conversation)
    if session is None:
        return None
    thread = await sessions.live_thread(env, SessionId(session.id))
    async with env.store.snapshot() as reader:
        plan = await reader.plan(thread.session.id)
    return Recorded(thread.session, thread.entries, tuple(plan))


#: Goals that are a recorder's note to the model, not the user's goal: a digest leaves them out,
#: and the viewer shows them as a note.
RECORDER_NOTES = frozenset({HOOKED_GOAL, RECORDED_GOAL})


def compaction_context(recorded: Recorded, budget: int) -> str:
    """What a host's model gets after the host compacted: the thread's digest (`frs.digest`,
    at most `budget` estimated tokens) under one line naming the session, which the host's
    MCP server may not know the conversation by (Gemini CLI's and OpenCode's do not); "" when
    not even the digest's first line fits."""
    session = recorded.session
    body = digest(
        recorded.entries,
        title=session.title,
        goal="" if session.goal in RECORDER_NOTES else session.goal,
        plan=recorded.plan,
        budget=budget,
    )
    if not body:
        return ""
    head = (
        f"FRS (frs-mcp) recorded this conversation whole, as session {session.id} "
        f'(get_alias(alias="M.n", session_id="{session.id}")):'
    )
    return f"{head}\n{body}"


#: Digests made to fit a host's limit on characters, at most: each at a budget smaller in
#: proportion to what the last one was over (less a margin).
FITS = 3
MIN_BUDGET = 200


def fitted_parts(
    recorded: Recorded, budget: int, max_chars: int | None = None, parts: int = 1
) -> list[str]:
    """`compaction_context` in `budget` tokens, cut into at most `parts` parts of at most
    `max_chars` characters each (a host that shows only so much of one hook's answer as it is:
    Claude Code, which runs several hooks for one event), made again at a smaller budget while
    it does not fit; [] when none fits. One part needs no cutting and is the text itself."""
    text = compaction_context(recorded, budget)
    for _ in range(FITS + 1):
        if max_chars is None or len(text) <= max_chars:
            return [text] if text else []
        cut = cut_in_parts(text, max_chars, parts)
        if cut is not None:
            return cut
        if budget <= MIN_BUDGET:
            break
        budget = max(MIN_BUDGET, int(budget * max_chars * parts / len(text) * 0.95))
        text = compaction_context(recorded, budget)
    return []


def cut_in_parts(text: str, max_chars: int, parts: int) -> list[str] | None:
    """`text` cut between lines into at most `parts` parts of at most `max_chars` characters,
    each opening with a line that names it (the host may show them in any order); a part that
    starts inside a section repeats the section's heading. None when it takes more parts."""
    if parts < 2:
        return None
    lines = text.split("\n")
    cut: list[list[str]] = []
    heading = ""
    for line in lines:
        if line in HEADINGS:
            heading = line
        current = cut[-1] if cut else None
        if current is not None and len("\n".join([*current, line])) + _LABEL <= max_chars:
            current.append(line)
            continue
        opened = [line] if line in HEADINGS or not heading else [f"{heading} (continued)", line]
        cut.append(opened)
        if len(cut) > parts or len("\n".join(opened)) + _LABEL > max_chars:
            return None
    total = len(cut)
    return [
        "\n".join([f"[FRS digest, part {k} of {total}]", *part])
        for k, part in enumerate(cut, start=1)
    ]


_LABEL = len("[FRS digest, part 10 of 10]\n")
