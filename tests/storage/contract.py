"""The storage contract: what any `frs.ports.Store` must do, written against the port alone.

Each test opens this test's store, fresh, migrated and empty, with `async with open_store() as
store:` (the `open_store` fixture in tests/storage/conftest.py names the backends), writes
through `ThreadTx` the values the use cases build, and checks every answer against the
promises of `frs/ports.py`, often by comparing with the test's own model of the thread. No SQL
and no backend import here: a new backend passes this module unchanged (test_contract.py runs it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from itertools import cycle, pairwise
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import pytest

from frs.errors import SearchTooSlow, StoreConflict
from frs.model import (
    LANES,
    LOCAL_TENANT,
    CallRecord,
    Change,
    Checkpoint,
    Compaction,
    FocusLayer,
    GatewayCall,
    Message,
    Nudge,
    PlanStep,
    Role,
    Scope,
    Session,
    SessionId,
    Source,
    Squash,
    ToolCall,
)
from frs.originals import part_starts, render_originals, render_parts
from frs.ports import Store, ThreadReader, ThreadTx
from frs.raw import Raw

# -- the backend under test --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Schema:
    """A backend's account of its schema: the version reached and a description of every object
    (compared only for equality, so its form is the backend's)."""

    version: int
    objects: tuple[str, ...]


class OpenStore(Protocol):
    """The `open_store` fixture: one store per test, and the hooks migrations need."""

    #: The newest schema version this backend's migrations reach.
    newest_version: int

    def __call__(self) -> AbstractAsyncContextManager[Store]:
        """Open this test's store: empty and migrated the first time; each later call opens
        (and migrates) it again as the last one left it."""
        ...

    async def schema(self) -> Schema:
        """The schema of this test's store as it is now (open or not)."""
        ...


# -- values built the way the use cases build them -----------------------------------------------

_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
LOCAL = LOCAL_TENANT
HERE = Scope()  # the local tenant's default client
_ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")


def stamp(seconds: int) -> str:
    """An ISO-8601 UTC time, `seconds` after a fixed epoch, in the service's format."""
    moment = _EPOCH + timedelta(seconds=seconds)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_session(
    sid: str,
    at: str = stamp(0),
    interface: str | None = None,
    conversation: str | None = None,
    title: str = "Untitled",
    tenant: str = LOCAL,
) -> Session:
    """A new session as `frs.sessions.new_session` makes it."""
    return Session(
        id=SessionId(sid),
        title=title,
        goal="",
        numbering="position",
        revision=0,
        created_at=at,
        updated_at=at,
        live_count=0,
        live_tokens=0,
        lanes=dict.fromkeys(LANES, 0),
        interface=interface,
        conversation=conversation,
        tenant=tenant,
    )


def original(
    number: int,
    role: Role = "user",
    content: str | None = None,
    *,
    tool_calls: Sequence[str] = (),
    tool_call_id: str | None = None,
    answers: int | None = None,
    run_id: str | None = None,
    created_at: str | None = None,
) -> Message:
    """A recorded message as `frs.recording` makes it: its ord is its number."""
    text = content if content is not None else f"m{number}"
    calls = tuple(ToolCall(i, "lookup", f'{{"q": "{i}"}}') for i in tool_calls)
    return Message(
        number=number,
        ord=number,
        ord_last=number,
        role=role,
        kind="message",
        content=text,
        sha256=sha(text),
        tokens=len(text) // 4 + 1,
        live=True,
        created_at=created_at,
        name="lookup" if role == "tool" else None,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        answers=answers,
        run_id=run_id,
        interface_message_id=f"im-{number}" if number % 5 == 0 else None,
    )


def thought(after: int, content: str) -> Message:
    """A thinking block recorded after the entry whose span ends at ord `after` (0: before any)."""
    return Message(
        number=None,
        ord=after,
        ord_last=after,
        role="assistant",
        kind="thinking",
        content=content,
        sha256=sha(content),
        tokens=len(content) // 4 + 1,
        live=False,
        created_at=None,
    )


def originals(first: int, count: int, tag: str = "m") -> list[Message]:
    """`count` messages numbered from `first`, cycling through the roles."""
    roles = cycle(_ROLES)
    return [
        original(n, next(roles), f"{tag}{n}", created_at=stamp(n) if n % 2 else None)
        for n in range(first, first + count)
    ]


# -- the test's own model of a session ---------------------------------------------------------


@dataclass
class Thread:
    """One session written through the port, and what the store must now say about it: its
    entries in thread order, every numbered message as stored, each squash and its members'
    numbers, and the change log."""

    session: Session
    entries: list[Message] = field(default_factory=list)
    messages: dict[int, Message] = field(default_factory=dict)
    thoughts: list[Message] = field(default_factory=list)
    squashes: dict[int, Squash] = field(default_factory=dict)
    members: dict[int, list[int]] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)

    @classmethod
    async def start(
        cls,
        tx: ThreadTx,
        sid: str,
        interface: str | None = None,
        conversation: str | None = None,
    ) -> Thread:
        session = new_session(sid, interface=interface, conversation=conversation)
        await tx.create_session(session)
        return cls(session)

    @property
    def sid(self) -> SessionId:
        return self.session.id

    @property
    def next(self) -> int:
        return self.session.next_number

    def ords(self) -> list[int]:
        return [m.ord for m in self.entries]

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """The positions of the first and last entries lying wholly in ords lo..hi."""
        inside = [p for p, m in enumerate(self.entries, 1) if lo <= m.ord and m.ord_last <= hi]
        return inside[0], inside[-1]

    def position(self, ord_: int) -> int:
        """Where an entry starting at `ord_` sits, or would sit: 1 + the entries before it."""
        return 1 + sum(m.ord < ord_ for m in self.entries)

    def member_messages(self, n: int) -> list[Message]:
        return [self.messages[number] for number in self.members[n]]

    async def save(self, tx: ThreadTx, change: str, **counters: Any) -> None:
        """Bump the revision and save, as every use case ends."""
        revision = self.session.revision + 1
        self.session = replace(
            self.session, revision=revision, updated_at=stamp(revision), **counters
        )
        await tx.save_session(self.session, change)
        self.changes.append(f"revision {revision}: {change}")

    async def record(self, tx: ThreadTx, messages: Sequence[Message]) -> None:
        """Insert messages built for the next numbers (and thinking blocks), then save the
        counters `frs.recording.record` keeps."""
        await tx.insert_messages(self.sid, messages)
        lanes, tokens, top, count = dict(self.session.lanes), self.session.live_tokens, self.next, 0
        for message in messages:
            if message.number is None:
                self.thoughts.append(message)
                continue
            self.entries.append(message)
            self.messages[message.number] = message
            lanes[message.lane] += 1
            tokens += message.tokens
            top = max(top, message.number + 1)
            count += 1
        await self.save(
            tx,
            f"recorded {count} messages",
            next_number=top,
            live_count=self.session.live_count + count,
            live_tokens=tokens,
            lanes=lanes,
            recorded=self.session.recorded + count,
        )

    async def squash(
        self,
        tx: ThreadTx,
        first: int,
        last: int,
        text: str | None = None,
        at: tuple[int, int] | None = None,
        save: bool = True,
    ) -> Squash:
        """Squash the entries at positions first..last as `_apply_squash` does; `at`: the
        squash's n and its summary's number, when not the next ones."""
        window = self.entries[first - 1 : last]
        n, number = at or (self.session.next_squash, self.next)
        text = text or f"summary {n}"
        parts = render_parts(window)
        squash = Squash(
            n=n,
            summary_number=number,
            first=window[0].ord,
            last=window[-1].ord_last,
            count=len(window),
            covered=sum(m.covered for m in window),
            tokens_before=sum(m.tokens for m in window),
            tokens_after=len(text) // 4 + 1,
            sha256=sha("\n".join(m.content for m in window)),
            created_at=stamp(1000 + n),
            summary=text,
            chars=len("\n".join(parts)),
        )
        summary = Message(
            number=number,
            ord=squash.first,
            ord_last=squash.last,
            role="assistant",
            kind="summary",
            content=text,
            sha256=sha(text),
            tokens=squash.tokens_after,
            live=True,
            created_at=next((m.created_at for m in window if m.created_at), None),
            covered=squash.covered,
            squash_n=n,
            squash_sha256=squash.sha256,
        )
        await tx.apply_squash(self.sid, squash, summary, window, part_starts(parts))
        self.entries[first - 1 : last] = [summary]
        for member in window:
            self.messages[member.number or 0] = replace(member, live=False)
        self.messages[number] = summary
        self.squashes[n] = squash
        self.members[n] = [m.number or 0 for m in window]
        lanes = dict(self.session.lanes)
        for member in window:
            lanes[member.lane] -= 1
        lanes["summary"] += 1
        self.session = replace(
            self.session,
            next_number=max(self.next, number + 1),
            next_squash=max(self.session.next_squash, n + 1),
            live_count=self.session.live_count - len(window) + 1,
            live_tokens=self.session.live_tokens - squash.tokens_before + squash.tokens_after,
            lanes=lanes,
        )
        if save:
            await self.save(tx, f"squashed positions {first}–{last} into SQ.{n}")
        return squash

    async def squash_ords(self, tx: ThreadTx, lo: int, hi: int) -> Squash:
        """Squash the entries lying in ords lo..hi (an absolute range)."""
        return await self.squash(tx, *self.span(lo, hi))

    async def restore(self, tx: ThreadTx, n: int) -> None:
        """Undo squash `n` (its summary an entry now) as `frs.squashes.restore` does."""
        squash = self.squashes[n]
        summary = self.messages[squash.summary_number]
        members = self.member_messages(n)
        await tx.apply_restore(self.sid, squash, summary, members, stamp(2000 + n))
        at = self.entries.index(summary)
        back = [replace(m, live=True) for m in members]
        self.entries[at : at + 1] = back
        for member in back:
            self.messages[member.number or 0] = member
        self.messages[squash.summary_number] = replace(summary, live=False)
        self.squashes[n] = replace(squash, restored=True)
        lanes = dict(self.session.lanes)
        lanes["summary"] -= 1
        for member in back:
            lanes[member.lane] += 1
        await self.save(
            tx,
            f"restored SQ.{n}",
            live_count=self.session.live_count - 1 + len(back),
            live_tokens=self.session.live_tokens - summary.tokens + sum(m.tokens for m in back),
            lanes=lanes,
        )

    async def check(self, reader: ThreadReader, probes: Iterable[int] = ()) -> None:
        """The store's session, entries and positions are the model's: every entry in order,
        every entry's position, and windows of three from each probed position."""
        assert await reader.find_session(LOCAL, self.sid) == self.session
        count = len(self.entries)
        assert await reader.entries_at(self.sid, 1, count + 5) == self.entries
        ords = self.ords()
        assert await reader.positions_of(self.sid, ords) == list(range(1, count + 1))
        for position in probes:
            got = await reader.entries_at(self.sid, position, 3)
            assert got == self.entries[position - 1 : position + 2], position
        assert await reader.entries_at(self.sid, count + 1, 3) == []

    def seams(self, every: int = 1024) -> list[int]:
        """Positions next to a summary or to where ords cross a multiple of `every` (the SQLite
        store counts entries per 1,024 ords; any store's seams are probed the same way)."""
        chosen = {1, len(self.entries)}
        for index, (before, after) in enumerate(pairwise(self.entries)):
            crosses = before.ord // every != after.ord // every
            if crosses or before.kind == "summary" or after.kind == "summary":
                chosen.update(range(index - 1, index + 4))
        return sorted(p for p in chosen if 1 <= p <= len(self.entries))


