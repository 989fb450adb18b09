"""Property test: any sequence of record / compress_range / compress_last / restore, run through
the service on a real SQLite file, agrees with a small in-memory model of the thread.

After every step the numbered view shows exactly the model's entries at positions 1..n, and the
revision grew by one per accepted change. Each refusal is predicted by the model (a range that
splits a tool call from its result, with the smallest range that keeps them together; a summary
not smaller than what it replaces; restoring a squash covered by a later one, or restored
already) and leaves the view and the revision as they were. At the end every squash's alias
still holds each original it replaced, and restoring every active squash, newest first, gives
back the thread a twin session (same records, never squashed) shows.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from frs import (
    AlreadyRestored,
    CoveredByLaterSquash,
    Env,
    InvalidRequest,
    NewMessage,
    SplitsToolCall,
    Squashed,
    SummaryNotSmaller,
    ToolCall,
    ViewOptions,
    pages,
    recording,
    sessions,
    viewing,
)
from frs import squashes as frs_squashes
from frs.text import estimate_tokens, message_body
from tests.frs.conftest import open_env

CALL_IDS = ("c1", "c2", "c3")
# No `[`, `(`, `\` or `{`: content renders verbatim, so a page can be searched for its lines.
TEXT = st.text(alphabet="abcdefghij klm,.:-é日\n", min_size=0, max_size=30)
_ENTRY = re.compile(
    r"^\[(\d+)\] (?:Summary of (\d+) messages? \(SQ\.(\d+)@[0-9a-f]{8}\)|[^:]*): (\S*)"
)


@dataclass
class Original:
    tag: str
    message: NewMessage
    tokens: int
    call_ids: tuple[str, ...]
    answers: int | None  # index (in Model.originals) of the call this result pairs with


@dataclass
class SquashModel:
    n: int
    members: list[tuple[str, int]]
    summary: str
    active: bool = True


@dataclass
class Model:
    originals: list[Original] = field(default_factory=list)
    entries: list[tuple[str, int]] = field(default_factory=list)  # ("m", index) | ("s", n)
    squashes: dict[int, SquashModel] = field(default_factory=dict)
    revision: int = 0

    def record(self, batch: list[tuple[str, NewMessage]]) -> None:
        for tag, message in batch:
            if message.kind == "thinking":
                continue
            answers = None
            if message.tool_call_id is not None:
                answers = next(
                    (
                        i
                        for i in range(len(self.originals) - 1, -1, -1)
                        if message.tool_call_id in self.originals[i].call_ids
                    ),
                    None,
                )
            body = message_body(message.content, message.tool_calls)
            self.originals.append(
                Original(
                    tag,
                    message,
                    estimate_tokens(body),
                    tuple(c.id for c in message.tool_calls),
                    answers,
                )
            )
            self.entries.append(("m", len(self.originals) - 1))
        self.revision += 1

    def inside(self, entry: tuple[str, int]) -> set[int]:
        kind, key = entry
        if kind == "m":
            return {key}
        return set().union(*(self.inside(member) for member in self.squashes[key].members))

    def covered(self, entry: tuple[str, int]) -> int:
        return len(self.inside(entry))

    def tokens(self, entry: tuple[str, int]) -> int:
        kind, key = entry
        if kind == "m":
            return self.originals[key].tokens
        return estimate_tokens(self.squashes[key].summary)

    def closure(self, start: int, end: int) -> tuple[int, int]:
        """The smallest range of positions holding start..end and splitting no tool call."""
        where = {
            message: position
            for position, entry in enumerate(self.entries, start=1)
            for message in self.inside(entry)
        }
        pairs = [(o.answers, i) for i, o in enumerate(self.originals) if o.answers is not None]
        while True:
            grown = (start, end)
            for call, result in pairs:
                ends = (where[call], where[result])
                if any(start <= p <= end for p in ends):
                    grown = (min(grown[0], *ends), max(grown[1], *ends))
            if grown == (start, end):
                return start, end
            start, end = grown

    def squash(self, start: int, end: int, summary: str, n: int) -> None:
        members = self.entries[start - 1 : end]
        self.squashes[n] = SquashModel(n, members, summary)
        self.entries[start - 1 : end] = [("s", n)]
        self.revision += 1

    def restore(self, n: int) -> tuple[int, int]:
        position = self.entries.index(("s", n)) + 1
        members = self.squashes[n].members
        self.entries[position - 1 : position] = members
        self.squashes[n].active = False
        self.revision += 1
        return position, position + len(members) - 1

    def expected_view(self) -> list[tuple[int, str]]:
        """(position, identity) of each entry: the message tag, or SQ.n:covered."""
        return [
            (p, self.originals[key].tag if kind == "m" else f"SQ.{key}:{self.covered((kind, key))}")
            for p, (kind, key) in enumerate(self.entries, start=1)
        ]


def seen_view(text: str) -> list[tuple[int, str]]:
    seen = []
    for line in text.split("\n"):
        if not line.startswith("["):
            continue
        match = _ENTRY.match(line)
        assert match, line
        if match[3]:
            seen.append((int(match[1]), f"SQ.{match[3]}:{match[2]}"))
        else:
            seen.append((int(match[1]), match[4]))
    return seen


@st.composite
def batches(draw: st.DrawFn, first_tag: int, most: int = 4) -> list[tuple[str, NewMessage]]:
    """Up to `most` items: plain messages, a tool call with its results (in any order, maybe
    with a note between), a result on its own (maybe for an unknown id), thinking."""
    batch: list[tuple[str, NewMessage]] = []

    def add(role: str, **fields: object) -> None:
        tag = f"t{first_tag + len(batch)}"
        content = f"{tag} {draw(TEXT)}".rstrip(" ")
        batch.append((tag, NewMessage(role, content, **fields)))  # type: ignore[arg-type]

    for _ in range(draw(st.integers(1, most))):
        kind = draw(st.sampled_from(["user", "assistant", "pair", "pair", "result", "thinking"]))
        if kind == "pair":
            ids = draw(st.lists(st.sampled_from(CALL_IDS), min_size=1, max_size=2, unique=True))
            calls = tuple(ToolCall(i, "bash", f'{{"cmd": "{i}"}}') for i in ids)
            add("assistant", tool_calls=calls)
            for call_id in draw(st.permutations(ids)):
                if draw(st.booleans()):
                    add("user")
                add("tool", name="bash", tool_call_id=call_id)
        elif kind == "result":
            add("tool", name="bash", tool_call_id=draw(st.sampled_from((*CALL_IDS, "unknown"))))
        elif kind == "thinking":
            add("assistant", kind="thinking")
        else:
            add(kind)
    return batch


SHORT = st.integers(1, 99).map(lambda k: f"s{k}")
SUMMARIES = st.one_of(
    SHORT,
    SHORT,
    SHORT,
    st.text(alphabet="xyz ", min_size=1, max_size=200).map(lambda t: f"sum {t}".strip()),
)


class Scenario:
    def __init__(self, env: Env, data: st.DataObject) -> None:
        self.env = env
        self.data = data
        self.model = Model()
        self.tags = 0
        self.next_squash = 1

    async def setup(self) -> None:
        twin = (await sessions.start(self.env, "T")).session
        main = (await sessions.start(self.env, "T")).session
        self.twin, self.sid = twin.id, main.id

    async def state(self) -> tuple[int, str]:
        session = await sessions.get_session(self.env, self.sid)
        return session.revision, await viewing.view(self.env, ViewOptions(), self.sid)

    async def check(self) -> str:
        revision, view = await self.state()
        assert revision == self.model.revision
        assert seen_view(view) == self.model.expected_view()
        session = await sessions.get_session(self.env, self.sid)
        assert session.live_count == len(self.model.entries)
        return view

    async def record(self, most: int = 3) -> None:
        batch = self.data.draw(batches(self.tags + 1, most), label="batch")
        self.tags += len(batch)
        messages = [message for _, message in batch]
        numbered = sum(message.kind != "thinking" for message in messages)
        recorded = await recording.record(self.env, messages, self.sid)
        await recording.record(self.env, messages, self.twin)
        start = len(self.model.entries) + 1
        assert recorded.positions == tuple(range(start, start + numbered))
        self.model.record(batch)

    async def compress_range(self) -> None:
        count = len(self.model.entries)
        start = self.data.draw(st.integers(1, count), label="from")
        end = self.data.draw(st.integers(start, min(count, start + 5)), label="to")
        await self._squash(start, end, last=False)

    async def compress_last(self) -> None:
        count = len(self.model.entries)
        size = self.data.draw(st.integers(1, min(count, 6)), label="count")
        await self._squash(count - size + 1, count, last=True)

    async def _squash(self, start: int, end: int, last: bool) -> None:
        summary = self.data.draw(SUMMARIES, label="summary")
        window = self.model.entries[start - 1 : end]
        smallest = self.model.closure(start, end)
        tokens = sum(self.model.tokens(entry) for entry in window)

        def call() -> Awaitable[Squashed]:
            if last:
                return frs_squashes.compress_last(self.env, end - start + 1, summary, self.sid)
            return frs_squashes.compress_range(self.env, start, end, summary, session_id=self.sid)

        if smallest == (start, end) and tokens > estimate_tokens(summary):
            done = await call()
            event("squashed" + (" a summary" if any(k == "s" for k, _ in window) else ""))
            n = self.next_squash
            self.next_squash += 1
            assert (done.squash.n, done.position, done.squash.count) == (n, start, len(window))
            assert done.squash.covered == sum(self.model.covered(e) for e in window)
            self.model.squash(start, end, summary, n)
            return
        before = await self.state()
        if smallest == (start, end):
            event("refused: summary not smaller")
            with pytest.raises(SummaryNotSmaller) as not_smaller:
                await call()
            assert (not_smaller.value.before, not_smaller.value.after) == (
                tokens,
                estimate_tokens(summary),
            )
        elif last:
            event("refused: count splits a tool call")
            with pytest.raises(InvalidRequest, match=r"^count=") as by_count:
                await call()
            hint = f"smallest count that keeps them together is {end - smallest[0] + 1} "
            assert hint in str(by_count.value)
        else:
            event("refused: splits a tool call")
            with pytest.raises(SplitsToolCall) as splits:
                await call()
            assert splits.value.suggested == smallest
        assert await self.state() == before
        if smallest != (start, end) and self.data.draw(st.booleans(), label="retry"):
            await self._squash(*smallest, last=last)

    async def restore(self) -> None:
        n = self.data.draw(st.sampled_from(sorted(self.model.squashes)), label="restore")
        squash = self.model.squashes[n]
        if ("s", n) in self.model.entries:
            event("restored")
            restored = await frs_squashes.restore(self.env, f"SQ.{n}", self.sid)
            assert (restored.first, restored.last) == self.model.restore(n)
            return
        before = await self.state()
        refusal = CoveredByLaterSquash if squash.active else AlreadyRestored
        event(f"refused: {refusal.__name__}")
        with pytest.raises(refusal):
            await frs_squashes.restore(self.env, f"SQ.{n}", self.sid)
        assert await self.state() == before

    async def originals_stay_reachable(self) -> None:
        for n, squash in self.model.squashes.items():
            page = await pages.get_alias(
                self.env, f"SQ.{n}", max_chars=1_000_000, session_id=self.sid
            )
            assert page.end == page.size
            for kind, key in squash.members:
                text = (
                    self.model.originals[key].message.content
                    if kind == "m"
                    else self.model.squashes[key].summary
                )
                for line in text.split("\n"):
                    assert line in page.text

    async def restore_everything(self) -> None:
        for n in sorted(self.model.squashes, reverse=True):
            if self.model.squashes[n].active:
                restored = await frs_squashes.restore(self.env, f"SQ.{n}", self.sid)
                assert (restored.first, restored.last) == self.model.restore(n)
        await self.check()
        mine = await viewing.view(self.env, ViewOptions(show_thinking=True), self.sid)
        twin = await viewing.view(self.env, ViewOptions(show_thinking=True), self.twin)
        assert without_revision(mine) == without_revision(twin)


def without_revision(view: str) -> str:
    return re.sub(r" · revision \d+ · ", " · revision N · ", view)


async def run_scenario(path: Path, data: st.DataObject) -> None:
    async with open_env(path) as env:
        scenario = Scenario(env, data)
        await scenario.setup()
        await scenario.record(most=5)
        await scenario.check()
        for _ in range(data.draw(st.integers(1, 12), label="steps")):
            choices = ["record", "compress_range", "compress_range", "compress_last"]
            if scenario.model.squashes:
                choices += ["restore", "restore"]
            if not scenario.model.entries:
                choices = ["record"]
            await getattr(scenario, data.draw(st.sampled_from(choices), label="op"))()
            await scenario.check()
        await scenario.originals_stay_reachable()
        await scenario.restore_everything()


class TestThreadProperties:
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def test_any_sequence_keeps_the_thread_consistent_and_restorable(
        self, data: st.DataObject
    ) -> None:
        # A RAM disk where there is one: synchronous=FULL syncs every commit, and the property
        # is about the rules, not the disk.
        shm = Path("/dev/shm")
        with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as folder:
            asyncio.run(run_scenario(Path(folder) / "frs.db", data))

    def test_the_model_finds_the_smallest_range_that_keeps_pairs_together(self) -> None:
        model = Model()
        call = NewMessage("assistant", "a", tool_calls=(ToolCall("c1", "bash", "{}"),))
        result = NewMessage("tool", "r", tool_call_id="c1")
        model.record([("t1", NewMessage("user", "u")), ("t2", call), ("t3", result)])
        assert model.closure(3, 3) == (2, 3)
        assert model.closure(1, 2) == (1, 3)
        assert model.closure(1, 1) == (1, 1)
