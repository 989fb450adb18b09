"""Runs, times, conversations and roles (issue 5), spoken through an in-process MCP client.

`merge_runs` shows a run's consecutive assistant and tool messages as one entry labelled with
its first and last position; those stay single-message positions, so squashing that range
squashes exactly that entry. `show_times` stamps user messages and indents the replies.
`frs_session(action=start, interface=..., conversation=...)` is get-or-create. `roles` filters
keep real positions.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import TextResourceContents

from tests.calls import body, call, footer, record, refused, sha8, text_of, view
from tests.conftest import Connect

SYSTEM = "You fix flaky tests."


async def start(client: Client, **arguments: Any) -> tuple[str, str]:
    """frs_session(action=start, ...): the session id and the verb (Started or Resumed)."""
    text = text_of(await call(client, "frs_session", action="start", **arguments))
    found = re.match(r"^(Started|Resumed) session ([0-9a-f]+) ", text)
    assert found, text
    return found[2], found[1]


def labels(text: str) -> list[str]:
    """The labels of the entries a view shows, in order: a position, or a merged span."""
    return re.findall(r"^ *\[(\d+(?:–\d+)?)\] ", text, flags=re.MULTILINE)


def ref(number: int, content: str) -> str:
    """How a merged run points at a tool result: ` → M.n@sha8 · N chars`."""
    return f" → M.{number}@{sha8(content)} · {len(content):,} chars"


def user(content: str, run: str | None = None, at: str | None = None) -> dict[str, Any]:
    return {"role": "user", "content": content, "run_id": run, "created_at": at}


def assistant(content: str, run: str | None = None, *calls: Any, at: str | None = None) -> Any:
    """An assistant message; each call is (id, name, arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "run_id": run}
    if calls:
        message["tool_calls"] = [{"id": i, "name": n, "arguments": a} for i, n, a in calls]
    if at:
        message["created_at"] = at
    return message


def tool(call_id: str, name: str, content: str, run: str | None = None) -> dict[str, Any]:
    return {
        "role": "tool",
        "name": name,
        "tool_call_id": call_id,
        "content": content,
        "run_id": run,
    }


GREP_OUT = "sync.py:10: def flush"
READ_OUT = "def flush(self):\n    self.queue.drain()"
BASH_OUT = "4 failed, 16 passed"

#: One investigation: positions 3–8 are one run (r1) of assistant and tool messages.
INVESTIGATION = (
    {"role": "system", "content": SYSTEM},
    user("test_sync fails one run in five.", "r1", "2025-03-04T10:11:12Z"),
    assistant(
        "Searching first.",
        "r1",
        ("c1", "grep", {"pattern": "flush", "query": "Syncer.flush"}),
        at="2025-03-04T10:12:00Z",
    ),
    tool("c1", "grep", GREP_OUT, "r1"),
    assistant(
        "Reading it and running the suite.",
        "r1",
        ("c2", "read", {"path": "sync.py", "lines": 40}),
        ("c3", "bash", {"cmd": "pytest -k test_sync --count 20"}),
    ),
    tool("c2", "read", READ_OUT, "r1"),
    tool("c3", "bash", BASH_OUT, "r1"),
    assistant("The lock is missing in flush.", "r1"),
    user("Fix it.", "r2", "2025-03-04T11:30:00Z"),
    assistant("Adding the lock.", "r2"),
)


def merged_run(first: int) -> list[str]:
    """The investigation's run as one merged entry, when its first message is at `first`."""
    return [
        f"[{first}–{first + 5}] Assistant: Searching first.",
        f"    [tool_use:grep, query:Syncer.flush{ref(first + 1, GREP_OUT)}]",
        "    Reading it and running the suite.",
        f"    [tool_use:read, path:sync.py{ref(first + 3, READ_OUT)}]",
        f"    [tool_use:bash, cmd:pytest -k test_sync --count 20{ref(first + 4, BASH_OUT)}]",
        "    The lock is missing in flush.",
    ]