async def readings(reader: ThreadReader, sid: SessionId, top: int = 30) -> dict[str, object]:
    """What every per-session reader says about `sid`, probing numbers and ords 0..top."""
    probe = range(top + 1)
    spans = [(lo, lo + width) for lo in range(0, top, 3) for width in (0, 2, 5)]
    return {
        "session": await reader.find_session(LOCAL, sid),
        "entries_at": [await reader.entries_at(sid, p, 4) for p in range(1, top + 1, 3)],
        "all entries": await reader.entries_at(sid, 1, 10 * top),
        "between": await reader.entries_between(sid, 0, 10 * top),
        "between lanes": await reader.entries_between(sid, 3, top, ("user", "summary")),
        "between limit": await reader.entries_between(sid, 2, top, (), 4),
        "last": await reader.last_entries(sid, 5, None),
        "last lanes": await reader.last_entries(sid, 3, ("tool", "summary")),
        "runs": [await reader.run_entries(sid, run) for run in ("r1", "r2", "none")],
        "covering": [await reader.entry_covering(sid, o) for o in probe],
        "positions": await reader.positions_of(sid, list(probe)),
        "messages": [await reader.message(sid, n) for n in probe],
        "thinking": [await reader.thinking(sid, 0, top), await reader.thinking(sid, 0, 0)],
        "calls": await reader.latest_calls(sid, ["a", "b", "c", "d", "z"]),
        "pairs": [await reader.pair_partners(sid, lo, hi) for lo, hi in spans],
        "squash": [await reader.squash(sid, n) for n in range(6)],
        "members": [await reader.squash_members(sid, n) for n in range(6)],
        "holding": [await reader.squash_holding(sid, n) for n in probe],
        "squashes": await reader.squashes(sid),
        "restored": [await reader.restored_summaries(sid, lo, hi) for lo, hi in spans],
        "plan": await reader.plan(sid),
        "checkpoints": await reader.checkpoints(sid),
        "open layers": await reader.open_layers(sid),
        "last layer": await reader.last_layer(sid),
        "changes": await reader.changes_since(sid, 0),
        "sources": await reader.sources(sid),
    }


async def store_readings(store: Store, sids: Sequence[str]) -> dict[str, object]:
    """Everything the store says: the readers of no session, and every reader of each of `sids`."""
    async with store.snapshot() as reader:
        found: dict[str, object] = {
            "count": await reader.count_sessions(LOCAL),
            "list": await reader.list_sessions(LOCAL, 100),
            "current": await reader.current_session(HERE),
            "conversation": await reader.find_conversation(LOCAL, "chat", "c1"),
        }
        for sid in sids:
            found[sid] = await readings(reader, SessionId(sid))
    return found


def same_but_for_the_id(found: object, session: Session) -> object:
    """Another session's readings as they would be for `session`: only the session row differs."""
    assert isinstance(found, dict)
    mine = found["session"]
    assert isinstance(mine, Session)
    return {**found, "session": replace(mine, id=session.id)}


async def thread_of_three(tx: ThreadTx, thread: Thread) -> None:
    """Record three more messages."""
    await thread.record(tx, originals(thread.next, 3))


def source(alias: str, text: str | None = None, path: str | None = None) -> Source:
    """An inline source (text) or a file source (path) as `frs.sources.add` makes it."""
    content = text if text is not None else f"contents of {path}"
    return Source(
        alias=alias,
        kind="text" if text is not None else "file",
        sha256=sha(content),
        chars=len(content),
        lines=content.count("\n") + 1,
        created_at=stamp(3000),
        path=path,
        display=None if path is None else path.rsplit("/", 1)[-1],
        text=text,
    )


async def populate(tx: ThreadTx, thread: Thread) -> None:
    """Give a session one of everything: roles and runs, calls and answers, thinking, nested and
    restored squashes, a plan, checkpoints, focus layers, sources and a change log."""
    await thread.record(
        tx,
        [
            thought(0, "before anything"),
            original(1, "system", "rules"),
            original(2, "user", "question", run_id="r1"),
            original(3, "assistant", "calling", tool_calls=("a", "b"), run_id="r1"),
            original(4, "tool", "answer a", tool_call_id="a", answers=3, run_id="r1"),
            original(5, "tool", "answer b", tool_call_id="b", answers=3),
            thought(5, "thinking after 5"),
            original(6, "user", "more", created_at=stamp(6)),
            original(7, "assistant", "again", tool_calls=("c",), run_id="r2"),
            original(8, "tool", "answer c", tool_call_id="c", answers=7, run_id="r2"),
            original(9, "user", "then"),
            original(10, "assistant", "reply", tool_calls=("a",)),
        ],
    )
    await thread.squash(tx, 4, 5)  # SQ.1: 4..5 into summary 11
    await thread.squash(tx, 3, 6)  # SQ.2: 3, SQ.1's summary, 6, 7 into summary 12
    await thread.restore(tx, 2)
    await thread.squash(tx, 8, 9)  # SQ.3: 9 and 10 into summary 13
    await thread.record(tx, [original(14, "tool", "late a", tool_call_id="a", answers=10)])
    await tx.replace_plan(thread.sid, [PlanStep("read", "done"), PlanStep("write", "doing")])
    await tx.add_checkpoint(thread.sid, Checkpoint("start", thread.session.revision + 1, 0, "t"))
    await tx.add_checkpoint(thread.sid, Checkpoint("mid", thread.session.revision + 1, 7, "t"))
    await tx.open_layer(thread.sid, FocusLayer(1, 1, "outer", 14, stamp(1)))
    await tx.open_layer(thread.sid, FocusLayer(2, 2, "inner", 15, stamp(2)))
    await tx.close_layer(thread.sid, 2, stamp(3), None)
    await tx.add_source(thread.sid, source("S.notes", text="line one\nline two"))
    await tx.add_source(thread.sid, source("H.main", path="/srv/app/main.py"))
    await thread.save(tx, "plan, marks, layers and sources")


async def rewrite(tx: ThreadTx, thread: Thread) -> None:
    """Change a populated session through every write that names a key other sessions share:
    squash 3 restored, layer 1 closed, source S.notes removed, plan and marks replaced."""
    await thread.restore(tx, 3)
    await thread.squash(tx, 1, 2)
    await thread.record(tx, [original(thread.next, "user", "after the rewrite"), thought(3, "t")])
    await tx.close_layer(thread.sid, 1, stamp(9), 4)
    await tx.remove_source(thread.sid, "S.notes")
    await tx.replace_plan(thread.sid, [])
    await tx.add_checkpoint(thread.sid, Checkpoint("end", thread.session.revision + 1, 9, "t"))
    await tx.open_layer(thread.sid, FocusLayer(3, 1, "next", thread.next, stamp(4)))
    await thread.save(tx, "rewritten")


# -- the contract ------------------------------------------------------------------------------


