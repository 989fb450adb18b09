"""Budgeted views: `frs_view_thread(budget_tokens=N)` through an in-process MCP client.

The view never exceeds N estimated tokens (`frs.text.estimate_tokens`), keeps the newest entries
whole, shrinks older ones to cards, one-line cards and group lines, pins the task above what it
leaves out, and names the positions left out with the call that shows them, on its last line.
An append changes only its tail, so a prompt cache keeps most of it. Its cost does not grow with
the part it leaves out: on a 100,000-message thread it reads only entries near the end, which
the SQLite virtual machine's own instruction counter confirms.

The 100,000-message thread is stored once per module with the Python API (`storage` +
`frs.recording.record`, 1,000 messages per transaction), then served over MCP.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from frs import Env, NewMessage, Role, recording, sessions
from frs.text import estimate_tokens
from server import Settings, build_server
from server.mcp.deps import open_deps
from storage import SqliteStore, open_database
from tests.calls import call_text, refused, text_of
from tests.conftest import Connect
from tests.steps import count_steps

BIG = 100_000
SMALL = 300
ROLES: tuple[Role, ...] = ("user", "assistant", "tool")
NOTE = re.compile(
    r"^· Budget ~(?P<budget>[\d,]+) tokens: (?P<whole>[\d,]+) whole"
    r"(?:, (?P<cards>[\d,]+) cards?)?(?:, (?P<lines>[\d,]+) one-line)?"
    r"(?:, (?P<grouped>[\d,]+) grouped)?"
    r"(?:; (?P<left>\d+)(?:–(?P<left_to>\d+)|(?:, \d+)+(?:, … (?P<last>\d+) "
    r"\([\d,]+ entries\))?)? out"
    r"(?:: (?P<call>frs_view_thread\((?P<args>[^)]*)\)))?)? · "
)
MARKER = "… entries left out here (the last line says which)"
LANE = r"(?:system|user|assistant|tool|summary)(?: ×\d+)?"
GROUP_LINE = re.compile(rf"^\[(\d+)(?:–(\d+))?\] ({LANE}(?:, {LANE})*)(?:;| ·|$)")
ALIAS_END = re.compile(r" · M\.(\d+)$")
ENTRY_START = re.compile(r"^\[\d+\] ")
CARD_HEAD = re.compile(r"^\[\d+\] [A-Za-z ]+: [\d,]+ chars · M\.(\d+)@[0-9a-f]{8}$")


def content(number: int) -> str:
    """Message `number`: about 450 characters on 10 lines, longer than a budget card's 300."""
    details = (f"detail {j} of message {number}: {'abcdefghij' * 3}" for j in range(9))
    return f"message {number}\n" + "\n".join(details)


def message(number: int) -> NewMessage:
    role = ROLES[(number - 1) % len(ROLES)]
    return NewMessage(role=role, content=content(number), name="bash" if role == "tool" else None)


async def store_thread(path: Path, count: int) -> None:
    """`count` messages in one new session, 1,000 per transaction, with the Python API."""
    async with open_database(path) as db:
        env = Env(SqliteStore(db))
        session = (await sessions.start(env, "Long run")).session
        for start in range(1, count + 1, 1_000):
            batch = [message(n) for n in range(start, min(count, start + 999) + 1)]
            await recording.record(env, batch, session.id)


@pytest.fixture(scope="module")
def big_thread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "frs.db"
    anyio.run(store_thread, path, BIG)
    return path


@pytest.fixture(scope="module")
def thousand_thread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("thousand") / "frs.db"
    anyio.run(store_thread, path, 1_000)
    return path


@dataclass(frozen=True)
class Thread:
    path: Path
    count: int
    stored: bool  # already in the file; else recorded over MCP when opened


@pytest.fixture(params=[SMALL, BIG], ids=["300-messages", "100k-messages"])
def thread(request: pytest.FixtureRequest, db_path: Path) -> Thread:
    if request.param == BIG:
        return Thread(request.getfixturevalue("big_thread"), BIG, stored=True)
    return Thread(db_path, SMALL, stored=False)


@asynccontextmanager
async def opened(connect: Connect, thread: Thread) -> AsyncIterator[Client]:
    async with connect(database=str(thread.path)) as client:
        if not thread.stored:
            await call_text(client, "frs_session", action="start", title="Long run")
            for start in range(1, thread.count + 1, 100):
                batch = [as_argument(message(n)) for n in range(start, start + 100)]
                await call_text(client, "frs_record", messages=batch)
        yield client


