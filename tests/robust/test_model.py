"""Model-based testing: the service against a plain in-memory reference model of a thread.

A hypothesis state machine records, squashes (last N, a range by position or by number),
restores, and opens and closes focus layers, on a real SQLite file, and after every step compares
the rendered thread, in both numbering modes, with what the model says it must be: the same
entries, labels, texts and focus headings, the same counts and revision. The model is a list of
live entries, each an original message or a summary holding the entries it replaced, and a stack
of open layers (each holds the entries from the number it started at); refusals are predicted
too, and must change nothing.
"""

from __future__ import annotations

import re
import string
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from frs import (
    Env,
    FrsError,
    Limits,
    NewMessage,
    SessionId,
    ToolCall,
    ViewOptions,
    focus,
    recording,
    sessions,
    viewing,
)
from frs import squashes as frs_squashes
from frs.ports import Store
from storage import SqliteStore, open_database
from storage.postgres import PgStore, open_postgres
from tests.pg import Cluster

T = TypeVar("T")
_SHA8 = re.compile(r"@[0-9a-f]{8}\)")
_FOOTER = re.compile(r"(\d+) messages? in (\d+) entr(?:y|ies)")
_REVISION = re.compile(r"revision (\d+)")
_LABEL = {"user": "User", "assistant": "Assistant", "tool": "Tool bash"}


@dataclass
class Original:
    number: int
    role: str
    content: str
    call: str | None = None  # the id of the tool call an assistant message makes
    answers: int | None = None  # a tool result: the number of the message whose call it answers

    @property
    def first(self) -> int:
        return self.number

    @property
    def last(self) -> int:
        return self.number

    covered = 1
    tokens = 2  # at least: contents are 8 or more ASCII characters (estimate: bytes / 4)

    def lines(self, label: str) -> list[str]:
        head = [f"[{label}] {_LABEL[self.role]}: {self.content}"]
        if self.call is not None:
            head.append(f"    [tool_use:bash, cmd:run {self.number}]")
        return head


@dataclass
class Summary:
    n: int
    number: int
    text: str
    members: list[Original | Summary]

    @property
    def first(self) -> int:
        return self.members[0].first

    @property
    def last(self) -> int:
        return self.members[-1].last

    @property
    def covered(self) -> int:
        return sum(member.covered for member in self.members)

    tokens = 1  # summaries are "S<k>": 4 ASCII characters at most

    def lines(self, label: str) -> list[str]:
        noun = "message" if self.covered == 1 else "messages"
        return [f"[{label}] Summary of {self.covered} {noun} (SQ.{self.n}@…): {self.text}"]


Entry = Original | Summary