class TestPositions:
    """Positions are 1-based and contiguous over the entries, in ord order, at any length."""

    async def test_positions_follow_the_entries_through_squashes_and_restores_across_blocks(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                other = await Thread.start(tx, "other")
                thread = await Thread.start(tx, "big")
            for _ in range(3):
                async with store.transaction() as tx:
                    await thread.record(tx, originals(thread.next, 1000))
                    # Another session's rows interleave with these; they must never count.
                    await other.record(tx, originals(other.next, 10, "o"))
            first_3000 = list(thread.entries)

            async def step(*actions: tuple[str, int, int]) -> None:
                async with store.transaction() as tx:
                    for action, a, b in actions:
                        if action == "squash":
                            await thread.squash_ords(tx, a, b)
                        else:
                            await thread.restore(tx, a)
                async with store.snapshot() as reader:
                    await thread.check(reader, thread.seams())

            await step(("squash", 1000, 1100))  # SQ.1 crosses ord 1024
            await step(("squash", 2040, 2060))  # SQ.2 crosses ord 2048
            await step(("squash", 1, 5))  # SQ.3 at the very start
            await step(("squash", 990, 2100))  # SQ.4 nests SQ.1 and SQ.2; no entry in 1024..2047
            at = thread.ords().index(989)
            assert thread.ords()[at : at + 3] == [989, 990, 2101]
            await step(("squash", 2990, 3000))  # SQ.5 the very end
            # The five summaries took numbers 3001..3005: new messages start at 3006.
            async with store.transaction() as tx:
                await thread.record(tx, originals(thread.next, 100))
            assert thread.entries[-100].ord == 3006
            await step(("squash", 3050, 3100))  # SQ.6 crosses ord 3072, after a gap of ords
            await step(("restore", 4, 0))  # SQ.1 and SQ.2 are entries again
            await step(("restore", 1, 0), ("restore", 2, 0))
            await step(("squash", 1024, 2047))  # SQ.7 exactly one block
            await step(("squash", 1020, 2050))  # SQ.8 nests SQ.7 from both sides
            await step(("restore", 8, 0), ("restore", 7, 0))
            await step(("restore", 3, 0), ("restore", 5, 0), ("restore", 6, 0))
            assert thread.entries[:3000] == first_3000
            assert [m.number for m in thread.entries[3000:]] == list(range(3006, 3106))
            async with store.snapshot() as reader:
                found = await reader.positions_of(thread.sid, [3006, 1, 3105, 1024, 1024])
                assert found == [3001, 1, 3100, 1024, 1024]  # in the order given, repeats too
                await other.check(reader, other.seams())

    async def test_positions_of_an_ord_where_no_entry_starts_counts_the_entries_before_it(
        self, open_store: OpenStore
    ) -> None:
        # The service relies on this: an empty focus layer starts at the next number, where no
        # entry is yet, and its first position is then one past the last.
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 20))
                await thread.squash(tx, 5, 9)  # summary 21 spans ords 5..9
            probe = [0, 1, 6, 9, 10, 20, 21, 22, 5000]
            async with store.snapshot() as reader:
                found = await reader.positions_of(thread.sid, probe)
                assert await reader.positions_of(thread.sid, []) == []
        assert found == [thread.position(o) for o in probe] == [1, 1, 6, 6, 6, 16, 17, 17, 17]

    async def test_entries_at_reads_a_window_from_any_position_and_nothing_past_the_end(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 12))
                await thread.squash(tx, 3, 6)
            async with store.snapshot() as reader:
                sid, entries = thread.sid, thread.entries
                for position in range(1, len(entries) + 2):
                    for count in (1, 2, 5, 100):
                        got = await reader.entries_at(sid, position, count)
                        assert got == entries[position - 1 : position - 1 + count]
                assert await reader.entries_at(sid, 1, 0) == []
                assert await reader.entries_at(sid, 50, 5) == []