def as_argument(new: NewMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": new.role, "content": new.content}
    if new.name:
        out["name"] = new.name
    return out


@dataclass(frozen=True)
class Shown:
    position: int
    tier: str  # "whole", "card" or "line"
    lines: list[str]


def body_of(view: str) -> list[str]:
    """The lines after the title, but the marker; when the view's first group line comes
    before any entry of its own, from that line (a task pinned above group lines is a copy).
    The head (the oldest entries above the marker) is part of the body (issue 22)."""
    lines = view.split("\n")[:-1]
    if MARKER in lines:
        return [line for line in lines[1:] if line != MARKER]
    first_group = next((i for i, line in enumerate(lines) if GROUP_LINE.match(line)), None)
    return lines[first_group:] if first_group is not None else lines[1:]


def group_spans(view: str) -> list[tuple[int, int]]:
    """The (first, last) positions of every group line."""
    found = (GROUP_LINE.match(line) for line in body_of(view))
    return [(int(m[1]), int(m[2] or m[1])) for m in found if m]


def shown_entries(view: str) -> list[Shown]:
    """Every entry the view shows on its own (not in a group line), with its tier."""
    groups: list[list[str]] = []
    for line in body_of(view):
        if line.startswith("[") and not GROUP_LINE.match(line):
            groups.append([line])
        elif line.startswith("    ") and groups:
            groups[-1].append(line)
    out = []
    for lines in groups:
        position = int(lines[0][1 : lines[0].index("]")])
        if len(lines) == 1 and ALIAS_END.search(lines[0]):
            tier = "line"
        elif CARD_HEAD.match(lines[0]):
            tier = "card"
        else:
            tier = "whole"
        out.append(Shown(position, tier, lines))
    return out


def covered(view: str) -> list[int]:
    """Every position the view shows, in group lines or on its own, in order."""
    spans = [p for first, last in group_spans(view) for p in range(first, last + 1)]
    return sorted(spans + [e.position for e in shown_entries(view)])


def split_head(view: str) -> tuple[list[int], list[int]]:
    """The positions of the oldest entries kept on top (the one-line cards above the marker)
    and of the rest: a budgeted view leaves out the span after its head (issue 22)."""
    lines = view.split("\n")[:-1]
    above = lines[: lines.index(MARKER)] if MARKER in lines else []
    head = [int(line[1 : line.index("]")]) for line in above if ENTRY_START.match(line)]
    return head, [p for p in covered(view) if p not in head]


def shown_count(view: str) -> int:
    """Entries the view stands for: each group line's count, plus the entries of their own."""
    found = (GROUP_LINE.match(line) for line in body_of(view))
    held = (lane for m in found if m for lane in m[3].split(", "))
    grouped = sum(int(lane.split(" ×")[1]) if " ×" in lane else 1 for lane in held)
    return grouped + len(shown_entries(view))


def budget_note(view: str) -> re.Match[str]:
    found = NOTE.match(view.split("\n")[-1])
    assert found is not None, view.split("\n")[-1]
    return found


def is_whole(entry: Shown) -> bool:
    body = content(entry.position).split("\n")
    return entry.lines[0].endswith(": " + body[0]) and entry.lines[1:] == [
        "    " + line for line in body[1:]
    ]


class TestBudget:
    @pytest.mark.parametrize("budget", [600, 1_500, 4_000, 12_000])
    async def test_the_view_never_exceeds_the_budget_by_the_project_estimator(
        self, connect: Connect, thread: Thread, budget: int
    ) -> None:
        async with opened(connect, thread) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=budget)
        assert estimate_tokens(view) <= budget
        # Regions start on fixed blocks, so between two moves part of the budget stays unused:
        # that slack is what lets an append change only the view's tail. Still, it is used.
        assert estimate_tokens(view) > budget // 3, "the budget is used, not wasted"

    async def test_the_oldest_stay_cards_the_newest_whole_and_between_them_shrink(
        self, connect: Connect, thread: Thread
    ) -> None:
        async with opened(connect, thread) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=4_000)
        entries = shown_entries(view)
        head, _ = split_head(view)
        # Above what is left out: the oldest entries as cards, then one-line cards (issue 22).
        above = "".join(entry.tier[0] for entry in entries if entry.position in head)
        assert re.fullmatch(r"c+l*", above), above
        # Below: group lines, one-line cards, cards, and the newest whole or as cards.
        below = "".join(entry.tier[0] for entry in entries if entry.position not in head)
        tiers = "g" * len(group_spans(view)) + below
        assert re.fullmatch(r"g*l*c*[cw]+", tiers), tiers
        assert entries[-1].position == thread.count
        assert all(is_whole(e) for e in entries if e.tier == "whole")
        for entry in entries:
            if entry.tier != "whole":
                alias = re.search(r"M\.(\d+)\b", entry.lines[0])
                assert alias is not None
                assert int(alias.group(1)) == entry.position
        cards = [e for e in entries if e.tier == "card"]
        assert all(any("… " in line for line in e.lines[1:]) for e in cards)

    async def test_the_last_line_says_what_was_shrunk_and_what_was_left_out(
        self, connect: Connect, thread: Thread
    ) -> None:
        async with opened(connect, thread) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=4_000)
        note = budget_note(view)
        entries = shown_entries(view)
        tiers = [entry.tier for entry in entries]
        shown = covered(view)
        assert view.split("\n")[0] == 'Thread "Long run"'
        assert note["budget"] == "4,000"
        assert int(note["whole"]) == tiers.count("whole")
        assert int(note["cards"] or 0) == tiers.count("card")
        assert int(note["lines"] or 0) == tiers.count("line")
        assert int((note["grouped"] or "0").replace(",", "")) == len(shown) - len(entries)
        left = int(note["left_to"] or note["left"])
        head, rest = split_head(view)
        assert head == list(range(1, len(head) + 1)), "the oldest entries stay on top"
        assert re.fullmatch(r"c+l*", "".join(e.tier[0] for e in entries if e.position in head))
        assert int(note["left"]) == len(head) + 1
        assert note["call"] == f"frs_view_thread(from={len(head) + 1}, to={left})"
        assert rest == list(range(left + 1, thread.count + 1)), "contiguous, to the newest"
        footer = view.split("\n")[-1]
        assert f" · {thread.count:,} entries · revision " in footer
        assert re.search(r" · revision \d+ · ~[\d.]+[kM]? tokens$", footer)

    async def test_the_named_call_shows_the_positions_left_out(
        self, connect: Connect, db_path: Path
    ) -> None:
        thread = Thread(db_path, SMALL, stored=False)
        async with opened(connect, thread) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=1_000)
            left = int(budget_note(view)["left_to"])
            shown = await call_text(client, "frs_view_thread", **{"from": 1, "to": left})
        entries = shown_entries(shown)
        assert [e.position for e in entries] == list(range(1, left + 1))
        assert all(is_whole(e) for e in entries)

    async def test_on_100000_messages_only_entries_near_the_end_are_shown(
        self, connect: Connect, big_thread: Path
    ) -> None:
        async with connect(database=str(big_thread)) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=4_000)
            before_the_cut = await call_text(
                client, "frs_view_thread", **{"from": 99_000, "to": 99_001}
            )
        left = int(budget_note(view)["left_to"])
        head, shown = split_head(view)
        assert BIG - left == len(shown) < 2_000
        assert shown[0] == left + 1
        assert len(head) < 100
        assert [e.position for e in shown_entries(before_the_cut)] == [99_000, 99_001]

    async def test_the_cost_does_not_grow_with_the_part_left_out(
        self, big_thread: Path, thousand_thread: Path
    ) -> None:
        """SQLite's progress handler counts virtual-machine steps on the server's reader: a view
        of 100,000 messages costs about what a view of 1,000 costs, far from a full read."""

        async def steps(path: Path, **arguments: Any) -> tuple[int, str]:
            settings = Settings(database=str(path))
            async with open_deps(settings) as deps:
                counter = await count_steps(deps.db)
                async with Client(build_server(settings, shared=deps)) as client:
                    await call_text(client, "frs_session", action="info")  # warm up, not counted
                    counter.reset()
                    view = await call_text(client, "frs_view_thread", **arguments)
                return counter.counted, view

        small, small_view = await steps(thousand_thread, budget_tokens=4_000)
        big, big_view = await steps(big_thread, budget_tokens=4_000)
        full, _ = await steps(thousand_thread, **{"from": 1})  # reads all 1,000: the scale
        assert len(covered(small_view)) > 20
        assert len(covered(big_view)) > 20
        assert 0 < small < full
        assert big < 3 * small, (big, small)
        assert big < full, "100,000 messages viewed in budget cost less than 1,000 read whole"


