"""Recording: appending messages to a thread, all of a batch or none.

Each numbered message gets the session's next number, which is also its ord, so it lands
after every entry. A thinking block is never numbered: it is stored after the entry it
follows. A result pairs with the latest call of its id; one that cannot pair cleanly is
recorded all the same, with a warning (`frs.pairing`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from frs.checks import check_new_messages
from frs.env import Env
from frs.errors import InvalidRequest
from frs.model import Compaction, Limits, Message, NewMessage, Session, SessionId
from frs.mutation import mutation
from frs.pairing import Pairing, call_ids
from frs.ports import ThreadReader
from frs.sessions import find_current, get
from frs.text import estimate_tokens, message_body, sha256_hex
from frs.views.render import plural

#: `progress(done, total)`: called as long work advances; it must return at once.
Progress = Callable[[int, int], None]
CHUNK = 500  # messages written between two progress reports
# A batch with this much content is checked and measured through `Env.offload` (a worker
# thread under the server): 5,000 messages of 800 characters held the event loop for 0.17 s.
OFFLOAD_CHARS = 256 * 1024


@dataclass(frozen=True, slots=True)
class Compacting:
    """Message `at` of the batch is a host's compaction summary (`frs.model.Compaction`);
    `kept` are the numbers of the stored messages the host kept verbatim after it (those of
    the batch before it are kept too), `first_key` the key its requests begin with now."""

    kept: tuple[int, ...] = ()
    first_key: str | None = None
    at: int = 0


@dataclass(frozen=True, slots=True)
class Recorded:
    session_id: SessionId
    positions: tuple[int, ...]
    numbers: tuple[int, ...]
    thinking: int
    revision: int
    warnings: tuple[str, ...] = ()  # pairing problems, recorded anyway (frs.pairing)


async def record(
    env: Env,
    messages: Sequence[NewMessage],
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
    progress: Progress | None = None,
    compacting: Compacting | None = None,
) -> Recorded:
    """Append messages in one transaction; each numbered one gets the next number.

    `progress(done, total)` is called after each chunk of messages is written (inside the
    transaction, so it must not block: a relay forwards it); nothing is visible to readers
    until the whole batch commits. With `compacting`, one message of the batch is a host's
    summary of the history it compacted, stored as the session's newest `Compaction`.
    """
    if sum(len(new.content) for new in messages) < OFFLOAD_CHARS:
        measured = measure(messages, env.limits)
    else:
        measured = await env.offload(partial(measure, messages, env.limits))
    async with mutation(env, session_id, expected_revision) as m:
        first = m.session
        batch = _Batch(first, Pairing(await m.tx.latest_calls(first.id, call_ids(messages))))
        for start in range(0, len(messages), CHUNK):
            stored = [
                await batch.add(index, new, measured[index], m.tx)
                for index, new in enumerate(messages[start : start + CHUNK], start)
            ]
            await m.tx.insert_messages(first.id, stored)
            if progress is not None:
                progress(min(start + CHUNK, len(messages)), len(messages))
        m.session = batch.recorded()
        m.change = f"recorded {plural(len(batch.positions), 'message')}"
        if compacting is not None:
            compaction = _compaction(first, messages, compacting, env.clock())
            await m.tx.add_compaction(first.id, compaction)
            at = compaction.number
            m.change = f"the host compacted its history: its summary at [{at}]; " + m.change
    return Recorded(
        first.id,
        tuple(batch.positions),
        tuple(range(first.next_number, batch.number)),
        batch.thinking,
        m.session.revision,
        tuple(batch.pairing.warnings),
    )


@dataclass(frozen=True, slots=True)
class Removed:
    session_id: SessionId
    message: Message  # as it was stored, `raw` included
    revision: int


async def remove_newest(
    env: Env, session_id: SessionId | None = None, expected_revision: int | None = None
) -> Removed | None:
    """Take the newest entry back out of the thread, as if it had never been recorded (with
    the thinking recorded after it); None, and nothing changed, when the thread is empty.

    For a runtime whose session protocol pops its last item (the OpenAI Agents SDK rewinds a
    retried turn so). Its number is not reused. The newest entry must be an original: a
    summary is refused (InvalidRequest) -- restore its squash first.
    """
    async with env.store.snapshot() as reader:
        if session_id is not None:
            found: Session | None = await get(env, reader, session_id)
        else:
            found = await find_current(env, reader)
        if found is None or found.live_count == 0:
            return None
    async with mutation(env, found.id, expected_revision) as m:
        session = m.session
        newest = await m.tx.entries_at(session.id, session.live_count, 1)
        if not newest:
            raise InvalidRequest("The thread changed while removing its newest entry; retry.")
        message = newest[0]
        if message.kind == "summary":
            raise InvalidRequest(
                f"The newest entry is a summary (SQ.{message.squash_n}); only a recorded "
                f"message can be taken back. Restore the squash first (frs_restore "
                f"SQ.{message.squash_n}), or leave the thread as it is."
            )
        await m.tx.remove_entry(session.id, message)
        lanes = dict(session.lanes)
        lanes[message.lane] = lanes.get(message.lane, 0) - 1
        m.session = replace(
            session,
            live_count=session.live_count - 1,
            live_tokens=session.live_tokens - message.tokens,
            lanes=lanes,
            recorded=session.recorded - 1,
            recorded_tokens=session.recorded_tokens - message.tokens,
        )
        m.change = f"removed message {message.number}"
    return Removed(session.id, message, m.session.revision)


@dataclass(frozen=True, slots=True)
class Measured:
    """What a new message's text comes to: its body (content and calls), hash and tokens."""

    body: str
    sha256: str
    tokens: int