class TestWindowsAndLanes:
    """Entries by ord range, by lane, the newest ones, by run; the entry covering an ord; a
    message by number; thinking blocks."""

    @staticmethod
    async def mixed(store: Store) -> Thread:
        """40 messages of every role (runs r1 and r2 on some), with two live summaries."""
        async with store.transaction() as tx:
            thread = await Thread.start(tx, "s")
            await thread.record(
                tx,
                [replace(m, run_id=("r1", "r2", None)[m.ord % 3]) for m in originals(1, 40)],
            )
            await thread.squash_ords(tx, 6, 9)  # summary 41
            await thread.squash_ords(tx, 30, 33)  # summary 42
        return thread

    async def test_entries_between_takes_the_entries_starting_in_the_ord_range(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            thread = await self.mixed(store)
            async with store.snapshot() as reader:
                for lo, hi in [(0, 100), (1, 40), (6, 6), (7, 12), (10, 29), (41, 42), (9, 3)]:
                    want = [m for m in thread.entries if lo <= m.ord <= hi]
                    assert await reader.entries_between(thread.sid, lo, hi) == want, (lo, hi)
                    assert await reader.entries_between(thread.sid, lo, hi, ()) == want
        # A summary starting before lo is not in the range, though its span reaches into it.
        assert not [m for m in thread.entries if 7 <= m.ord <= 12 and m.kind == "summary"]

    async def test_entries_between_keeps_only_the_lanes_given_and_the_first_limit(
        self, open_store: OpenStore
    ) -> None:
        lane_sets: list[tuple[str, ...]] = [
            ("user",),
            ("summary",),
            ("tool", "user"),
            ("summary", "system", "assistant"),
            ("user", "user"),
            tuple(LANES),
        ]
        async with open_store() as store:
            thread = await self.mixed(store)
            async with store.snapshot() as reader:
                for lanes in lane_sets:
                    for lo, hi in [(0, 100), (5, 31), (10, 12)]:
                        want = [m for m in thread.entries if lo <= m.ord <= hi and m.lane in lanes]
                        for limit in (None, 0, 1, 3, 1000):
                            got = await reader.entries_between(thread.sid, lo, hi, lanes, limit)
                            assert got == want[:limit], (lanes, lo, hi, limit)
                for limit in (0, 1, 7):
                    got = await reader.entries_between(thread.sid, 0, 100, limit=limit)
                    assert got == thread.entries[:limit]

    async def test_last_entries_are_the_newest_of_the_lanes_in_thread_order(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            thread = await self.mixed(store)
            entries = thread.entries
            async with store.snapshot() as reader:
                for count in (0, 1, 5, len(entries), len(entries) + 10):
                    want = entries[max(0, len(entries) - count) :] if count else []
                    assert await reader.last_entries(thread.sid, count, None) == want
                for lanes in [("summary",), ("user", "tool"), ("system",), ("tool", "tool")]:
                    lane = [m for m in entries if m.lane in lanes]
                    for count in (1, 3, len(lane), len(lane) + 20):
                        got = await reader.last_entries(thread.sid, count, lanes)
                        assert got == lane[-count:], (lanes, count)
                # More asked than the lane holds: the whole lane, not entries of other lanes.
                got = await reader.last_entries(thread.sid, 10, ("summary",))
        assert [m.number for m in got] == [41, 42]

    async def test_run_entries_are_the_live_entries_of_that_run_in_order(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            thread = await self.mixed(store)
            async with store.snapshot() as reader:
                for run in ("r1", "r2"):
                    want = [m for m in thread.entries if m.run_id == run]
                    assert await reader.run_entries(thread.sid, run) == want
                    # The run has squashed members, which are not entries any more.
                    assert [m for m in thread.messages.values() if m.run_id == run and not m.live]
                assert await reader.run_entries(thread.sid, "r3") == []

    async def test_entry_covering_is_the_last_entry_starting_at_or_before_the_ord(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            thread = await self.mixed(store)
            async with store.snapshot() as reader:
                for ord_ in range(0, 50):
                    before = [m for m in thread.entries if m.ord <= ord_]
                    want = before[-1] if before else None
                    assert await reader.entry_covering(thread.sid, ord_) == want, ord_
                for ord_ in (6, 7, 9):  # inside the first summary's span
                    found = await reader.entry_covering(thread.sid, ord_)
                    assert found is not None
                    assert (found.number, found.kind) == (41, "summary")

    async def test_message_finds_a_number_live_squashed_or_a_summary(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            thread = await self.mixed(store)
            async with store.transaction() as tx:
                await thread.restore(tx, 2)  # summary 42 leaves the thread
            async with store.snapshot() as reader:
                for number in range(1, 43):
                    assert await reader.message(thread.sid, number) == thread.messages[number]
                squashed, summary, restored = [
                    await reader.message(thread.sid, n) for n in (7, 41, 42)
                ]
                for n in (0, 43, 10**6):
                    assert await reader.message(thread.sid, n) is None
        assert squashed is not None
        assert (squashed.kind, squashed.live) == ("message", False)
        assert summary is not None
        assert (summary.kind, summary.live) == ("summary", True)
        assert restored is not None
        assert (restored.squash_n, restored.live) == (2, False)

    async def test_restored_summaries_are_found_by_number_range(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            thread = await self.mixed(store)
            async with store.snapshot() as reader:
                none = await reader.restored_summaries(thread.sid, 1, 10**6)
            async with store.transaction() as tx:
                await thread.restore(tx, 2)  # summary 42 leaves the thread
            async with store.snapshot() as reader:
                found = [
                    await reader.restored_summaries(thread.sid, lo, hi)
                    for lo, hi in ((1, 10**6), (42, 42), (1, 41), (43, 10**6), (42, 1))
                ]
        assert none == []
        assert found == [[(42, 2)], [(42, 2)], [], [], []]

    async def test_thinking_blocks_come_by_anchor_in_the_order_recorded_and_are_never_entries(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, [thought(0, "z first"), original(1), thought(1, "y")])
                await thread.record(tx, [thought(1, "b third"), thought(1, "a fourth")])
                await thread.record(tx, originals(2, 3))
                await thread.squash(tx, 2, 3)  # summary 5 spans 2..3
                await thread.record(tx, [thought(3, "after the summary"), thought(4, "last")])
            t0, t1a, t1b, t1c, t3, t4 = thread.thoughts
            async with store.snapshot() as reader:

                async def thinking(lo: int, hi: int) -> list[Message]:
                    return await reader.thinking(thread.sid, lo, hi)

                assert await thinking(0, 0) == [t0]
                assert await thinking(1, 1) == [t1a, t1b, t1c]
                assert await thinking(0, 4) == [t0, t1a, t1b, t1c, t3, t4]
                assert await thinking(2, 3) == [t3]
                assert await thinking(5, 100) == []
                entries = await reader.entries_at(thread.sid, 1, 100)
                assert entries == thread.entries
                assert await reader.entries_between(thread.sid, 0, 100) == thread.entries
                assert await reader.last_entries(thread.sid, 100, None) == thread.entries
        assert all(m.kind != "thinking" for m in entries)
        assert t0.content == "z first"


class TestRuntimeItems:
    """What the runtime adapters need: a raw item kept with its message, the newest entries of
    a conversation in one read, and the newest entry taken back."""

    async def test_a_raw_item_comes_back_exactly_as_stored_with_its_message(
        self, open_store: OpenStore
    ) -> None:
        raw = '{"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA\\u0000=", "é": 1}'
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                # The third holds its own content: stored once, handed back whole.
                third = replace(original(3), raw='[{"role": "user", "content": "m3"}]')
                await thread.record(tx, [replace(original(1), raw=raw), original(2), third])
            async with store.snapshot() as reader:
                first, second, again = await reader.entries_at(thread.sid, 1, 3)
                by_number = await reader.message(thread.sid, 1)
        assert (first.raw, second.raw, again.raw) == (raw, None, third.raw)
        assert by_number == first == thread.entries[0]
        assert again == third

    async def test_newest_entries_of_a_conversation_are_the_tenants_newest_in_thread_order(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s", "agents", "c1")
                await thread.record(
                    tx,
                    [
                        replace(m, raw=f'[{{"n": {m.number}}}]') if m.ord % 3 else m
                        for m in originals(1, 30)
                    ],
                )
                await thread.squash_ords(tx, 26, 28)  # summary 31 among the newest
                other = await Thread.start(tx, "t", "agents", "c2")
                await other.record(tx, originals(1, 3, tag="other"))

            def shown(entries: Sequence[Message]) -> list[Message | str]:
                return [m.raw if m.raw is not None else m for m in entries]

            def texts(got: Sequence[Message | Raw]) -> list[Message | str]:
                return [g.text() if isinstance(g, Raw) else g for g in got]

            for count in (0, 1, 5, len(thread.entries), 100):
                got = texts(await store.newest_entries(LOCAL, "agents", "c1", count))
                assert got == (shown(thread.entries[-count:]) if count else []), count
            everything = texts(await store.newest_entries(LOCAL, "agents", "c1", None))
            assert everything == shown(thread.entries)
            assert '[{"n": 29}]' in everything
            assert await store.newest_entries(LOCAL, "agents", "c2", None) == other.entries
            for tenant, interface, conversation in [
                ("acme", "agents", "c1"),
                (LOCAL, "other", "c1"),
                (LOCAL, "agents", "c3"),
            ]:
                assert await store.newest_entries(tenant, interface, conversation, 10) == []

    async def test_removing_the_newest_entry_takes_its_calls_and_thinking_and_nothing_else(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, [original(1), thought(1, "before 2")])
                await thread.record(tx, [original(2, "assistant", tool_calls=["c1"])])
                await thread.record(tx, [thought(2, "after 2")])
                await tx.remove_entry(thread.sid, thread.entries[-1])
            async with store.snapshot() as reader:
                assert await reader.entries_at(thread.sid, 1, 10) == thread.entries[:1]
                assert await reader.last_entries(thread.sid, 10, None) == thread.entries[:1]
                assert await reader.message(thread.sid, 2) is None
                assert await reader.latest_calls(thread.sid, ["c1"]) == {}
                assert [t.content for t in await reader.thinking(thread.sid, 0, 10)] == ["before 2"]
                assert await reader.positions_of(thread.sid, [1, 2]) == [1, 2]
            # The number is not reused: the next message gets 3, after the first entry.
            async with store.transaction() as tx:
                await tx.insert_messages(thread.sid, [original(3)])
            async with store.snapshot() as reader:
                got = await reader.entries_at(thread.sid, 1, 10)
        assert [m.number for m in got] == [1, 3]


class TestSquashAndRestore:
    """A squash replaces entries by one summary at the first one's ord; a restore undoes it."""

    async def test_a_squash_turns_its_members_into_one_summary_entry_at_the_first_ord(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 10))
                squash = await thread.squash(tx, 4, 7, "four to seven")
            async with store.snapshot() as reader:
                await thread.check(reader, range(1, 8))
                entries = await reader.entries_at(thread.sid, 1, 20)
                assert [m.ord for m in entries] == [1, 2, 3, 4, 8, 9, 10]
                summary = entries[3]
                assert (summary.number, summary.ord, summary.ord_last) == (11, 4, 7)
                assert (summary.kind, summary.content, summary.live) == (
                    "summary",
                    squash.summary,
                    True,
                )
                assert await reader.positions_of(thread.sid, [4, 8]) == [4, 5]
                for number in range(4, 8):
                    member = await reader.message(thread.sid, number)
                    assert member is not None
                    assert not member.live
                    assert await reader.entry_covering(thread.sid, number) == summary

    async def test_squash_gives_back_what_was_stored_and_nothing_for_an_unknown_n(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 6))
                one = await thread.squash(tx, 2, 3)
                two = await thread.squash(tx, 3, 4)
            async with store.snapshot() as reader:
                assert await reader.squash(thread.sid, 1) == one
                assert await reader.squash(thread.sid, 2) == two
                assert await reader.squash(thread.sid, 3) is None
                assert await reader.squash(thread.sid, 0) is None
                assert await reader.squash_members(thread.sid, 3) == []
        assert (one.restored, one.summary) == (False, "summary 1")

    async def test_squash_members_are_in_thread_order_and_may_hold_a_summary(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 10))
                await thread.squash(tx, 4, 6)  # SQ.1: 4, 5, 6 into summary 11
                await thread.squash(tx, 2, 5)  # SQ.2: 2, 3, summary 11, 7 into summary 12
            async with store.snapshot() as reader:
                inner = await reader.squash_members(thread.sid, 1)
                outer = await reader.squash_members(thread.sid, 2)
        assert [m.number for m in inner] == [4, 5, 6]
        assert [m.number for m in outer] == [2, 3, 11, 7]
        assert outer == thread.member_messages(2)
        assert (outer[2].kind, outer[2].live) == ("summary", False)
        assert all(not m.live for m in [*inner, *outer])

    async def test_squash_members_at_reads_only_the_members_a_page_overlaps(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 8))
                await thread.squash(tx, 2, 3)  # SQ.1: 2, 3 into summary 9
                squash = await thread.squash(tx, 1, 5)  # SQ.2: 1, summary 9, 4, 5, 6
            members = thread.member_messages(2)
            starts = part_starts(render_parts(members))
            pages = {
                "first character": (0, 1),
                "inside one member": (starts[1] + 1, starts[1] + 2),
                "across three members": (starts[1] + 1, starts[3] + 1),
                "from a start to the next start": (starts[2], starts[3]),
                "the very end": (squash.chars, squash.chars),
            }
            async with store.snapshot() as reader:
                got = {
                    what: await reader.squash_members_at(thread.sid, 2, start, end)
                    for what, (start, end) in pages.items()
                }
                stored = await reader.squash(thread.sid, 2)
        assert stored is not None
        assert stored.chars == squash.chars == len(render_originals(members))
        assert got == {
            "first character": (0, members[:1]),
            "inside one member": (starts[1], members[1:2]),
            "across three members": (starts[1], members[1:4]),
            "from a start to the next start": (starts[2], members[2:3]),
            "the very end": (starts[4], members[4:]),
        }

    async def test_squash_holding_names_only_the_unrestored_squash_holding_a_number(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 10))
                await thread.squash(tx, 4, 6)  # SQ.1 holds 4..6; summary 11
                await thread.squash(tx, 3, 5)  # SQ.2 holds 3, 11, 7; summary 12
            async with store.snapshot() as reader:

                async def holders(reader: ThreadReader) -> dict[int, int | None]:
                    found = {}
                    for number in range(0, 16):
                        squash = await reader.squash_holding(thread.sid, number)
                        found[number] = squash.n if squash else None
                    return found

                nested = await holders(reader)
            async with store.transaction() as tx:
                await thread.restore(tx, 2)
                await thread.restore(tx, 1)
                await thread.squash_ords(tx, 4, 6)  # SQ.3 holds 4..6 again; summary 13
            async with store.snapshot() as reader:
                again = await holders(reader)
                assert await reader.squash_holding(thread.sid, 5) == thread.squashes[3]
        held = dict.fromkeys(range(16))
        assert nested == {**held, 4: 1, 5: 1, 6: 1, 3: 2, 11: 2, 7: 2}
        # SQ.1 and SQ.2 were restored: only SQ.3 holds anything now.
        assert again == {**held, 4: 3, 5: 3, 6: 3}

    async def test_squashes_are_listed_by_n_whatever_order_they_were_applied_in(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 10))
                # As compress_ranges does: applied from the last range, numbered as given.
                three = await thread.squash(tx, 8, 9, at=(3, 13), save=False)
                two = await thread.squash(tx, 5, 6, at=(2, 12), save=False)
                one = await thread.squash(tx, 1, 2, at=(1, 11), save=False)
                await thread.save(tx, "three squashes")
            async with store.transaction() as tx:
                await thread.restore(tx, 2)
            async with store.snapshot() as reader:
                listed = await reader.squashes(thread.sid)
                await thread.check(reader, range(1, 8))
        assert listed == [one, replace(two, restored=True), three]

    async def test_a_restore_puts_the_members_back_in_place_of_the_summary(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 10))
                await thread.squash(tx, 4, 6)  # SQ.1
                await thread.squash(tx, 2, 5)  # SQ.2 holds SQ.1's summary
                await thread.restore(tx, 2)
            async with store.snapshot() as reader:
                await thread.check(reader, range(1, 9))
                assert [m.number for m in await reader.entries_at(thread.sid, 1, 20)] == [
                    1, 2, 3, 11, 7, 8, 9, 10,
                ]  # fmt: skip
                summary = await reader.message(thread.sid, 12)
                inner = await reader.message(thread.sid, 11)
                assert summary is not None
                assert not summary.live
                assert inner is not None
                assert inner.live
                assert await reader.squash(thread.sid, 2) == thread.squashes[2]
                assert [m.live for m in await reader.squash_members(thread.sid, 2)] == [True] * 4
            async with store.transaction() as tx:
                await thread.restore(tx, 1)
            async with store.snapshot() as reader:
                await thread.check(reader, range(1, 11))
                squashes = await reader.squashes(thread.sid)
        assert [m.number for m in thread.entries] == list(range(1, 11))
        assert [(s.n, s.restored) for s in squashes] == [(1, True), (2, True)]