class TestMergeRuns:
    async def test_a_run_is_one_entry_with_each_call_annotated_where_it_happened(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await start(client, title="Runs")
            await record(client, *INVESTIGATION)
            merged = await view(client, merge_runs=True)
            plain = await view(client)
        assert body(merged) == [
            f"[1] System: {SYSTEM}",
            "[2] User: test_sync fails one run in five.",
            *merged_run(3),
            "[9] User: Fix it.",
            "[10] Assistant: Adding the lock.",
        ]
        assert labels(plain) == [str(p) for p in range(1, 11)], "merging is only a view option"

    async def test_the_last_line_counts_entries_and_messages_separately(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *INVESTIGATION)
            merged = footer(await view(client, merge_runs=True))
            await call(client, "frs_compress_range", **{"from": 9, "to": 10}, summary="Fixing.")
            after = footer(await view(client, merge_runs=True))
        assert merged.startswith(
            "· 10 messages in 10 entries · runs merged: 10 entries shown as 5 · "
            "system 1, user 2, assistant 4, tool 3 · revision 1 · "
        )
        assert after.startswith(
            "· 10 messages in 9 entries · runs merged: 9 entries shown as 4 · "
            "system 1, user 1, assistant 3, tool 3, summary 1 · revision 2 · "
        )

    async def test_squashing_the_span_of_a_merged_entry_squashes_exactly_that_entry(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *INVESTIGATION)
            before = await view(client, merge_runs=True)
            assert "[3–8] Assistant: Searching first." in body(before)
            done = await call(
                client,
                "frs_compress_range",
                **{"from": 3, "to": 8},
                summary="flush lacks the lock; 4/20 fail",
            )
            after = await view(client, merge_runs=True)
            originals = text_of(await call(client, "get_alias", alias="SQ.1"))
        assert text_of(done).startswith("Squashed positions 3–8 (6 entries, 6 messages) ")
        assert done.structured_content is not None
        alias = done.structured_content["alias"]
        assert body(after) == [
            f"[1] System: {SYSTEM}",
            "[2] User: test_sync fails one run in five.",
            f"[3] Summary of 6 messages ({alias}): flush lacks the lock; 4/20 fail",
            "[4] User: Fix it.",
            "[5] Assistant: Adding the lock.",
        ]
        assert re.findall(r"^\[(\d+)\] ", originals, flags=re.MULTILINE) == [
            "3",
            "4",
            "5",
            "6",
            "7",
            "8",
        ]

    async def test_absolute_numbering_labels_a_merged_entry_by_its_numbers(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *INVESTIGATION)
            await call(client, "frs_compress_range", **{"from": 1, "to": 2}, summary="Setup.")
            by_position = await view(client, merge_runs=True)
            by_number = await view(client, merge_runs=True, numbering="absolute")
            done = await call(
                client,
                "frs_compress_range",
                **{"from": 3, "to": 8},
                numbering="absolute",
                summary="flush lacks the lock",
            )
            after = await view(client, numbering="absolute")
        assert labels(by_position) == ["1", "2–7", "8", "9"]
        assert labels(by_number) == ["1–2", "3–8", "9", "10"]
        assert text_of(done).startswith("Squashed numbers 3–8 (6 entries, 6 messages) ")
        assert labels(after) == ["1–2", "3–8", "9", "10"]
        assert "[3–8] Summary of 6 messages" in after

    async def test_messages_without_a_run_id_are_never_merged(self, connect: Connect) -> None:
        async with connect() as client:
            await record(
                client,
                user("Go"),
                assistant("Listing.", None, ("c1", "bash", {"cmd": "ls"})),
                tool("c1", "bash", "a.py"),
                assistant("One file."),
                assistant("Done."),
            )
            merged = await view(client, merge_runs=True)
            plain = await view(client)
        assert body(merged) == body(plain)
        assert "runs merged" not in footer(merged)

    async def test_different_runs_are_not_merged(self, connect: Connect) -> None:
        async with connect() as client:
            await record(
                client,
                user("Go", "r1"),
                assistant("a", "r1"),
                assistant("b", "r2"),
                assistant("c", "r2"),
                assistant("d", "r1"),
                assistant("e", "r3"),
            )
            merged = await view(client, merge_runs=True)
        assert labels(merged) == ["1", "2", "3–4", "5", "6"]
        assert "[3–4] Assistant: b" in body(merged)

    async def test_a_user_message_of_the_same_run_ends_the_merged_entry(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(
                client,
                user("Go", "r1"),
                assistant("ls", "r1"),
                assistant("ls -a", "r1"),
                user("a.py", "r1"),
                assistant("cat a.py", "r1"),
            )
            merged = await view(client, merge_runs=True)
        assert labels(merged) == ["1", "2–3", "4", "5"]

    async def test_a_summary_inside_a_run_splits_it(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, *INVESTIGATION)
            await call(client, "frs_compress_range", **{"from": 5, "to": 7}, summary="read+ran")
            merged = await view(client, merge_runs=True)
        assert labels(merged) == ["1", "2", "3–4", "5", "6", "7", "8"]
        assert "[5] Summary of 3 messages" in merged

    async def test_a_window_merges_what_it_shows_and_keeps_real_positions(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *INVESTIGATION)
            tail = await view(client, merge_runs=True, last=4)
            window = await view(client, merge_runs=True, **{"from": 4, "to": 9})
        assert body(tail) == [
            "[7–8] Assistant:",
            f"    [tool_result:bash{ref(7, BASH_OUT)}]",
            "    The lock is missing in flush.",
            "[9] User: Fix it.",
            "[10] Assistant: Adding the lock.",
        ]
        assert footer(tail).startswith(
            "· showing 4 entries at positions 7–10 of 10 entries · 10 messages · "
            "runs merged: 4 entries shown as 3 · "
        )
        assert labels(window) == ["4–8", "9"]

    async def test_a_call_is_annotated_with_its_telling_argument_shortened(
        self, connect: Connect
    ) -> None:
        long_cmd = "python -c 'print(1)' " * 10
        async with connect() as client:
            await record(
                client,
                user("Go", "r1"),
                assistant(
                    "Four calls.",
                    "r1",
                    ("c1", "search", {"path": "src", "query": "needle in src"}),
                    ("c2", "bash", {"cmd": long_cmd, "timeout": 5}),
                    ("c3", "note", "free words, not JSON"),
                    ("c4", "now", {}),
                ),
                *(tool(f"c{i}", "t", "ok", "r1") for i in range(1, 5)),
            )
            merged = await view(client, merge_runs=True)
        notes = [line.strip().split(" → ")[0] for line in body(merged) if "[tool_use:" in line]
        shortened = " ".join(long_cmd.split())[:59] + "…"
        assert notes == [
            "[tool_use:search, path:src",  # a path tells more than a query
            f"[tool_use:bash, cmd:{shortened}",
            "[tool_use:note, free words, not JSON",
            "[tool_use:now",
        ]

    async def test_a_role_filter_never_merges_across_a_hidden_message(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(
                client,
                user("task", "r1"),
                assistant("ls", "r1"),
                user("a.py", "r1"),
                assistant("cat a.py", "r1"),
                user("print(1)", "r1"),
                assistant("Done.", "r1"),
            )
            merged = await view(client, merge_runs=True, roles=["assistant"])
        assert labels(merged) == ["2", "4", "6"]

    async def test_a_run_view_never_merges_across_another_runs_messages(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(
                client,
                user("q1", "r1"),
                assistant("a1", "r1"),
                user("q2", "r2"),
                assistant("a2", "r2"),
                assistant("a1 again", "r1"),
                assistant("a1 done", "r1"),
            )
            merged = await view(client, merge_runs=True, run_id="r1")
        assert labels(merged) == ["1", "2", "5–6"]


class TestShowTimes:
    async def test_user_messages_are_stamped_and_their_replies_indented_under_them(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(
                client,
                assistant("Good morning.", at="2025-03-04T09:00:59Z"),
                user("Fix test_sync.", at="2025-03-04T10:11:12Z"),
                assistant("On it.", at="2025-03-04T10:12:00Z"),
                assistant("Done.", at="2025-03-04T10:40:00Z"),
                user("Thanks!", at="2025-03-05T08:01:00Z"),
                assistant("You're welcome.", at="2025-03-05T08:02:00Z"),
            )
            timed = await view(client, show_times=True)
            tail = await view(client, show_times=True, last=1)
        assert body(timed) == [
            "[1] [2025-03-04 09:00] Assistant: Good morning.",
            "[2] [2025-03-04 10:11] User: Fix test_sync.",
            "  [3] Assistant: On it.",
            "  [4] Assistant: Done.",
            "[5] [2025-03-05 08:01] User: Thanks!",
            "  [6] Assistant: You're welcome.",
        ]
        assert body(tail) == ["[6] [2025-03-05 08:02] Assistant: You're welcome."]

    async def test_a_system_message_is_not_stamped(self, connect: Connect) -> None:
        async with connect() as client:
            await record(
                client,
                {"role": "system", "content": "Be brief.", "created_at": "2026-11-21T09:00:00Z"},
                user("Fix test_sync.", at="2025-03-04T10:11:12Z"),
                assistant("On it.", at="2025-03-04T10:12:00Z"),
            )
            timed = await view(client, show_times=True)
        assert body(timed) == [
            "[1] System: Be brief.",
            "[2] [2025-03-04 10:11] User: Fix test_sync.",
            "  [3] Assistant: On it.",
        ]

    async def test_times_and_merged_runs_together(self, connect: Connect) -> None:
        async with connect() as client:
            await record(
                client,
                assistant(
                    "Resuming.",
                    "r0",
                    ("c0", "bash", {"cmd": "git status"}),
                    at="2025-03-04T09:00:00Z",
                ),
                tool("c0", "bash", "clean", "r0"),
                *INVESTIGATION[1:],
            )
            timed = await view(client, show_times=True, merge_runs=True)
        assert body(timed) == [
            "[1–2] [2025-03-04 09:00] Assistant: Resuming.",
            f"    [tool_use:bash, cmd:git status{ref(2, 'clean')}]",
            "[3] [2025-03-04 10:11] User: test_sync fails one run in five.",
            *("  " + line for line in merged_run(4)),
            "[10] [2025-03-04 11:30] User: Fix it.",
            "  [11] Assistant: Adding the lock.",
        ]


class TestConversations:
    async def test_the_same_interface_and_conversation_always_give_the_same_session(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            first, verb = await start(client, interface="telegram", conversation="12345")
            assert verb == "Started"
            await record(client, user("Hello from Telegram"))
            other, _ = await start(client, interface="telegram", conversation="67890")
            web, _ = await start(client, interface="web", conversation="12345")
            plain, _ = await start(client, title="No conversation")
            again, verb = await start(client, interface="telegram", conversation="12345")
            assert verb == "Resumed"
            thread = await view(client)  # the resumed session is current
        assert again == first
        assert len({first, other, web, plain}) == 4, "different pairs never share a session"
        assert "[1] User: Hello from Telegram" in thread

    async def test_the_sessions_resource_names_each_sessions_conversation(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            session, _ = await start(client, interface="cli", conversation="tty1")
            listed = await client.read_resource("frs://sessions")
        content = listed.contents[0]
        assert isinstance(content, TextResourceContents)
        rows = {row["id"]: row for row in json.loads(content.text)["sessions"]}
        assert (rows[session]["interface"], rows[session]["conversation"]) == ("cli", "tty1")

    async def test_an_interface_without_a_conversation_is_refused_and_creates_nothing(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await start(client, title="only one")
            text = await refused(client, "frs_session", action="start", interface="telegram")
            listed = text_of(await call(client, "frs_session", action="list"))
        assert "Give interface and conversation together" in text
        assert listed.count('"') == 2, listed

    async def test_two_servers_racing_on_one_conversation_create_one_session(
        self, connect: Connect
    ) -> None:
        found: dict[str, set[str]] = {f"chat-{i}": set() for i in range(6)}

        async def open_all(client: Client) -> None:
            for conversation in found:
                session, _ = await start(client, interface="telegram", conversation=conversation)
                found[conversation].add(session)

        async with connect() as one, connect() as two, anyio.create_task_group() as group:
            group.start_soon(open_all, one)
            group.start_soon(open_all, two)
        assert all(len(sessions) == 1 for sessions in found.values()), found
        assert len(set.union(*found.values())) == 6

    async def test_interface_message_ids_and_run_ids_are_recorded(
        self, connect: Connect, db_path: Path
    ) -> None:
        async with connect() as client:
            session, _ = await start(client, interface="telegram", conversation="12345")
            await record(
                client,
                {**user("hi", "turn-1"), "interface_message_id": "tg:1001"},
                assistant("hello", "turn-1"),
            )
        with sqlite3.connect(db_path) as db:
            rows = db.execute(
                "select number, run_id, interface_message_id from messages"
                " where session_id = ? order by number",
                (session,),
            ).fetchall()
        db.close()
        assert rows == [(1, "turn-1", "tg:1001"), (2, "turn-1", None)]

    async def test_a_run_view_shows_exactly_one_run_at_its_real_positions(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(
                client,
                user("q1", "r1"),
                assistant("a1", "r1"),
                user("q2", "r2"),
                assistant("a2", "r2"),
                assistant("a1 again", "r1"),
                assistant("no run"),
            )
            run = await view(client, run_id="r1")
            other = await view(client, run_id="r2")
            unknown = await view(client, run_id="r9")
        assert body(run) == ["[1] User: q1", "[2] Assistant: a1", "[5] Assistant: a1 again"]
        # Three entries at 1, 2 and 5, named as they are (not as a span 1–5 they do not fill).
        assert footer(run).startswith("· showing 3 entries at positions 1, 2, 5 of 6 entries · ")
        assert body(other) == ["[3] User: q2", "[4] Assistant: a2"]
        assert body(unknown) == []
        assert footer(unknown).startswith("· showing 0 entries of 6 entries · ")


ROLE_THREAD = (
    {"role": "system", "content": SYSTEM},
    user("u1"),
    assistant("a1", None, ("c1", "bash", {"cmd": "ls"})),
    tool("c1", "bash", "a.py"),
    user("u2"),
    assistant("a2"),
    user("u3"),
    assistant("a3"),
    user("u4"),
)


class TestRoles:
    async def test_the_last_three_user_messages_keep_their_real_positions(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *ROLE_THREAD)
            last = await view(client, roles=["user"], last=3)
        assert body(last) == ["[5] User: u2", "[7] User: u3", "[9] User: u4"]
        assert footer(last).startswith(
            "· showing 3 user entries at positions 5, 7, 9 of 9 entries · 9 messages · "
            "system 1, user 4, assistant 3, tool 1 · "
        )

    async def test_from_and_to_with_roles_filter_inside_the_window(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, *ROLE_THREAD)
            window = await view(client, roles=["user", "tool"], **{"from": 3, "to": 7})
            last_in_window = await view(client, roles=["assistant"], last=1, **{"from": 1, "to": 7})
        assert body(window) == ["[4] Tool bash: a.py", "[5] User: u2", "[7] User: u3"]
        assert body(last_in_window) == ["[6] Assistant: a2"]

    async def test_summaries_are_a_role_of_their_own(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, *ROLE_THREAD)
            await call(client, "frs_compress_range", **{"from": 2, "to": 4}, summary="ls: a.py")
            summaries = await view(client, roles=["summary"])
            users = await view(client, roles=["user"], numbering="absolute", **{"from": 1, "to": 6})
        assert [line.split(" (")[0] for line in body(summaries)] == ["[2] Summary of 3 messages"]
        assert footer(summaries).count("summary 1") == 1
        assert "system 1, user 3, assistant 2, summary 1 · " in footer(summaries)
        assert body(users) == ["[5] User: u2"], "absolute numbers; u1 is inside the summary"

    async def test_an_unknown_role_is_refused_with_the_choices(self, connect: Connect) -> None:
        async with connect() as client:
            text = await refused(client, "frs_view_thread", roles=["robot"])
        assert (
            "Unknown role 'robot' in roles; use any of system, user, assistant, tool, summary"
            in text
        )