def measure(messages: Sequence[NewMessage], limits: Limits) -> list[Measured]:
    """Check the batch (`check_new_messages`) and measure every message: the CPU-bound part
    of recording, which needs no store, so a large batch can do it off the event loop."""
    check_new_messages(messages, limits)
    measured = []
    for new in messages:
        body = message_body(new.content, new.tool_calls)
        measured.append(Measured(body, sha256_hex(body), estimate_tokens(body)))
    return measured


def _compaction(
    first: Session, messages: Sequence[NewMessage], compacting: Compacting, at: str
) -> Compaction:
    """The host's compaction as a batch recorded on `first` numbers it: the summary's entry,
    and the first number the host sends from (the turns it kept right up to the summary)."""
    before = messages[: compacting.at]
    number = first.next_number + sum(1 for new in before if new.kind != "thinking")
    kept = {*compacting.kept, *range(first.next_number, number)}
    # The host sends the summary, then the turns it kept: those that run right up to the
    # summary's entry are sent from where they start (others it kept, such as Codex's earlier
    # user messages, are single messages it still sends).
    sent_from = number
    while sent_from - 1 in kept:
        sent_from -= 1
    return Compaction(number, sent_from, at, compacting.first_key)


class _Batch:
    """What a batch adds up to as its messages are numbered one by one."""

    def __init__(self, session: Session, pairing: Pairing) -> None:
        self.session, self.pairing = session, pairing
        self.number = session.next_number
        self.positions: list[int] = []
        self.lanes = dict(session.lanes)
        self.tokens = session.live_tokens
        self.recorded_tokens = 0  # of the numbered originals of this batch
        self.thinking = 0
        # A thinking block sits after the last entry; that entry may be a summary, whose
        # fresh number lies outside the ord space, so anchor on the entry's span instead.
        self.after: int | None = None

    def recorded(self) -> Session:
        """The session once the batch is recorded."""
        first, count = self.session, len(self.positions)
        return replace(
            first,
            next_number=self.number,
            live_count=first.live_count + count,
            live_tokens=self.tokens,
            lanes=self.lanes,
            recorded=first.recorded + count,
            recorded_tokens=first.recorded_tokens + self.recorded_tokens,
        )

    async def add(
        self, index: int, new: NewMessage, measured: Measured, reader: ThreadReader
    ) -> Message:
        if new.kind == "thinking":
            if self.after is None:
                self.after = await last_ord(reader, self.session)
            self.thinking += 1
            return stored_message(new, None, self.after, measured, None)
        number = self.after = self.number
        answers = self.pairing.add(index, new, number)
        message = stored_message(new, number, number, measured, answers)
        self.positions.append(self.session.live_count + len(self.positions) + 1)
        self.lanes[message.lane] = self.lanes.get(message.lane, 0) + 1
        self.tokens += message.tokens
        self.recorded_tokens += message.tokens
        self.number += 1
        return message


async def last_ord(reader: ThreadReader, session: Session) -> int:
    """The ord the newest entry's span ends at (0 for an empty thread): where a thinking block
    or a checkpoint recorded now sits."""
    if session.live_count == 0:
        return 0
    last = await reader.entries_at(session.id, session.live_count, 1)
    return last[0].ord_last if last else 0


def stored_message(
    new: NewMessage, number: int | None, ord_: int, measured: Measured, answers: int | None
) -> Message:
    """A recorded message as stored: numbered (None for thinking), hashed and counted."""
    return Message(
        number=number,
        ord=ord_,
        ord_last=ord_,
        role=new.role,
        kind=new.kind,
        content=new.content,
        sha256=measured.sha256,
        tokens=measured.tokens,
        live=number is not None,
        created_at=new.created_at,
        name=new.name,
        tool_calls=new.tool_calls,
        tool_call_id=new.tool_call_id,
        answers=answers,
        run_id=new.run_id,
        interface_message_id=new.interface_message_id,
        raw=new.raw,
    )