class TestCacheStability:
    """An append changes a budgeted view only near its end (DESIGN §5): the prefix a host's
    prompt cache holds survives."""

    @staticmethod
    def kept(before: str, after: str) -> float:
        same = 0
        for a, b in zip(before, after, strict=False):
            if a != b:
                break
            same += 1
        return same / len(before)

    # Here every message is 450 characters, so the newest entry's card is a tenth of a
    # 1,000-token view; `make bench` measures the targets on corpus text (BENCHMARKS.md).
    @pytest.mark.parametrize(("budget", "share"), [(1_000, 0.8), (4_000, 0.85), (None, 0.9)])
    async def test_most_appends_keep_most_of_the_view(
        self, connect: Connect, db_path: Path, budget: int | None, share: float
    ) -> None:
        arguments = {"budget_tokens": budget} if budget else {}
        kept: list[float] = []
        async with opened(connect, Thread(db_path, SMALL, stored=False)) as client:
            if budget is None:  # the default view: over the cap only at a few thousand
                batch = [as_argument(message(n)) for n in range(301, 1_001)]
                await call_text(client, "frs_record", messages=batch)
            before = await call_text(client, "frs_view_thread", **arguments)
            for n in range(2_000, 2_024):
                await call_text(client, "frs_record", messages=[as_argument(message(n))])
                after = await call_text(client, "frs_view_thread", **arguments)
                kept.append(self.kept(before, after))
                before = after
        kept.sort()
        assert kept[len(kept) // 2] >= share, kept

    async def test_the_title_task_and_marker_survive_appends(
        self, connect: Connect, db_path: Path
    ) -> None:
        async with opened(connect, Thread(db_path, SMALL, stored=False)) as client:
            views = []
            for n in range(2_000, 2_012):
                views.append(await call_text(client, "frs_view_thread", budget_tokens=4_000))
                await call_text(client, "frs_record", messages=[as_argument(message(n))])
        heads = {view[: view.index(MARKER)] for view in views}
        assert len(heads) == 1
        (head,) = heads
        assert head.startswith('Thread "Long run"\n[1] User: ')

    async def test_the_tool_description_names_the_window_that_keeps_the_cache(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        text = tools["frs_view_thread"].description or ""
        assert "estimated tokens" in text
        assert "from=" in text
        assert "cache" in text


class TestPinned:
    async def test_the_task_stays_above_what_is_left_out(self, connect: Connect) -> None:
        task = "Fix the flaky test in sync.py " + "with every detail " * 40
        async with connect() as client:
            await call_text(
                client,
                "frs_record",
                messages=[
                    {"role": "system", "content": "You are careful."},
                    {"role": "user", "content": task},
                    *(as_argument(message(n)) for n in range(3, 400)),
                ],
            )
            view = await call_text(client, "frs_view_thread", budget_tokens=3_000)
        lines = view.split("\n")
        marker = lines.index(MARKER)
        # The oldest entries stay on top as cards (issue 22), the task among them.
        assert lines[1] == "[1] System: You are careful."
        assert re.fullmatch(r"\[2\] User: [\d,]+ chars · M\.2@[0-9a-f]{8}", lines[2]), lines[2]
        assert lines[3].startswith("    Fix the flaky test in sync.py with every detail")
        assert marker > 2
        head, _ = split_head(view)
        assert head == list(range(1, len(head) + 1)), "the oldest on top, cards then lines"
        assert budget_note(view)["call"].startswith(f"frs_view_thread(from={len(head) + 1}, to=")

    async def test_the_goal_of_a_layer_left_out_is_pinned(self, connect: Connect) -> None:
        async with connect() as client:
            await call_text(client, "frs_record", messages=[{"role": "user", "content": "task"}])
            await call_text(client, "frs_focus", action="open", goal="find the race")
            for start in range(2, 1_200, 400):
                batch = [as_argument(message(n)) for n in range(start, start + 400)]
                await call_text(client, "frs_record", messages=batch)
            view = await call_text(client, "frs_view_thread", budget_tokens=2_000)
            plan = await call_text(
                client, "frs_plan", steps=[{"text": "reproduce", "status": "doing"}]
            )
            planned = await call_text(client, "frs_view_thread", budget_tokens=2_000)
        lines = view.split("\n")
        # The head keeps the oldest entries, the goal above the first of its layer.
        assert lines[1:4] == ["[1] User: task", "▸ focus 1: find the race", lines[3]]
        assert lines[3].startswith("[2] ")
        assert "revision" in plan
        assert planned.split("\n")[1:5] == ["Plan: ▶ reproduce", *lines[1:4]]
        assert MARKER in lines

    async def test_a_window_pins_nothing(self, connect: Connect, db_path: Path) -> None:
        async with opened(connect, Thread(db_path, SMALL, stored=False)) as client:
            view = await call_text(
                client, "frs_view_thread", budget_tokens=600, **{"from": 100, "to": 300}
            )
        assert MARKER in view
        assert view.split("\n")[1].startswith("[100] ")  # the window's oldest stay on top
        assert int(budget_note(view)["left"]) > 100


class TestSmallThreads:
    async def test_a_thread_that_fits_is_shown_exactly_as_without_a_budget(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call_text(
                client, "frs_record", messages=[as_argument(message(n)) for n in range(1, 9)]
            )
            plain = await call_text(client, "frs_view_thread")
            budgeted = await call_text(client, "frs_view_thread", budget_tokens=4_000)
        assert budgeted == plain

    async def test_a_short_thread_over_the_budget_is_shrunk_to_fit(self, connect: Connect) -> None:
        async with connect() as client:
            batch = [as_argument(message(n)) for n in range(1, 61)]
            await call_text(client, "frs_record", messages=batch)
            view = await call_text(client, "frs_view_thread", budget_tokens=1_500)
        assert estimate_tokens(view) <= 1_500
        entries = shown_entries(view)
        assert entries[-1].position == 60
        note = budget_note(view)
        assert note["grouped"] or note["call"], "older entries are grouped or left out"

    # Budgets small enough that even group lines cannot hold every entry these views select.
    @pytest.mark.parametrize(
        ("window", "budget"),
        [
            ({"from": 1, "to": 200}, 450),
            ({"roles": ["tool"]}, 220),
            ({"from": 50, "to": 250, "roles": ["user"]}, 220),
        ],
    )
    async def test_a_window_or_role_view_over_the_budget_fits_and_names_what_it_left_out(
        self, connect: Connect, db_path: Path, window: dict[str, Any], budget: int
    ) -> None:
        async with opened(connect, Thread(db_path, SMALL, stored=False)) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=budget, **window)
            whole = await call_text(client, "frs_view_thread", **window)
            note = budget_note(view)
            assert note["call"] is not None, view.split("\n")[-1]
            named = dict(window)
            named.update(re.findall(r"(from|to)=(\d+)", note["args"]))
            named = {k: int(v) if k in ("from", "to") else v for k, v in named.items()}
            left = await call_text(client, "frs_view_thread", **named)
        assert estimate_tokens(view) <= budget
        everything = [e.position for e in shown_entries(whole)]
        # The oldest of the window stay on top and the newest are kept, each once (a group line
        # counts its own); the call names what lies between.
        head, rest = split_head(view)
        assert head == everything[: len(head)]
        kept = [p for p in everything if p >= rest[0]]
        assert kept == everything[-len(kept) :]
        assert shown_count(view) == len(head) + len(kept)
        between = everything[len(head) : -len(kept)]
        assert [e.position for e in shown_entries(left)] == between
        if window.get("roles"):
            assert "roles=[" in note["args"]


class TestRefusals:
    async def test_a_budget_below_the_header_is_refused_with_the_minimum(
        self, connect: Connect, db_path: Path
    ) -> None:
        async with opened(connect, Thread(db_path, SMALL, stored=False)) as client:
            before = await call_text(client, "frs_session", action="info")
            error = await refused(client, "frs_view_thread", budget_tokens=20)
            found = re.search(r"use at least (\d+)", error)
            assert found, error
            minimum = int(found.group(1))
            view = await call_text(client, "frs_view_thread", budget_tokens=minimum + 10)
            after = await call_text(client, "frs_session", action="info")
        assert "budget_tokens=20 is below" in error
        assert estimate_tokens(view) <= minimum + 10
        assert after == before

    async def test_the_stated_minimum_budget_is_accepted(self, connect: Connect) -> None:
        # Titles of four lengths put the frame at every remainder of the estimator's rounding.
        refusals = []
        async with connect() as client:
            for pad in range(4):
                session = await call_text(
                    client, "frs_session", action="start", title="T" + "x" * pad
                )
                session_id = session.split()[2]
                batch = [as_argument(message(n)) for n in range(1, 251)]
                await call_text(client, "frs_record", messages=batch, session_id=session_id)
                error = await refused(
                    client, "frs_view_thread", budget_tokens=1, session_id=session_id
                )
                found = re.search(r"use at least (\d+)", error)
                assert found, error
                result = await client.call_tool(
                    "frs_view_thread",
                    {"budget_tokens": int(found.group(1)), "session_id": session_id},
                )
                if result.is_error:
                    refusals.append(text_of(result))
        assert refusals == []

    async def test_the_minimum_for_wide_text_shows_the_newest_entry(self, connect: Connect) -> None:
        # 200 emoji each: a one-line card of them is far wider than a line of ASCII.
        messages = [{"role": "user", "content": f"{i} " + "😀" * 200} for i in range(250)]
        async with connect() as client:
            await call_text(client, "frs_record", messages=messages)
            small = await refused(client, "frs_view_thread", budget_tokens=90)
            found = re.search(r"use at least (\d+)", small)
            assert found, small
            view = await call_text(client, "frs_view_thread", budget_tokens=int(found[1]))
        assert "its newest entry as a one-line card need" in small
        assert estimate_tokens(view) <= int(found[1])
        assert covered(view)[-1] == 250

    @pytest.mark.parametrize("budget", [0, -5])
    async def test_a_budget_that_is_not_positive_is_refused(
        self, connect: Connect, budget: int
    ) -> None:
        async with connect() as client:
            await call_text(client, "frs_record", messages=[{"role": "user", "content": "hi"}])
            error = await refused(client, "frs_view_thread", budget_tokens=budget)
        assert "budget_tokens" in error

    async def test_last_with_a_budget_shows_the_last_entries(
        self, connect: Connect, db_path: Path
    ) -> None:
        async with opened(connect, Thread(db_path, SMALL, stored=False)) as client:
            view = await call_text(client, "frs_view_thread", last=10, budget_tokens=4_000)
        assert [e.position for e in shown_entries(view)] == list(range(SMALL - 9, SMALL + 1))


class TestDefaultCap:
    """A whole-thread view never exceeds the server's cap (`--max-view-tokens`)."""

    @staticmethod
    def messages(count: int) -> list[dict[str, Any]]:
        return [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"step {i}: " + "x" * 400}
            for i in range(count)
        ]

    async def test_a_thread_over_the_cap_is_budgeted_and_says_how_to_see_more(
        self, connect: Connect
    ) -> None:
        async with connect(max_view_tokens=2_000) as client:
            await call_text(client, "frs_record", messages=self.messages(600))
            view = await call_text(client, "frs_view_thread")
            whole = await call_text(client, "frs_view_thread", **{"from": 1})
        assert estimate_tokens(view) <= 2_000
        note = budget_note(view)
        assert note["budget"] == "2,000"
        head, rest = split_head(view)
        assert head == list(range(1, len(head) + 1))
        assert note["call"] == f"frs_view_thread(from={len(head) + 1}, to={note['left_to']})"
        assert rest[0] == int(note["left_to"]) + 1
        assert entry_lines(view)[-1].startswith("[600] Assistant: ")
        assert len([line for line in whole.split("\n") if line.startswith("[")]) == 600
        assert estimate_tokens(whole) > 2_000

    async def test_an_entry_of_many_long_calls_still_fits_as_a_one_line_card(
        self, connect: Connect
    ) -> None:
        # 200 calls of 400-character names: the one-line card once listed them all (~60,000
        # tokens), and the default view asked for a budget_tokens the caller never gave.
        calls = [{"id": f"c{i}", "name": f"{i:03d}" + "n" * 397} for i in range(200)]
        many = {"role": "assistant", "content": "calling", "tool_calls": calls}
        async with connect() as client:
            await call_text(client, "frs_record", messages=[{"role": "user", "content": "go"}])
            await call_text(client, "frs_record", messages=[many])
            view = await call_text(client, "frs_view_thread")
            tiny = await call_text(client, "frs_view_thread", budget_tokens=300)
        line = entry_lines(view)[-1]
        name = "n" * 36 + "…"
        assert line == (
            f"[2] Assistant: calling [tool_use:000{name}] [tool_use:001{name}] "
            f"[tool_use:002{name}] +197 calls · M.2"
        )
        assert entry_lines(tiny)[-1] == line
        assert estimate_tokens(view) <= 20_000
        assert estimate_tokens(tiny) <= 300

    async def test_a_thread_under_the_cap_is_shown_whole(self, connect: Connect) -> None:
        async with connect(max_view_tokens=2_000) as client:
            await call_text(client, "frs_record", messages=self.messages(5))
            view = await call_text(client, "frs_view_thread")
        assert "Budget" not in view
        assert len([line for line in view.split("\n") if line.startswith("[")]) == 5


RUNS = 70  # four entries each (user, assistant with a call, tool, assistant): 280 entries


def run_messages(run: int) -> list[dict[str, Any]]:
    """One agent turn: a stamped user message, a thinking block, a call, its result, an answer."""
    rid, call_id = f"run-{run}", f"call-{run}"
    return [
        {
            "role": "user",
            "content": f"question {run}",
            "created_at": f"2026-01-02T{run // 60 + 10:02d}:{run % 60:02d}:00Z",
        },
        {"role": "assistant", "kind": "thinking", "content": f"thinking about {run}"},
        {
            "role": "assistant",
            "content": f"looking into {run}",
            "run_id": rid,
            "tool_calls": [{"id": call_id, "name": "bash", "arguments": {"cmd": f"grep {run}"}}],
        },
        {
            "role": "tool",
            "name": "bash",
            "tool_call_id": call_id,
            "content": f"result {run}\n" + "line\n" * 8,
            "run_id": rid,
        },
        {"role": "assistant", "content": f"answer {run}", "run_id": rid},
    ]


@asynccontextmanager
async def runs_thread(connect: Connect, **settings: Any) -> AsyncIterator[Client]:
    """280 entries in 70 runs, then an open focus layer holding the two newest entries."""
    async with connect(**settings) as client:
        for start in range(0, RUNS, 10):
            batch = [m for run in range(start, start + 10) for m in run_messages(run)]
            await call_text(client, "frs_record", messages=batch)
        await call_text(client, "frs_focus", action="open", goal="check the fix")
        await call_text(
            client,
            "frs_record",
            messages=[
                {"role": "user", "content": "does it hold?", "created_at": "2026-01-02T12:00:00Z"},
                {"role": "assistant", "content": "it holds"},
            ],
        )
        yield client


def entry_lines(view: str) -> list[str]:
    return [line for line in body_of(view) if re.match(r"^ *\[\d+(?:–\d+)?\] ", line)]


def first_shown(view: str) -> int:
    found = re.match(r"^ *\[(\d+)", entry_lines(view)[0])
    assert found is not None
    return int(found[1])


class TestOptionsInBudgetedViews:
    """A budgeted view over 200 entries keeps every option it was given, within the budget."""

    async def test_merge_runs_merges_the_runs_it_shows(self, connect: Connect) -> None:
        async with runs_thread(connect) as client:
            plain = await call_text(client, "frs_view_thread", budget_tokens=3_000)
            merged = await call_text(
                client, "frs_view_thread", budget_tokens=3_000, merge_runs=True
            )
        assert estimate_tokens(merged) <= 3_000
        spans = [line for line in entry_lines(merged) if re.match(r"^\[\d+–\d+\] Assistant:", line)]
        assert spans
        assert "\n[278–280] Assistant: looking into 69\n" in merged
        assert "\n    [tool_use:bash, cmd:grep 69 → M.279@" in merged
        assert re.search(r" · runs merged: \d+ entries shown as \d+ · ", merged.split("\n")[-1])
        # Unmerged, no entry spans positions (group lines do, but name no role).
        assert not any(re.match(r"^\[\d+–\d+\] [A-Z]", line) for line in entry_lines(plain))
        # The regions start on the same blocks: merging shows no less of the thread.
        assert first_shown(merged) <= first_shown(plain)

    async def test_show_times_stamps_user_messages_and_indents_the_replies(
        self, connect: Connect
    ) -> None:
        async with runs_thread(connect) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=3_000, show_times=True)
        assert estimate_tokens(view) <= 3_000
        assert "\n[277] [2026-01-02 11:09] User: question 69\n" in view
        assert "\n  [278] Assistant: looking into 69\n" in view
        assert "\n[281] [2026-01-02 12:00] User: does it hold?\n" in view

    async def test_show_thinking_shows_the_thinking_of_whole_entries(
        self, connect: Connect
    ) -> None:
        async with runs_thread(connect) as client:
            view = await call_text(
                client, "frs_view_thread", budget_tokens=3_000, show_thinking=True
            )
            hidden = await call_text(client, "frs_view_thread", budget_tokens=3_000)
        assert estimate_tokens(view) <= 3_000
        assert "\n[277] User: question 69\n    (thinking) thinking about 69\n" in view
        assert "(thinking)" not in hidden

    async def test_the_open_focus_layer_is_named_above_its_first_entry(
        self, connect: Connect
    ) -> None:
        async with runs_thread(connect) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=3_000)
        assert "\n▸ focus 1: check the fix\n[281] User: does it hold?\n" in view

    @pytest.mark.parametrize("budget", [400, 900, 2_000, 5_000])
    async def test_every_option_at_once_stays_within_the_budget_and_ends_at_the_newest(
        self, connect: Connect, budget: int
    ) -> None:
        options = {"merge_runs": True, "show_times": True, "show_thinking": True}
        async with runs_thread(connect) as client:
            view = await call_text(client, "frs_view_thread", budget_tokens=budget, **options)
        assert estimate_tokens(view) <= budget
        lines = view.split("\n")
        marker = lines.index(MARKER) if MARKER in lines else 0
        spans = [re.match(r"^ *\[(\d+)(?:–(\d+))?\]", line) for line in lines[marker:]]
        covered = [n for m in spans if m for n in range(int(m[1]), int(m[2] or m[1]) + 1)]
        assert covered == list(range(covered[0], 283))  # contiguous, none twice, to the end
        if marker:
            head = [re.match(r"^ *\[(\d+)(?:–(\d+))?\]", line) for line in lines[1:marker]]
            held = [n for m in head if m for n in range(int(m[1]), int(m[2] or m[1]) + 1)]
            assert held == list(range(1, len(held) + 1)), "the oldest stay on top"
            note = budget_note(view)
            assert note["left_to"] == str(covered[0] - 1)
            assert note["call"] == f"frs_view_thread(from={len(held) + 1}, to={covered[0] - 1})"

    async def test_with_last_the_note_omits_only_what_the_budget_left_out(
        self, connect: Connect
    ) -> None:
        async with runs_thread(connect) as client:
            roomy = await call_text(client, "frs_view_thread", last=4, budget_tokens=5_000)
            tight = await call_text(client, "frs_view_thread", last=60, budget_tokens=400)
        assert [e.position for e in shown_entries(roomy)] == [279, 280, 281, 282]
        assert " out: " not in roomy.split("\n")[-1]
        head, rest = split_head(tight)
        first = rest[0]
        assert first > 223
        assert head[0] == 223, "the window's oldest stay on top"
        note = budget_note(tight)
        left = head[-1] + 1
        assert (note["left"], note["left_to"]) == (str(left), str(first - 1))
        assert note["call"] == f"frs_view_thread(from={left}, to={first - 1})"


