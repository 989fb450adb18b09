"""Fuzzing the tool surface through a real MCP client, from the schemas the tools publish.

Each example opens a fresh server on a fresh copy of one seeded file (a session with messages, a
tool call and its result, a squash, a plan: seeded once through the tools, since every example
starts from the same state), then makes a few calls whose arguments are drawn from each tool's
published `inputSchema`, valid or broken (wrong types, huge numbers, long, invisible or invalid
text, deep nesting, unknown or missing properties). Every answer must be a result or a readable
tool error, never the SDK's bare "Error executing tool <name>" (an exception nobody translated);
a refused call, and any call of a read-only tool, must leave every row of the file as it was; a
successful write moves at most one session's revision, by exactly one, with one change-log row.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp import Client

from server import Settings, build_server
from tests.robust.audit import open_file, snapshot
from tests.robust.bad_inputs import SEED_MESSAGES
from tests.robust.schemas import any_json, hostile, valid
from tests.robust.workload import FORBIDDEN

Published = dict[str, tuple[dict[str, Any], bool]]  # tool: (inputSchema, read-only)

SEED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("frs_session", {"action": "start", "title": "fuzz", "goal": "break nothing"}),
    ("frs_record", {"messages": list(SEED_MESSAGES)}),
    ("frs_compress_range", {"from": 4, "to": 5, "summary": "Lock missing; adding it."}),
    ("frs_plan", {"steps": [{"text": "reproduce", "status": "done"}, {"text": "fix"}]}),
)


async def _published(folder: Path) -> Published:
    async with Client(build_server(Settings(database=str(folder / "schemas.db")))) as client:
        tools = (await client.list_tools()).tools
    return {
        tool.name: (
            tool.input_schema,
            bool(tool.annotations and tool.annotations.read_only_hint),
        )
        for tool in tools
    }


def _without_session(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        return {k: v for k, v in arguments.items() if k != "session_id"}
    return arguments


def _revisions(db: Path) -> tuple[dict[str, int], int]:
    with open_file(db) as conn:
        revisions = dict(conn.execute("select id, revision from sessions").fetchall())
        (changes,) = conn.execute("select count(*) from changes").fetchone()
    return revisions, changes


async def _seed(db: Path) -> None:
    """The state every example starts from, made through the tools; closed, so that the file
    alone (no -wal) holds it."""
    async with Client(build_server(Settings(database=str(db)))) as client:
        for name, arguments in SEED:
            seeded = await client.call_tool(name, arguments)
            assert not seeded.is_error, seeded.content


async def _exercise(
    calls: list[tuple[str, dict[str, Any]]], published: Published, seeded: Path
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "fuzz.db"
        shutil.copyfile(seeded, db)
        async with Client(build_server(Settings(database=str(db)))) as client:
            for name, arguments in calls:
                before = snapshot(db)
                revisions, changes = _revisions(db)
                result = await client.call_tool(name, arguments)
                text = "\n".join(getattr(block, "text", "") for block in result.content)
                for bad in FORBIDDEN:
                    assert bad not in text, f"{name}({arguments!r}) leaked {bad!r}: {text}"
                read_only = published.get(name, ({}, True))[1]
                if result.is_error:
                    event(f"{name}: refused")
                    assert text.strip() not in (f"Error executing tool {name}", ""), (
                        f"un-translated exception for {name}({arguments!r})"
                    )
                    assert snapshot(db) == before, f"refused {name}({arguments!r}) wrote rows"
                    continue
                event(f"{name}: accepted")
                if read_only:
                    assert snapshot(db) == before, f"read-only {name}({arguments!r}) wrote rows"
                    continue
                after, changes_after = _revisions(db)
                moved = {
                    sid: after[sid] - revisions.get(sid, 0)
                    for sid in after
                    if after[sid] != revisions.get(sid, 0)
                }
                if not moved and name != "frs_session":
                    # A read action of a mixed tool (frs_source list, frs_session info).
                    assert snapshot(db) == before, f"{name}({arguments!r}) wrote rows silently"
                    continue
                assert list(moved.values()) in ([], [1]), f"{name}({arguments!r}) moved {moved}"
                assert changes_after == changes + len(moved), f"{name}: change-log rows"


class TestFuzzToolSurface:
    def test_schema_driven_calls_never_crash_and_never_write_half(self, tmp_path: Path) -> None:
        published = anyio.run(_published, tmp_path)
        seeded = tmp_path / "seeded.db"
        anyio.run(_seed, seeded)
        assert not Path(f"{seeded}-wal").exists() or Path(f"{seeded}-wal").stat().st_size == 0
        assert {"frs_record", "frs_view_thread", "frs_compress_range", "get_alias"} <= set(
            published
        )

        def call_for(name: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
            schema = published[name][0]
            arguments = st.one_of(valid(schema), hostile(schema))
            # Mostly the seeded (current) session: a random id would stop most calls early.
            return st.tuples(st.just(name), arguments, st.booleans()).map(
                lambda c: (c[0], c[1] if c[2] else _without_session(c[1]))
            )

        # Names the client can encode (it refuses lone surrogates itself, before sending).
        unknown = st.tuples(
            st.text(max_size=12).filter(lambda n: n not in published),
            st.dictionaries(st.text(max_size=5), any_json, max_size=2),
        )
        call = st.sampled_from(sorted(published)).flatmap(call_for) | unknown

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(calls=st.lists(call, min_size=1, max_size=4))
        def exercise(calls: list[tuple[str, dict[str, Any]]]) -> None:
            anyio.run(_exercise, calls, published, seeded)

        exercise()