@dataclass
class Thread:
    """The reference: what the thread must look like, computed the simplest way."""

    numbering: str
    entries: list[Entry] = field(default_factory=list)
    originals: list[Original] = field(default_factory=list)  # every one ever recorded
    squashes: dict[int, Summary] = field(default_factory=dict)
    restored: set[int] = field(default_factory=set)
    layers: list[tuple[str, int]] = field(default_factory=list)  # open: (goal, first number)
    next_number: int = 1
    revision: int = 0

    def label(self, entry: Entry, position: int, mode: str) -> str:
        if mode == "position":
            return str(position)
        return str(entry.first) if entry.first == entry.last else f"{entry.first}–{entry.last}"

    def in_layer(self, start: int) -> list[Entry]:
        return [entry for entry in self.entries if entry.first >= start]

    def lines(self, mode: str) -> list[str]:
        """The view between its title and its footer: each open layer's heading above its first
        entry (after the last entry while it has none), then the entries."""
        headings: dict[int, list[str]] = {}
        trailing: list[str] = []
        for depth, (goal, start) in enumerate(self.layers, start=1):
            heading = f"▸ focus {depth}: {goal}"
            inside = self.in_layer(start)
            if inside:
                headings.setdefault(self.entries.index(inside[0]), []).append(heading)
            else:
                trailing.append(heading)
        gaps = self.gaps() if mode == "absolute" else {}
        lines: list[str] = []
        for position, entry in enumerate(self.entries, start=1):
            lines.extend(gaps.get(position - 1, ()))
            lines.extend(headings.get(position - 1, ()))
            lines.extend(entry.lines(self.label(entry, position, mode)))
        return lines + trailing

    def gaps(self) -> dict[int, list[str]]:
        """Absolute numbering: a restored squash's summary number, which no entry has any more,
        named above the first entry past it, unless an entry before it spans the number or it
        lies outside the entries' numbers."""
        notes: dict[int, list[str]] = {}
        if not self.entries:
            return notes
        low, high = self.entries[0].first, self.entries[-1].first
        numbers = sorted(
            (self.squashes[n].number, n)
            for n in self.restored
            if low <= self.squashes[n].number <= high
        )
        reached, at = low - 1, 0
        for number, n in numbers:
            while at < len(self.entries) and self.entries[at].first < number:
                reached = max(reached, self.entries[at].last)
                at += 1
            if at < len(self.entries) and number > reached:
                notes.setdefault(at, []).append(f"[{number}] (summary SQ.{n}, restored)")
        return notes

    def window_by_positions(self, start: int, end: int) -> list[Entry] | str:
        if not 1 <= start <= end <= len(self.entries):
            return "positions outside the thread"
        return self.entries[start - 1 : end]

    def window_by_numbers(self, start: int, end: int) -> list[Entry] | str:
        if not 1 <= start <= end <= self.next_number - 1:
            return "numbers outside the thread"
        covering = [e for e in self.entries if e.first <= start]
        if covering and covering[-1].first < start <= covering[-1].last:
            return "starts inside a summary"
        window = [e for e in self.entries if start <= e.first <= end]
        if not window:
            return "no entry in the range"
        if window[-1].last > end:
            return "ends inside a summary"
        return window

    def refusal(self, window: list[Entry], pairs: bool = True) -> str | None:
        """Why squashing `window` must be refused, or None. Closing a layer (`pairs=False`)
        takes a summary of up to 64 estimated tokens whatever the layer holds."""
        lo, hi = window[0].first, window[-1].last
        if any(lo < start <= hi for _, start in self.layers):
            return "crosses the start of a focus layer"
        for result in self.originals if pairs else ():
            if result.answers is not None and (lo <= result.number <= hi) != (
                lo <= result.answers <= hi
            ):
                return "separates a tool call from its result"
        closing_allows = not pairs and Summary.tokens <= Limits().layer_summary_tokens
        if sum(entry.tokens for entry in window) <= Summary.tokens and not closing_allows:
            return "the summary is not smaller"
        return None

    def squash(self, window: list[Entry], n: int, text: str) -> None:
        at = self.entries.index(window[0])
        summary = Summary(n, self.next_number, text, list(window))
        self.entries[at : at + len(window)] = [summary]
        self.squashes[n] = summary
        self.next_number += 1
        self.revision += 1

    def restore_refusal(self, n: int) -> str | None:
        if n not in self.squashes:
            return "no such squash"
        if n in self.restored:
            return "already restored"
        if self.squashes[n] not in self.entries:
            return "inside a later squash"
        return None