class TestCountersAndRevisions:
    """The session row keeps every counter as saved, and the log one line per revision."""

    async def test_save_session_stores_every_field_and_counter(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                created = new_session("s", interface="chat", conversation="c1")
                await tx.create_session(created)
                saved = replace(
                    created,
                    title="Renamed",
                    goal="A goal",
                    numbering="absolute",
                    revision=7,
                    updated_at=stamp(77),
                    live_count=11,
                    live_tokens=12345,
                    lanes={"system": 1, "user": 2, "assistant": 3, "tool": 4, "summary": 1},
                    recorded=19,
                    next_number=23,
                    next_squash=5,
                )
                await tx.save_session(saved, "every counter")
                assert await tx.find_session(LOCAL, created.id) == saved
            async with store.snapshot() as reader:
                assert await reader.find_session(LOCAL, created.id) == saved
                assert await reader.changes_since(created.id, 6) == ["revision 7: every counter"]
                assert await reader.find_conversation(LOCAL, "chat", "c1") == saved

    async def test_every_save_logs_its_change_at_its_revision(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 4))
                await thread.squash(tx, 1, 2)
                await thread.save(tx, "a plan")
            async with store.transaction() as tx:
                await thread.restore(tx, 1)
            async with store.snapshot() as reader:
                await thread.check(reader)
                logged = await reader.changes_since(thread.sid, 0)
        assert logged == thread.changes
        assert logged == [
            "revision 1: recorded 4 messages",
            "revision 2: squashed positions 1–2 into SQ.1",
            "revision 3: a plan",
            "revision 4: restored SQ.1",
        ]

    async def test_changes_since_gives_at_most_the_ten_newest_oldest_first(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                for i in range(1, 26):
                    await thread.save(tx, f"change {i}")
            async with store.snapshot() as reader:

                async def since(revision: int) -> list[str]:
                    return await reader.changes_since(thread.sid, revision)

                assert await since(0) == [f"revision {r}: change {r}" for r in range(16, 26)]
                assert await since(14) == thread.changes[15:]
                assert await since(15) == thread.changes[15:]
                assert await since(20) == thread.changes[20:]
                assert await since(24) == ["revision 25: change 25"]
                assert await since(25) == []
                assert await since(99) == []
                # A caller's expected revision is unbounded; below 1 it means from the start.
                assert await since(-3) == await since(0)
                assert await since(-(2**70)) == await since(0)


class TestSessions:
    """Sessions by id and by conversation, the current one, and the list by last update."""

    async def test_a_created_session_is_found_by_id_exactly_as_given(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            created = new_session("s1", at=stamp(5), title="First")
            async with store.transaction() as tx:
                await tx.create_session(created)
            async with store.snapshot() as reader:
                assert await reader.find_session(LOCAL, SessionId("s1")) == created
                assert await reader.find_session(LOCAL, SessionId("s2")) is None
                assert await reader.find_session(LOCAL, SessionId("S1")) is None
                assert await reader.count_sessions(LOCAL) == 1

    async def test_a_conversation_finds_its_one_session(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                chat = new_session("s1", interface="chat", conversation="c1")
                mail = new_session("s2", interface="mail", conversation="c1")
                bare = new_session("s3")
                for session in (chat, mail, bare):
                    await tx.create_session(session)
            async with store.snapshot() as reader:
                assert await reader.find_conversation(LOCAL, "chat", "c1") == chat
                assert await reader.find_conversation(LOCAL, "mail", "c1") == mail
                assert await reader.find_conversation(LOCAL, "chat", "c2") is None
                assert await reader.find_conversation(LOCAL, "c1", "chat") is None

    async def test_a_second_session_for_a_conversation_is_refused_and_nothing_changes(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                first = await Thread.start(tx, "s1", interface="chat", conversation="c1")
                await tx.set_current(HERE, first.sid)
                await thread_of_three(tx, first)
            before = await store_readings(store, ["s1", "s2", "s3"])

            async def conflict() -> None:
                async with store.transaction() as tx:
                    await tx.create_session(new_session("s3"))
                    await tx.set_current(HERE, SessionId("s3"))
                    await first.save(tx, "renamed", title="changed")
                    await tx.create_session(new_session("s2", interface="chat", conversation="c1"))

            with pytest.raises(StoreConflict):
                await conflict()
            assert await store_readings(store, ["s1", "s2", "s3"]) == before
            # The store is fine afterwards.
            async with store.transaction() as tx:
                await tx.create_session(new_session("s2", interface="chat", conversation="c2"))
            async with store.snapshot() as reader:
                assert await reader.count_sessions(LOCAL) == 2

    async def test_a_second_session_with_a_used_id_is_refused(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s1", title="First"))

            async def again() -> None:
                async with store.transaction() as tx:
                    await tx.create_session(new_session("s1", title="Second"))

            with pytest.raises(StoreConflict):
                await again()
            async with store.snapshot() as reader:
                found = await reader.find_session(LOCAL, SessionId("s1"))
                assert await reader.count_sessions(LOCAL) == 1
        assert found is not None
        assert found.title == "First"

    async def test_sessions_without_a_conversation_never_conflict(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                for i in range(3):
                    await tx.create_session(new_session(f"s{i}"))
            async with store.snapshot() as reader:
                assert await reader.count_sessions(LOCAL) == 3

    async def test_the_current_session_is_the_one_last_marked_as_it_now_is(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.snapshot() as reader:
                assert await reader.current_session(HERE) is None
            async with store.transaction() as tx:
                one = await Thread.start(tx, "s1")
                two = await Thread.start(tx, "s2")
                assert await tx.current_session(HERE) is None
                await tx.set_current(HERE, one.sid)
                assert await tx.current_session(HERE) == one.session
            async with store.transaction() as tx:
                await tx.set_current(HERE, two.sid)
                await tx.set_current(HERE, one.sid)
                await tx.set_current(HERE, two.sid)
                await two.record(tx, originals(1, 3))
            async with store.snapshot() as reader:
                assert await reader.current_session(HERE) == two.session

    async def test_sessions_are_listed_by_last_update_then_id_and_paged(
        self, open_store: OpenStore
    ) -> None:
        # (id, updated_at seconds): ties on the time are ordered by id.
        rows = [("e", 5), ("a", 1), ("d", 9), ("b", 5), ("c", 5), ("f", 0), ("g", 9)]
        async with open_store() as store:
            async with store.transaction() as tx:
                for sid, _ in rows:
                    await tx.create_session(new_session(sid, at=stamp(0)))
                for sid, seconds in rows:
                    found = await tx.find_session(LOCAL, SessionId(sid))
                    assert found is not None
                    await tx.save_session(
                        replace(found, revision=1, updated_at=stamp(seconds)), "touched"
                    )
            async with store.snapshot() as reader:
                listed = [s.id for s in await reader.list_sessions(LOCAL, 100)]
                pages = [
                    [s.id for s in await reader.list_sessions(LOCAL, limit, offset)]
                    for limit, offset in [(3, 0), (3, 3), (3, 6), (3, 7), (2, 1), (1, 100)]
                ]
                count = await reader.count_sessions(LOCAL)
        assert listed == ["d", "g", "b", "c", "e", "a", "f"]
        assert pages == [["d", "g", "b"], ["c", "e", "a"], ["f"], [], ["g", "b"], []]
        assert count == 7


class TestViewerReads:
    """What the web viewer reads beyond the tools: the change log with its counters, and
    sessions found by their title or their messages' text."""

    async def test_the_change_log_gives_the_newest_lines_with_the_counters_each_left(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(tx, originals(1, 4))
                await thread.save(tx, "a plan", recorded_tokens=40)
                await thread.squash(tx, 1, 2)
            async with store.snapshot() as reader:
                log = await reader.change_log(thread.sid, 100)
                newest = await reader.change_log(thread.sid, 2)
                none = await reader.change_log(SessionId("other"), 100)
        assert [(c.revision, c.change) for c in log] == [
            (1, "recorded 4 messages"),
            (2, "a plan"),
            (3, "squashed positions 1–2 into SQ.1"),
        ]
        assert log[0] == Change(1, "recorded 4 messages", stamp(1), 4, 4, 4, 0)
        assert (log[1].recorded_tokens, log[2].live_count) == (40, 3)
        assert log[2].live_tokens == thread.session.live_tokens
        assert newest == log[1:]
        assert none == []

    async def test_sessions_are_found_by_title_or_any_message_text_of_the_tenant_only(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("t", title="Parser 100% done_x"))
                await tx.create_session(new_session("o", title="Parser", tenant="other"))
                thread = await Thread.start(tx, "m")
                await thread.record(tx, [original(1, content="the Needle in text")])
                await thread.squash(tx, 1, 1)  # a squashed original is still found
            async with store.snapshot() as reader:

                async def found(text: str, limit: int = 10) -> list[str]:
                    return [s.id for s in await reader.search_sessions(LOCAL, text, limit)]

                assert await found("parser") == ["t"]
                assert await found("100%") == ["t"]
                assert await found("0% d") == ["t"]
                assert await found("%") == ["t"]  # a wildcard matches only itself
                assert await found("e_x") == ["t"]
                assert await found("_") == ["t"]
                assert await found("needle IN") == ["m"]
                assert await found("e") == ["m", "t"]
                assert await found("e", 1) == ["m"]
                assert await found("absent") == []
                assert [s.id for s in await reader.search_sessions("other", "parser", 9)] == ["o"]

    async def test_a_search_reads_beside_other_reads_and_is_stopped_at_its_time_bound(
        self, open_store: OpenStore
    ) -> None:
        """A search's snapshot (`searching`) is not the one other reads wait for (SQLite: a
        connection of its own; PostgreSQL: a capped share of the pool), and a search running
        past its bound is stopped with `SearchTooSlow`; the store goes on serving."""
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "m")
                words = [
                    original(n, content=f"{n} " + "lorem ipsum " * 200) for n in range(1, 2001)
                ]
                await thread.record(tx, words)  # some 5 MB of text
            async with store.searching(60) as searching:
                with anyio.fail_after(30):  # a bound for the failing case, never waited out
                    async with store.snapshot() as reader:
                        assert await reader.count_sessions(LOCAL) == 1
                found = await searching.search_sessions(LOCAL, "1999 lorem", 5)
                assert [s.id for s in found] == ["m"]
            with pytest.raises(SearchTooSlow, match=r"took longer than 1e-06 s and was stopped"):
                async with store.searching(0.000001) as searching:
                    await searching.search_sessions(LOCAL, "a phrase found nowhere at all", 5)
            async with store.searching(60) as searching:
                assert [s.id for s in await searching.search_sessions(LOCAL, "ipsum", 5)] == ["m"]


class TestToolCalls:
    """Which message made a call id last, whether it is answered, and the partners of a span."""

    async def test_latest_calls_names_the_latest_message_making_each_id_and_its_answer(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                other = await Thread.start(tx, "other")
                await other.record(tx, [original(1, "assistant", tool_calls=("a", "x"))])
                await thread.record(
                    tx,
                    [
                        original(1, "assistant", tool_calls=("a",)),
                        original(2, "tool", tool_call_id="a", answers=1),
                        original(3, "assistant", tool_calls=("a", "b", "c")),
                        original(4, "tool", tool_call_id="c", answers=3),
                        original(5, "tool", tool_call_id="a", answers=1),  # answers the old a
                        original(6, "tool", tool_call_id="c", answers=3),  # a second answer
                        original(7, "assistant", tool_calls=("d",)),
                    ],
                )
                await thread.squash(tx, 7, 7)  # a squashed call was still made
            async with store.snapshot() as reader:
                found = await reader.latest_calls(thread.sid, ["a", "b", "c", "d", "x", "z", "a"])
                assert await reader.latest_calls(thread.sid, []) == {}
            async with store.transaction() as tx:
                await thread.record(tx, [original(9, "tool", tool_call_id="a", answers=3)])
                assert (await tx.latest_calls(thread.sid, ["a"]))["a"] == CallRecord(3, 9)
        assert found == {
            "a": CallRecord(3, None),
            "b": CallRecord(3, None),
            "c": CallRecord(3, 4),
            "d": CallRecord(7, None),
        }

    async def test_pair_partners_reach_out_of_a_span_in_both_directions(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread.record(
                    tx,
                    [
                        original(1, "user"),
                        original(2, "assistant", tool_calls=("a",)),
                        original(3, "assistant", tool_calls=("b",)),
                        original(4, "tool", tool_call_id="a", answers=2),
                        original(5, "tool", tool_call_id="b", answers=3),
                        original(6, "assistant", tool_calls=("c",)),
                        original(7, "user"),
                        original(8, "tool", tool_call_id="c", answers=6),
                    ],
                )

            async def partners() -> dict[tuple[int, int], tuple[int | None, int | None]]:
                spans = [(4, 5), (5, 6), (3, 4), (2, 3), (1, 8), (7, 7), (1, 1), (6, 7), (8, 8)]
                async with store.snapshot() as reader:
                    return {s: await reader.pair_partners(thread.sid, *s) for s in spans}

            before = await partners()
            async with store.transaction() as tx:
                await thread.squash(tx, 4, 5)  # the answers to 2 and 3 leave the thread
            after = await partners()
        assert before == {
            (4, 5): (2, None),  # the lowest call before the span answered inside
            (5, 6): (3, 8),
            (3, 4): (2, 5),
            (2, 3): (None, 5),  # the highest answer after the span to a call inside
            (1, 8): (None, None),
            (7, 7): (None, None),
            (1, 1): (None, None),
            (6, 7): (None, 8),
            (8, 8): (6, None),
        }
        # Pairs are of messages, entries or not: a squashed answer still partners its call.
        assert after == before


class TestPlanMarksLayersSources:
    """The plan, checkpoints, focus layers and sources of a session."""

    async def test_replace_plan_makes_the_plan_exactly_the_steps_given(
        self, open_store: OpenStore
    ) -> None:
        plans = [
            [PlanStep("b"), PlanStep("a", "doing"), PlanStep("c", "done")],
            [PlanStep("only", "done")],
            [],
            [PlanStep("x"), PlanStep("x"), PlanStep("y")],
        ]
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                assert await tx.plan(SessionId("s")) == []
            for steps in plans:
                async with store.transaction() as tx:
                    await tx.replace_plan(SessionId("s"), steps)
                async with store.snapshot() as reader:
                    assert await reader.plan(SessionId("s")) == steps

    async def test_checkpoints_come_in_the_order_added(self, open_store: OpenStore) -> None:
        marks = [
            Checkpoint("zeta", 5, 9, stamp(1)),
            Checkpoint("alpha", 2, 0, stamp(2)),
            Checkpoint("alpha", 9, 3, stamp(0)),
        ]
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                await tx.add_checkpoint(SessionId("s"), marks[0])
            async with store.transaction() as tx:
                for mark in marks[1:]:
                    await tx.add_checkpoint(SessionId("s"), mark)
            async with store.snapshot() as reader:
                assert await reader.checkpoints(SessionId("s")) == marks

    async def test_open_layers_are_the_unclosed_ones_outermost_first(
        self, open_store: OpenStore
    ) -> None:
        sid = SessionId("s")
        layers = [
            FocusLayer(1, 1, "outer", 1, stamp(1)),
            FocusLayer(2, 2, "middle", 4, stamp(2)),
            FocusLayer(3, 3, "inner", 9, stamp(3)),
        ]
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                assert (await tx.open_layers(sid), await tx.last_layer(sid)) == ([], 0)
                for layer in layers:
                    await tx.open_layer(sid, layer)
            async with store.snapshot() as reader:
                assert await reader.open_layers(sid) == layers
                assert await reader.last_layer(sid) == 3
            async with store.transaction() as tx:
                await tx.close_layer(sid, 3, stamp(4), 1)
                await tx.close_layer(sid, 2, stamp(5), None)  # it was empty
            async with store.snapshot() as reader:
                assert await reader.open_layers(sid) == layers[:1]
                assert await reader.last_layer(sid) == 3  # the newest ever opened, closed or not
            async with store.transaction() as tx:
                await tx.open_layer(sid, FocusLayer(4, 2, "again", 12, stamp(6)))
                await tx.close_layer(sid, 1, stamp(7), 2)
            async with store.snapshot() as reader:
                assert await reader.open_layers(sid) == [FocusLayer(4, 2, "again", 12, stamp(6))]
                assert await reader.last_layer(sid) == 4

    async def test_sources_are_listed_by_alias_and_forgotten_when_removed(
        self, open_store: OpenStore
    ) -> None:
        sid = SessionId("s")
        # By alias in code-point order: capitals before lower case, whatever the locale.
        added = [
            source("S.beta", text="b"),
            source("S.Zeta", path="/srv/z.md"),
            source("H.main", path="/srv/app/main.py"),
            source("S.alpha", text="line\nline\n"),
        ]
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                for item in added:
                    await tx.add_source(sid, item)
            async with store.snapshot() as reader:
                listed = await reader.sources(sid)
            async with store.transaction() as tx:
                await tx.remove_source(sid, "S.beta")
                await tx.remove_source(sid, "H.main")
            async with store.snapshot() as reader:
                left = await reader.sources(sid)
            async with store.transaction() as tx:
                await tx.add_source(sid, source("S.beta", text="again"))  # the alias is free
            async with store.snapshot() as reader:
                final = await reader.sources(sid)
        assert [s.alias for s in listed] == ["H.main", "S.Zeta", "S.alpha", "S.beta"]
        assert listed == sorted(added, key=lambda s: s.alias)
        assert left == [added[1], added[3]]
        assert [s.alias for s in final] == ["S.Zeta", "S.alpha", "S.beta"]
        assert final[2].text == "again"


def gateway_call(seconds: int, applied: tuple[int, ...] = (), nudges: int = 0) -> GatewayCall:
    """A forwarded request as the gateway records it: the squashes sent so far, with marks."""
    return GatewayCall(
        at=stamp(seconds),
        wire="anthropic",
        sent_bytes=10_000 + seconds,
        sent_tokens=2_500 + seconds,
        forwarded_bytes=6_000 + seconds,
        forwarded_tokens=1_500 + seconds,
        applied=applied,
        sent=tuple((n, f"mark of SQ.{n} — “é”") for n in sorted(applied)),
        nudges=tuple(
            Nudge(f"key{i}", f"[frs] squash ~{i} tokens\nnow ✓", i + 1) for i in range(nudges)
        ),
    )


class TestGatewayCalls:
    """The requests the gateway forwarded for a session (`add_gateway_call`, `gateway_calls`)."""

    async def test_calls_come_back_whole_newest_last_and_leave_the_session_alone(
        self, open_store: OpenStore
    ) -> None:
        sid = SessionId("s")
        calls = [gateway_call(1), gateway_call(2, (3, 1), nudges=1), gateway_call(3, (1, 3, 4), 2)]
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                await tx.create_session(new_session("other"))
                await tx.add_gateway_call(sid, calls[0])
            before = await store_readings(store, ["s"])
            async with store.transaction() as tx:
                for call in calls[1:]:
                    await tx.add_gateway_call(sid, call)
                await tx.add_gateway_call(SessionId("other"), gateway_call(9))
            async with store.snapshot() as reader:
                every = await reader.gateway_calls(sid, 10)
                newest = await reader.gateway_calls(sid, 2)
                last = await reader.gateway_calls(sid, 1)
                none = await reader.gateway_calls(sid, 0)
                other = await reader.gateway_calls(SessionId("other"), 10)
            after = await store_readings(store, ["s"])
        assert every == calls
        assert newest == calls[1:]
        assert last == calls[2:]
        assert last[0].applied == (1, 3, 4)  # in the order sent, not sorted
        assert none == []
        assert other == [gateway_call(9)]
        assert after == before  # no revision, counter or change log line for a call

    async def test_a_call_of_an_unknown_session_is_refused(self, open_store: OpenStore) -> None:
        async with open_store() as store:

            async def orphan() -> None:
                async with store.transaction() as tx:
                    await tx.add_gateway_call(SessionId("nowhere"), gateway_call(1))

            with pytest.raises(StoreConflict):
                await orphan()
            async with store.snapshot() as reader:
                assert await reader.gateway_calls(SessionId("nowhere"), 5) == []


class TestCompactions:
    """A host's compactions of the history it sends (`add_compaction`, `compactions`)."""

    async def test_compactions_come_back_by_number_per_session(self, open_store: OpenStore) -> None:
        made = [
            Compaction(40, 37, stamp(2), "u:after-the-second"),
            Compaction(12, 10, stamp(1), "u:after-the-first"),
        ]
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                await tx.create_session(new_session("other"))
                for compaction in made:
                    await tx.add_compaction(SessionId("s"), compaction)
                await tx.add_compaction(SessionId("other"), Compaction(5, 5, stamp(3)))
            async with store.snapshot() as reader:
                found = await reader.compactions(SessionId("s"))
                other = await reader.compactions(SessionId("other"))
                none = await reader.compactions(SessionId("nowhere"))
        assert found == sorted(made, key=lambda c: c.number)
        assert other == [Compaction(5, 5, stamp(3), None)]
        assert none == []


class TestGatewayTurns:
    """A conversation's gateway turn (`take_gateway_turn`, `end_gateway_turn`,
    `gateway_turn`): one holder at a time, until it frees it or its time runs out."""

    async def test_one_holder_at_a_time_until_freed_or_run_out(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
                await tx.create_session(new_session("other"))
            s = SessionId("s")

            async def take(holder: str, now: int, until: int) -> bool:
                async with store.transaction() as tx:
                    return await tx.take_gateway_turn(s, holder, stamp(now), stamp(until))

            async def holder() -> tuple[str, str] | None:
                async with store.snapshot() as reader:
                    return await reader.gateway_turn(s)

            assert await holder() is None
            assert await take("a-1", 1, 10)
            assert not await take("b-1", 2, 12)  # a-1's runs until 10
            assert await holder() == ("a-1", stamp(10))
            assert await take("a-1", 3, 13)  # its holder may take it again, for longer
            async with store.transaction() as tx:
                await tx.end_gateway_turn(s, "b-1")  # not b-1's to free
                assert await tx.take_gateway_turn(SessionId("other"), "b-1", stamp(3), stamp(9))
            assert await holder() == ("a-1", stamp(13))
            async with store.transaction() as tx:
                await tx.end_gateway_turn(s, "a-1")
            assert await holder() is None
            assert await take("b-1", 4, 14)  # free again
            assert await take("c-1", 15, 20)  # b-1's ran out at 14
            assert await holder() == ("c-1", stamp(20))
            async with store.snapshot() as reader:
                assert await reader.gateway_turn(SessionId("other")) == ("b-1", stamp(9))
                assert await reader.gateway_turn(SessionId("nowhere")) is None


class TestIsolation:
    """Each method reads or writes one session: another session's rows never show through."""

    async def test_no_reader_shows_another_sessions_rows_and_no_write_touches_them(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            # Two sessions with the same numbers, ords, call ids, runs, squash and layer
            # numbers and aliases: a query that forgot the session would mix them up.
            async with store.transaction() as tx:
                one = await Thread.start(tx, "one")
                await populate(tx, one)
            alone = (await store_readings(store, ["one"]))["one"]
            async with store.transaction() as tx:
                two = await Thread.start(tx, "two")
                await populate(tx, two)
            both = await store_readings(store, ["one", "two"])
            assert both["one"] == alone
            assert both["two"] == same_but_for_the_id(alone, two.session)
            async with store.transaction() as tx:
                await rewrite(tx, one)
            changed = await store_readings(store, ["one", "two"])
            assert changed["one"] != alone
            assert changed["two"] == both["two"]
            async with store.transaction() as tx:
                await rewrite(tx, two)
            final = await store_readings(store, ["one", "two"])
            assert final["one"] == changed["one"]
            assert final["two"] == same_but_for_the_id(changed["one"], two.session)
            async with store.snapshot() as reader:
                await one.check(reader, range(1, 12))
                await two.check(reader, range(1, 12))

    async def test_an_unknown_session_reads_as_empty(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                await populate(tx, await Thread.start(tx, "one"))
                await tx.create_session(new_session("empty"))
            found = await store_readings(store, ["one", "empty", "nobody"])
        empty = found["empty"]
        assert isinstance(empty, dict)
        assert found["nobody"] == {**empty, "session": None}
        assert empty == {
            **{key: [] for key in empty},
            "session": new_session("empty"),
            "runs": [[], [], []],
            "covering": [None] * 31,
            "positions": [1] * 31,  # no entry before any ord
            "messages": [None] * 31,
            "thinking": [[], []],
            "calls": {},
            "pairs": [(None, None)] * 30,
            "squash": [None] * 6,
            "members": [[]] * 6,
            "holding": [None] * 31,
            "restored": [[]] * 30,
            "last layer": 0,
            "entries_at": [[]] * 10,
        }


class TestTenantsAndScopes:
    """A tenant finds only its own sessions, by any way of finding one; each client of a
    tenant has its own current session."""

    async def test_a_tenant_finds_none_of_another_tenants_sessions(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                for sid, tenant, at in (("a1", "alice", 1), ("a2", "alice", 3), ("b1", "bob", 2)):
                    await tx.create_session(
                        new_session(sid, stamp(at), "chat", f"c-{sid}", tenant=tenant)
                    )
                # The same conversation key in two tenants is two sessions.
                await tx.create_session(new_session("a3", stamp(4), "mail", "k", tenant="alice"))
                await tx.create_session(new_session("b2", stamp(5), "mail", "k", tenant="bob"))
            async with store.snapshot() as reader:
                alice = [s.id for s in await reader.list_sessions("alice", 10)]
                bob = [s.id for s in await reader.list_sessions("bob", 10)]
                counts = [await reader.count_sessions(t) for t in ("alice", "bob", LOCAL)]
                found = {
                    (tenant, sid): await reader.find_session(tenant, SessionId(sid))
                    for tenant in ("alice", "bob")
                    for sid in ("a1", "b1")
                }
                chats = {
                    tenant: await reader.find_conversation(tenant, "chat", "c-a1")
                    for tenant in ("alice", "bob")
                }
                mail = [await reader.find_conversation(t, "mail", "k") for t in ("alice", "bob")]
        assert alice == ["a3", "a2", "a1"]
        assert bob == ["b2", "b1"]
        assert counts == [3, 2, 0]
        assert found[("alice", "a1")] == new_session("a1", stamp(1), "chat", "c-a1", tenant="alice")
        assert found[("bob", "b1")] is not None
        assert found[("alice", "b1")] is None
        assert found[("bob", "a1")] is None
        assert chats["alice"] is not None
        assert chats["bob"] is None
        assert [s.id if s else None for s in mail] == ["a3", "b2"]

    async def test_a_saved_session_keeps_its_tenant(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s", tenant="alice"))
                found = await tx.find_session("alice", SessionId("s"))
                assert found is not None
                moved = replace(found, revision=1, tenant="bob", title="renamed")
                await tx.save_session(moved, "renamed")
            async with store.snapshot() as reader:
                kept = await reader.find_session("alice", SessionId("s"))
                assert await reader.find_session("bob", SessionId("s")) is None
        assert kept == replace(moved, tenant="alice")

    async def test_each_client_of_each_tenant_has_its_own_current_session(
        self, open_store: OpenStore
    ) -> None:
        desktop, code = Scope(LOCAL, "claude-ai"), Scope(LOCAL, "claude-code@file:///p")
        alice = Scope("alice", "claude-ai")
        async with open_store() as store:
            async with store.transaction() as tx:
                one = await Thread.start(tx, "one")
                two = await Thread.start(tx, "two")
                await tx.create_session(new_session("a", tenant="alice"))
                await tx.set_current(desktop, one.sid)
                await tx.set_current(code, two.sid)
                await tx.set_current(alice, SessionId("a"))
            async with store.transaction() as tx:
                await tx.set_current(code, one.sid)
                await tx.set_current(code, two.sid)  # the last mark wins, per client
            async with store.snapshot() as reader:
                current = {
                    scope.name: await reader.current_session(scope)
                    for scope in (desktop, code, alice, HERE, Scope("bob", "claude-ai"))
                }
                # The connection plays no part in what the store keeps.
                with_connection = await reader.current_session(replace(desktop, connection="x"))
        assert current == {
            "claude-ai": one.session,
            "claude-code@file:///p": two.session,
            "alice/claude-ai": new_session("a", tenant="alice"),
            "default": None,
            "bob/claude-ai": None,
        }
        assert with_connection == one.session

    async def test_a_mark_on_another_tenants_session_is_never_answered(
        self, open_store: OpenStore
    ) -> None:
        # A caller only marks sessions it found, so this cannot happen through the service;
        # the store still answers only with the scope's own tenant's session.
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("b", tenant="bob"))
                await tx.set_current(Scope("alice", "x"), SessionId("b"))
            async with store.snapshot() as reader:
                assert await reader.current_session(Scope("alice", "x")) is None


class TestTransactions:
    """A transaction is atomic and serialized; a snapshot is one consistent, committed state.

    A snapshot may be open while a transaction is (tool calls read while others write), so
    some tests open one inside the other in a single task.
    """

    async def test_an_exception_rolls_back_every_write_of_the_transaction(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s", interface="chat", conversation="c1")
                await populate(tx, thread)
                await tx.set_current(HERE, thread.sid)
            before = await store_readings(store, ["s", "new"])

            class Boom(Exception):
                pass

            async def fail() -> None:
                async with store.transaction() as tx:
                    await rewrite(tx, thread)
                    await thread.squash(tx, 1, 3)
                    await tx.add_source(thread.sid, source("D.more", text="more"))
                    await tx.create_session(new_session("new"))
                    await tx.set_current(HERE, SessionId("new"))
                    raise Boom

            with pytest.raises(Boom):  # the body's own exception, not a store error
                await fail()
            assert await store_readings(store, ["s", "new"]) == before
            async with store.transaction() as tx:  # the store takes the next one
                await tx.create_session(new_session("new"))
            async with store.snapshot() as reader:
                assert await reader.count_sessions(LOCAL) == 2

    async def test_a_cancelled_transaction_rolls_back(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread_of_three(tx, thread)
            before = await store_readings(store, ["s"])
            with anyio.CancelScope() as scope:
                async with store.transaction() as tx:
                    await thread_of_three(tx, thread)
                    await tx.create_session(new_session("new"))
                    scope.cancel()
                    await anyio.sleep(1)
            assert scope.cancelled_caught
            assert await store_readings(store, ["s"]) == before

    async def test_a_transaction_reads_its_own_writes(self, open_store: OpenStore) -> None:
        async with open_store() as store, store.transaction() as tx:
            thread = await Thread.start(tx, "s")
            await populate(tx, thread)
            await thread.check(tx, range(1, 10))
            assert await tx.count_sessions(LOCAL) == 1
            assert await tx.squashes(thread.sid) == list(thread.squashes.values())

    async def test_a_snapshot_never_sees_an_uncommitted_write(self, open_store: OpenStore) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread_of_three(tx, thread)
            before = await store_readings(store, ["s", "new"])
            async with store.transaction() as tx:
                await thread_of_three(tx, thread)
                await populate(tx, await Thread.start(tx, "new"))
                await tx.set_current(HERE, SessionId("new"))
                assert await store_readings(store, ["s", "new"]) == before
            after = await store_readings(store, ["s", "new"])
            assert after != before
            async with store.snapshot() as reader:
                await thread.check(reader)

    async def test_a_snapshot_keeps_the_state_of_its_first_read_across_a_commit(
        self, open_store: OpenStore
    ) -> None:
        # What a snapshot promises: every read in it sees one committed state, the one there was
        # at its first read (SQLite in WAL mode, like PostgreSQL's repeatable read, fixes the
        # state at the first read, not at entering `snapshot()`).
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s")
                await thread_of_three(tx, thread)
            async with store.snapshot() as reader:
                first = await readings(reader, thread.sid)
                async with store.transaction() as tx:  # commits while the snapshot is open
                    await thread_of_three(tx, thread)
                    await populate(tx, await Thread.start(tx, "new"))
                assert await readings(reader, thread.sid) == first
                assert await reader.count_sessions(LOCAL) == 1
                assert await reader.find_session(LOCAL, SessionId("new")) is None
            async with store.snapshot() as reader:
                await thread.check(reader)
                assert await reader.count_sessions(LOCAL) == 2

    async def test_concurrent_transactions_are_serialized_and_lose_no_write(
        self, open_store: OpenStore
    ) -> None:
        tasks = 50
        log: list[tuple[str, int]] = []
        async with open_store() as store:
            async with store.transaction() as tx:
                await tx.create_session(new_session("s"))
            sid = SessionId("s")

            async def append(i: int) -> None:
                async with store.transaction() as tx:
                    log.append(("in", i))
                    session = await tx.find_session(LOCAL, sid)
                    assert session is not None
                    # Give every other task the chance to write between this read and write.
                    await anyio.lowlevel.checkpoint()
                    number = session.next_number
                    await tx.insert_messages(sid, [original(number, content=f"task {i}")])
                    await tx.save_session(
                        replace(
                            session,
                            revision=session.revision + 1,
                            next_number=number + 1,
                            live_count=session.live_count + 1,
                        ),
                        f"task {i}",
                    )
                    log.append(("out", i))

            async with anyio.create_task_group() as group:
                for i in range(tasks):
                    group.start_soon(append, i)
            async with store.snapshot() as reader:
                session = await reader.find_session(LOCAL, sid)
                entries = await reader.entries_at(sid, 1, 100)
                changes = await reader.changes_since(sid, 0)
        assert session is not None
        assert (session.next_number, session.revision, session.live_count) == (51, 50, 50)
        assert [m.number for m in entries] == list(range(1, 51))
        assert sorted(m.content for m in entries) == sorted(f"task {i}" for i in range(tasks))
        assert len(changes) == 10
        # One transaction at a time: each one's body ran whole before the next one began.
        assert [kind for kind, _ in log] == ["in", "out"] * tasks
        assert all(a[1] == b[1] for a, b in zip(log[::2], log[1::2], strict=True))


class TestMigrations:
    """A fresh store is migrated to the newest schema; opening it again changes nothing."""

    async def test_a_fresh_store_is_at_the_newest_schema_version_and_empty(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            schema = await open_store.schema()
            async with store.snapshot() as reader:
                assert await reader.count_sessions(LOCAL) == 0
                assert await reader.list_sessions(LOCAL, 10) == []
                assert await reader.current_session(HERE) is None
        assert schema.version == open_store.newest_version
        assert schema.objects

    async def test_reopening_a_store_changes_neither_its_schema_nor_its_data(
        self, open_store: OpenStore
    ) -> None:
        async with open_store() as store:
            async with store.transaction() as tx:
                thread = await Thread.start(tx, "s", interface="chat", conversation="c1")
                await populate(tx, thread)
                await tx.set_current(HERE, thread.sid)
            before = await store_readings(store, ["s"])
        schema = await open_store.schema()
        for _ in range(2):
            async with open_store() as store:
                assert await store_readings(store, ["s"]) == before
            assert await open_store.schema() == schema
        assert schema.version == open_store.newest_version