class TestCapOnLongThreads:
    async def test_a_view_that_fits_the_cap_is_shown_whole_though_the_raw_thread_does_not(
        self, connect: Connect
    ) -> None:
        long = [
            {"role": "tool", "name": "bash", "content": f"output {i}\n" + "0123456789\n" * 200}
            for i in range(210)
        ]
        async with connect(max_view_tokens=40_000) as client:
            await call_text(client, "frs_record", messages=long)
            view = await call_text(client, "frs_view_thread")
            window = await call_text(client, "frs_view_thread", **{"from": 1})
        assert "Budget" not in view
        assert view == window
        assert estimate_tokens(view) <= 40_000
        assert estimate_tokens("\n".join(m["content"] for m in long)) > 40_000


class TestWindows:
    """Window and role views over their budget shrink like the whole thread, and say so."""

    async def test_a_window_with_show_times_keeps_its_newest_replies(
        self, connect: Connect
    ) -> None:
        replies = [{"role": "assistant", "content": f"reply {i} " + "w" * 60} for i in range(59)]
        async with connect() as client:
            await call_text(
                client, "frs_record", messages=[{"role": "user", "content": "go"}, *replies]
            )
            view = await call_text(
                client, "frs_view_thread", show_times=True, budget_tokens=300, **{"from": 1}
            )
        assert estimate_tokens(view) <= 300
        # The user message is in a group line, so its replies are stamped, not indented.
        assert re.match(r"^ *\[60\] .*Assistant: reply 58 ", view.split("\n")[-2])
        assert " · 60 entries · revision " in view.split("\n")[-1]

    async def test_an_absolute_view_names_the_omitted_positions_as_positions(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await call_text(client, "frs_session", action="start", title="t", numbering="absolute")
            for start in range(0, 300, 100):
                batch = [as_argument(message(n)) for n in range(start + 1, start + 101)]
                await call_text(client, "frs_record", messages=batch)
            await call_text(
                client, "frs_compress_range", summary="the first hundred", **{"from": 1, "to": 100}
            )
            view = await call_text(client, "frs_view_thread", budget_tokens=700)
            named = re.search(
                r'frs_view_thread\(numbering="position", from=(\d+), to=(\d+)\)', view
            )
            assert named is not None, view.split("\n")[-1]
            lo, hi = int(named[1]), int(named[2])
            omitted = await call_text(
                client, "frs_view_thread", numbering="position", **{"from": lo, "to": hi}
            )
        # Position 1 is the summary of numbers 1–100; position p > 1 is number p + 99.
        lines = view.split("\n")
        head = lines[1 : lines.index(MARKER)]
        assert head[0].startswith("[1–100] Summary of 100 messages")
        assert len(head) == lo - 1, "the oldest stay on top, the span after them is named"
        after = re.match(r"^\[(\d+)", lines[lines.index(MARKER) + 1])
        assert after is not None
        assert int(after[1]) == hi + 100
        assert len(re.findall(r"^\[\d+\] ", omitted, re.M)) == hi - lo + 1


class TestFitsEveryTime:
    """Cases a review of the budgeted views reproduced."""

    @staticmethod
    def runs(count: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i in range(count):
            rid, cid = f"r{i}", f"c{i}"
            out += [
                {
                    "role": "assistant",
                    "content": f"step {i}",
                    "run_id": rid,
                    "tool_calls": [{"id": cid, "name": "bash", "arguments": {"cmd": "true"}}],
                },
                {
                    "role": "tool",
                    "name": "bash",
                    "tool_call_id": cid,
                    "content": "ok",
                    "run_id": rid,
                },
                {"role": "assistant", "content": f"done {i}", "run_id": rid},
            ]
        return out

    async def test_merged_views_always_keep_their_note_and_fit(self, connect: Connect) -> None:
        notes: list[str] = []
        async with connect() as client:
            await call_text(client, "frs_record", messages=self.runs(70))
            for budget in range(300, 420, 3):
                view = await call_text(
                    client, "frs_view_thread", budget_tokens=budget, merge_runs=True
                )
                assert estimate_tokens(view) <= budget, budget
                notes.append(view.split("\n")[-1])
        assert all(note.startswith("· Budget ~") for note in notes), [
            note for note in notes if not note.startswith("· Budget ~")
        ]
        assert all(re.search(r" out: frs_view_thread\(from=\d+, to=", note) for note in notes)

    @pytest.mark.parametrize(
        "options",
        [{"roles": ["tool"]}, {"run_id": "nope"}, {"from": 1, "to": 5, "roles": ["system"]}],
    )
    async def test_an_empty_view_over_its_budget_names_the_minimum(
        self, connect: Connect, options: dict[str, Any]
    ) -> None:
        async with connect() as client:
            await call_text(client, "frs_record", messages=[{"role": "user", "content": "hi"}])
            error = await refused(client, "frs_view_thread", budget_tokens=10, **options)
            found = re.search(r"use at least (\d+)\.$", error)
            assert found, error
            view = await call_text(
                client, "frs_view_thread", budget_tokens=int(found[1]), **options
            )
        assert "below what this view's header and footer need" in error
        assert estimate_tokens(view) <= int(found[1])

    async def test_a_window_over_its_budget_shrinks_and_its_minimum_is_accepted(
        self, connect: Connect
    ) -> None:
        messages = [
            {"role": "assistant", "kind": "thinking", "content": "pondering " * 40},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b " * 200},
        ]
        async with connect() as client:
            await call_text(client, "frs_record", messages=messages)
            thinking = await call_text(
                client, "frs_view_thread", show_thinking=True, budget_tokens=200, **{"from": 1}
            )
            error = await refused(
                client, "frs_view_thread", budget_tokens=1, **{"from": 1, "to": 2}
            )
            found = re.search(r"use at least (\d+)\.$", error)
            assert found, error
            minimum = await call_text(
                client, "frs_view_thread", budget_tokens=int(found[1]), **{"from": 1, "to": 2}
            )
        assert estimate_tokens(thinking) <= 200
        assert budget_note(thinking)["budget"] == "200"
        assert covered(thinking)[-1] == 2
        assert estimate_tokens(minimum) <= int(found[1])
        assert "[2] Assistant: b b b" in minimum

    async def test_a_whole_thread_of_tiny_messages_is_held_to_the_cap(
        self, connect: Connect
    ) -> None:
        tiny = [{"role": "user", "content": "ok"} for _ in range(1_000)]
        async with connect(max_view_tokens=2_200) as client:
            await call_text(client, "frs_record", messages=tiny)
            view = await call_text(client, "frs_view_thread")
            window = await call_text(client, "frs_view_thread", **{"from": 1})
        assert estimate_tokens("\n".join(m["content"] for m in tiny)) <= 2_200  # raw: under
        assert estimate_tokens(window) > 2_200  # but the view with its labels is not
        assert estimate_tokens(view) <= 2_200
        assert budget_note(view)["budget"] == "2,200"