class ThreadMachine(RuleBasedStateMachine):
    """Drives the `frs` use cases and the `Thread` model side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.stack = ExitStack()
        folder = Path(self.stack.enter_context(tempfile.TemporaryDirectory()))
        self.portal: BlockingPortal = self.stack.enter_context(start_blocking_portal())
        self.service = Env(self.open_store(folder))
        self.thread = Thread("position")
        self.session = SessionId("")
        self.pending_calls: list[Original] = []

    def open_store(self, folder: Path) -> Store:
        """A fresh SQLite file in `folder`, open until teardown."""
        db = self.stack.enter_context(
            self.portal.wrap_async_context_manager(open_database(folder / "model.db"))
        )
        return SqliteStore(db)

    def teardown(self) -> None:
        self.stack.close()

    def run(self, make: Callable[[], Awaitable[T]]) -> T:
        async def call() -> T:
            return await make()

        return self.portal.call(call)

    def refused(self, make: Callable[[], Awaitable[Any]], why: str) -> None:
        """The service must refuse with a readable domain error, and change nothing."""
        event(f"refused: {why}")
        with pytest.raises(FrsError) as refusal:
            self.run(make)
        assert str(refusal.value), f"a refusal without a message ({why})"

    @initialize(numbering=st.sampled_from(["position", "absolute"]))
    def start(self, numbering: str) -> None:
        started = self.run(
            lambda: sessions.start(self.service, "model", numbering=numbering)  # type: ignore[arg-type]
        )
        self.session = started.session.id
        self.thread = Thread(numbering)

    @rule(
        shapes=st.lists(
            st.sampled_from(["user", "assistant", "call", "result"]), min_size=1, max_size=3
        ),
        words=st.lists(
            st.text(alphabet=string.ascii_letters, min_size=6, max_size=20), min_size=3, max_size=3
        ),
    )
    def record(self, shapes: list[str], words: list[str]) -> None:
        batch: list[NewMessage] = []
        made: list[Original] = []
        number = self.thread.next_number
        for shape, word in zip(shapes, words, strict=False):
            content = f"m{number} {word}"
            if shape == "call":
                original = Original(number, "assistant", content, call=f"c{number}")
                arguments = f'{{"cmd": "run {number}"}}'
                batch.append(
                    NewMessage(
                        "assistant",
                        content,
                        tool_calls=(ToolCall(f"c{number}", "bash", arguments),),
                    )
                )
                self.pending_calls.append(original)
            elif shape == "result":
                answered = self.pending_calls.pop(0) if self.pending_calls else None
                original = Original(
                    number, "tool", content, answers=answered.number if answered else None
                )
                batch.append(
                    NewMessage(
                        "tool",
                        content,
                        name="bash",
                        tool_call_id=answered.call if answered else None,
                    )
                )
            else:
                original = Original(number, shape, content)
                batch.append(NewMessage(shape, content))  # type: ignore[arg-type]
            made.append(original)
            number += 1
        done = self.run(lambda: recording.record(self.service, batch, self.session))
        assert list(done.numbers) == [m.number for m in made]
        self.thread.entries.extend(made)
        self.thread.originals.extend(made)
        self.thread.next_number = number
        self.thread.revision += 1
        assert done.revision == self.thread.revision

    def _squash(
        self, window: list[Entry] | str, make: Callable[[int, str], Awaitable[Any]]
    ) -> None:
        n = len(self.thread.squashes) + 1
        text = f"S{n}"
        assert len(text) <= 4, "the model's token rule needs summaries of 4 characters at most"
        why = window if isinstance(window, str) else self.thread.refusal(window)
        if why is not None:
            self.refused(lambda: make(n, text), why)
            return
        assert not isinstance(window, str)
        done = self.run(lambda: make(n, text))
        event("squashed")
        assert done.squash.n == n
        self.thread.squash(window, n, text)
        assert done.revision == self.thread.revision

    @precondition(lambda self: self.thread.entries)
    @rule(data=st.data())
    def compress_last(self, data: st.DataObject) -> None:
        entries = self.thread.entries
        # Mostly a count inside the thread, sometimes one outside it.
        count = data.draw(
            st.integers(1, max(1, len(entries))) | st.sampled_from([0, len(entries) + 1]),
            label="count",
        )
        window: list[Entry] | str = (
            entries[-count:] if 1 <= count <= len(entries) else "count outside the thread"
        )
        layers = self.thread.layers
        if (
            layers
            and not isinstance(window, str)
            and count > len(self.thread.in_layer(layers[-1][1]))
        ):
            window = "reaches out of the innermost focus layer"
        self._squash(
            window,
            lambda _n, text: frs_squashes.compress_last(self.service, count, text, self.session),
        )

    def _bounds(self, data: st.DataObject, mode: str) -> tuple[int, int]:
        """Mostly whole entries of the thread; sometimes any numbers around it."""
        entries = self.thread.entries
        aligned = data.draw(st.booleans(), label="aligned")
        if entries and aligned:
            i = data.draw(st.integers(0, len(entries) - 1), label="first entry")
            j = data.draw(st.integers(i, min(len(entries) - 1, i + 5)), label="last entry")
            if mode == "position":
                return i + 1, j + 1
            return entries[i].first, entries[j].last
        top = len(entries) if mode == "position" else self.thread.next_number - 1
        start = data.draw(st.integers(0, top + 1), label="start")
        end = data.draw(st.integers(start - 1, min(top + 1, start + 6)), label="end")
        return start, end

    @precondition(lambda self: self.thread.entries)
    @rule(data=st.data(), mode=st.sampled_from([None, "position", "absolute"]))
    def compress_range(self, data: st.DataObject, mode: str | None) -> None:
        effective = mode or self.thread.numbering
        start, end = self._bounds(data, effective)
        window = (
            self.thread.window_by_positions(start, end)
            if effective == "position"
            else self.thread.window_by_numbers(start, end)
        )
        self._squash(
            window,
            lambda _n, text: frs_squashes.compress_range(
                self.service,
                start,
                end,
                text,
                mode,  # type: ignore[arg-type]
                self.session,
            ),
        )

    @precondition(lambda self: self.thread.squashes)
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        live = [n for n, summary in self.thread.squashes.items() if summary in self.thread.entries]
        pick_live = data.draw(st.booleans(), label="a live one")
        n = data.draw(
            st.sampled_from(live)
            if live and pick_live
            else st.integers(1, len(self.thread.squashes) + 1),
            label="n",
        )
        why = self.thread.restore_refusal(n)
        if why is not None:
            self.refused(lambda: frs_squashes.restore(self.service, f"SQ.{n}", self.session), why)
            return
        done = self.run(lambda: frs_squashes.restore(self.service, f"SQ.{n}", self.session))
        event("restored")
        summary = self.thread.squashes[n]
        at = self.thread.entries.index(summary)
        self.thread.entries[at : at + 1] = summary.members
        self.thread.restored.add(n)
        self.thread.revision += 1
        assert (done.first, done.last) == (at + 1, at + len(summary.members))
        assert done.revision == self.thread.revision

    @rule()
    def open_focus(self) -> None:
        goal = f"goal {len(self.thread.layers) + 1} at revision {self.thread.revision}"
        if len(self.thread.layers) >= Limits().max_focus_depth:
            self.refused(lambda: focus.open_layer(self.service, goal, self.session), "too deep")
            return
        revision = self.run(lambda: focus.open_layer(self.service, goal, self.session)).revision
        event("focus opened")
        self.thread.layers.append((goal, self.thread.next_number))
        self.thread.revision += 1
        assert revision == self.thread.revision

    @rule()
    def close_focus(self) -> None:
        n = len(self.thread.squashes) + 1
        text = f"S{n}"
        if not self.thread.layers:
            self.refused(
                lambda: focus.close_layer(self.service, text, self.session), "no layer open"
            )
            return
        window = self.thread.in_layer(self.thread.layers[-1][1])
        why = self.thread.refusal(window, pairs=False) if window else None
        if why is not None:
            self.refused(lambda: focus.close_layer(self.service, text, self.session), why)
            return
        closed = self.run(lambda: focus.close_layer(self.service, text, self.session))
        done, revision = closed.squashed, closed.revision
        self.thread.layers.pop()
        if window:
            event("focus closed into a squash")
            assert done is not None
            assert done.squash.n == n
            self.thread.squash(window, n, text)
        else:
            event("empty focus closed")
            assert done is None
            self.thread.revision += 1
        assert revision == self.thread.revision

    @invariant()
    def views_match_the_model(self) -> None:
        if not self.session:
            return
        for mode in ("position", "absolute"):
            view = self.run(
                lambda mode=mode: viewing.view(
                    self.service,  # type: ignore[misc]
                    ViewOptions(numbering=mode),
                    self.session,
                )
            )
            lines = view.split("\n")
            footer = lines[-1]
            body = [_SHA8.sub("@…)", line) for line in lines[1:-1]]
            if self.thread.entries:
                assert body == self.thread.lines(mode), f"{mode} view differs:\n{view}"
            else:
                assert not any(line.startswith(("[", "    ")) for line in body), view
            counts = _FOOTER.search(footer)
            revision = _REVISION.search(footer)
            assert counts, footer
            assert revision, footer
            assert int(counts.group(1)) == len(self.thread.originals), footer
            assert int(counts.group(2)) == len(self.thread.entries), footer
            assert int(revision.group(1)) == self.thread.revision, footer


ThreadMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestThreadModel(ThreadMachine.TestCase):  # type: ignore[misc,valid-type]
    """Hypothesis runs the machine: 60 programs of up to 40 steps, both numbering modes."""


class PostgresThreadMachine(ThreadMachine):
    """The same machine on PostgreSQL: each program starts its own session in one database
    (`dsn`, set by the test below), through a pool of its own."""

    dsn = ""

    def open_store(self, folder: Path) -> Store:
        db = self.stack.enter_context(
            self.portal.wrap_async_context_manager(open_postgres(self.dsn, size=2))
        )
        return PgStore(db)


def test_the_model_holds_on_postgres(pg_cluster: Cluster) -> None:
    PostgresThreadMachine.dsn = pg_cluster.create_database()
    run_state_machine_as_test(PostgresThreadMachine, settings=ThreadMachine.TestCase.settings)
