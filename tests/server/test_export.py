"""A thread a runtime can send to a model (issue 5): the messages resources and `frs-mcp export`.

The resources `frs://sessions/{id}/messages` (OpenAI shape) and `.../messages/anthropic`, and the
command `frs-mcp export SESSION --format openai|anthropic|text` run in a subprocess, are checked
with the validators of tests/frs/test_export.py: every tool result answers a call before it,
roles alternate where the API requires it. Every corpus transcript is imported with
`frs-mcp import`, rendered with merge_runs=true (its merged spans must be the transcript's runs),
and exported before and after its runs are squashed, without losing or breaking a pair.
"""

from __future__ import annotations

import json
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import TextResourceContents

from frs.export import NO_RESULT
from tests.calls import call_text
from tests.command import TRANSCRIPTS, Run, by_file, frs_mcp, imported_corpus
from tests.conftest import Connect
from tests.frs.test_export import (
    anthropic_id_problems,
    anthropic_problems,
    openai_problems,
    sent_ids,
)

IMPORTED = re.compile(r" into session (?P<session>[0-9a-f]+) ")
LABEL = re.compile(r"^\[(\d+)(?:–(\d+))?\] ")

# The whole thread as a window: a whole-thread view over the default cap is budgeted.
WHOLE = {"from": 1}


async def resource(client: Client, uri: str) -> Any:
    """A JSON resource, parsed."""
    read = await client.read_resource(uri)
    content = read.contents[0]
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def exports(client: Client, session: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Both shapes of a session's live thread, each checked against its API's rules."""
    openai = await resource(client, f"frs://sessions/{session}/messages")
    anthropic = await resource(client, f"frs://sessions/{session}/messages/anthropic")
    assert openai_problems(openai) == []
    assert anthropic_problems(anthropic) == []
    return openai, anthropic


def rows_of(file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line]


def run_spans(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The entries merge_runs must show for an unsquashed transcript: maximal stretches of
    assistant and tool messages sharing a run id, and every other message alone (1-based)."""

    def run(row: dict[str, Any]) -> str | None:
        return row.get("run_id") if row["role"] in ("assistant", "tool") else None

    spans: list[tuple[int, int]] = []
    for number, row in enumerate(rows, start=1):
        if number > 1 and run(row) is not None and run(row) == run(rows[number - 2]):
            spans[-1] = (spans[-1][0], number)
        else:
            spans.append((number, number))
    return spans


def merged_entries(view: str) -> list[tuple[int, int, list[str]]]:
    """Each entry of a merged view: its first and last position and its lines."""
    found: list[tuple[int, int, list[str]]] = []
    for line in view.split("\n")[1:-1]:
        label = LABEL.match(line)
        if label:
            first = int(label[1])
            found.append((first, int(label[2] or first), [line]))
        elif found:
            found[-1][2].append(line)
    return found


def call_names(lines: list[str]) -> list[str]:
    """The tool names of the call annotations among an entry's lines, in order."""
    notes = (re.match(r"^    \[tool_use:(.+?)(?:, | → |\]$)", line) for line in lines)
    return [note[1] for note in notes if note]


def openai_results(openai: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in openai if m["role"] == "tool" and m["content"] != NO_RESULT]


def anthropic_results(anthropic: dict[str, Any]) -> list[Any]:
    return [
        block["content"]
        for turn in anthropic["messages"]
        for block in turn["content"]
        if block["type"] == "tool_result" and block["content"] != NO_RESULT
    ]


# -- resources and the command on a small thread ----------------------------------------------

THREAD = [
    {"role": "system", "content": "You fix flaky tests."},
    {"role": "user", "content": "test_sync fails one run in five.", "run_id": "r1"},
    {"role": "assistant", "content": "Let me think.", "kind": "thinking"},
    {
        "role": "assistant",
        "content": "Running it 20 times.",
        "run_id": "r1",
        "tool_calls": [
            {"id": "c1", "name": "bash", "arguments": {"cmd": "pytest --count 20"}},
            {"id": "c2", "name": "read", "arguments": {"path": "sync.py"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "def flush(self): ...", "run_id": "r1"},
    {"role": "tool", "tool_call_id": "c1", "content": "4 failed, 16 passed " * 20, "run_id": "r1"},
    {"role": "assistant", "content": "The lock is missing.", "run_id": "r1"},
    {"role": "user", "content": "Fix it.", "run_id": "r2"},
]


async def small_thread(client: Client) -> str:
    """THREAD recorded in a new session; its id."""
    started = await call_text(client, "frs_session", action="start", title="Export")
    found = re.match(r"^Started session ([0-9a-f]+) ", started)
    assert found, started
    await call_text(client, "frs_record", messages=THREAD)
    return found[1]


class TestResources:
    async def test_the_messages_resource_is_the_thread_in_openai_shape(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            session = await small_thread(client)
            openai, _ = await exports(client, session)
        assert [(m["role"], m.get("tool_call_id")) for m in openai] == [
            ("system", None),
            ("user", None),
            ("assistant", None),
            ("tool", "c2"),
            ("tool", "c1"),
            ("assistant", None),
            ("user", None),
        ]
        assert [c["function"]["name"] for c in openai[2]["tool_calls"]] == ["bash", "read"]
        assert json.loads(openai[2]["tool_calls"][0]["function"]["arguments"]) == {
            "cmd": "pytest --count 20"
        }
        assert "Let me think." not in json.dumps(openai), "thinking is left out"

    async def test_the_anthropic_resource_alternates_turns_with_system_on_top(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            session = await small_thread(client)
            _, anthropic = await exports(client, session)
        assert anthropic["system"] == "You fix flaky tests."
        assert [t["role"] for t in anthropic["messages"]] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
        ]
        assert [b["type"] for b in anthropic["messages"][2]["content"]] == [
            "tool_result",
            "tool_result",
        ]
        assert "Let me think." not in json.dumps(anthropic)
        assert anthropic_id_problems(anthropic) == []

    async def test_a_squash_shrinks_the_export_to_a_summary_marked_as_one(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            session = await small_thread(client)
            before, _ = await exports(client, session)
            await call_text(
                client,
                "frs_compress_range",
                **{"from": 3, "to": 6},
                summary="sync.py flush lacks a lock; 4/20 runs fail.",
            )
            openai, anthropic = await exports(client, session)
        alias = re.search(r"SQ\.1@[0-9a-f]{8}", json.dumps(openai))
        assert alias, openai
        summary = (
            f"[Summary of 4 messages ({alias[0]})] sync.py flush lacks a lock; 4/20 runs fail."
        )
        assert openai[2:] == [
            {"role": "assistant", "content": summary},
            {"role": "user", "content": "Fix it."},
        ]
        assert [b["text"] for b in anthropic["messages"][1]["content"]] == [summary]
        assert len(json.dumps(openai)) < len(json.dumps(before)) / 2, "the tokens really go"

    async def test_an_unknown_session_is_an_invalid_params_error(self, connect: Connect) -> None:
        async with connect() as client:
            for uri in (
                "frs://sessions/nosuch/messages",
                "frs://sessions/nosuch/messages/anthropic",
            ):
                with pytest.raises(MCPError) as raised:
                    await client.read_resource(uri)
                assert raised.value.code == -32602
                assert "No session 'nosuch'" in str(raised.value)

    async def test_both_shapes_are_listed_as_json_templates(self, connect: Connect) -> None:
        async with connect() as client:
            listed = await client.list_resource_templates()
        templates = {t.uri_template: t.mime_type for t in listed.resource_templates}
        assert templates["frs://sessions/{session_id}/messages"] == "application/json"
        assert templates["frs://sessions/{session_id}/messages/anthropic"] == "application/json"


def calling(call_id: str, cmd: str) -> dict[str, Any]:
    """An assistant message making one bash call."""
    call = {"id": call_id, "name": "bash", "arguments": {"cmd": cmd}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


class TestReusedCallIds:
    async def test_both_exports_send_the_same_unique_ids_and_pair_each_result(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            session = await small_thread(client)
            # c1 (made by THREAD) is made again twice, once per frs_record call.
            await call_text(
                client, "frs_record", messages=[calling("c1", "ls"), result("c1", "a.py")]
            )
            await call_text(
                client, "frs_record", messages=[calling("c1", "pwd"), result("c1", "/w")]
            )
            openai, anthropic = await exports(client, session)
        ids = sent_ids(openai, anthropic)
        assert ids[0] == ids[2] == ["c1", "c2", "c1_2", "c1_3"]
        assert ids[1] == ids[3] == ["c2", "c1", "c1_2", "c1_3"]
        assert anthropic_id_problems(anthropic) == []
        answered = {m["tool_call_id"]: m["content"] for m in openai if m["role"] == "tool"}
        assert (answered["c1_2"], answered["c1_3"]) == ("a.py", "/w")


@pytest.mark.slow
class TestCommand:
    async def test_the_command_prints_what_the_resources_give(
        self, connect: Connect, db_path: Path
    ) -> None:
        async with connect() as client:
            session = await small_thread(client)
            openai, anthropic = await exports(client, session)
            full = await call_text(client, "frs_view_thread", preview_chars=100_000)
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(
                pool.map(
                    lambda fmt: frs_mcp("export", session, "--format", fmt, "--db", str(db_path)),
                    ("openai", "anthropic", "text"),
                )
            )
        assert [run.returncode for run in runs] == [0, 0, 0], [run.stderr for run in runs]
        assert json.loads(runs[0].stdout) == openai
        assert json.loads(runs[1].stdout) == anthropic
        assert runs[2].stdout == full + "\n", "text is the whole view, no cards"
        assert "4 failed, 16 passed " * 20 in runs[2].stdout

    async def test_current_names_the_current_session(self, connect: Connect, db_path: Path) -> None:
        async with connect() as client:
            await small_thread(client)
            await call_text(client, "frs_session", action="start", title="Later")
            await call_text(client, "frs_record", messages=[{"role": "user", "content": "newest"}])
        # The in-process client names itself "mcp": its current session is that scope's.
        run = frs_mcp("export", "current", "--scope", "mcp", "--db", str(db_path))
        latest = frs_mcp("export", "latest", "--db", str(db_path))
        default = frs_mcp("export", "current", "--db", str(db_path))
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout) == [{"role": "user", "content": "newest"}]
        assert latest.stdout == run.stdout
        assert (default.returncode, default.stdout) == (2, "")
        assert default.stderr == (
            f"frs-mcp export: {db_path} has no current session in scope default; name one, give "
            "the scope of the client that made it (--scope NAME, as frs_session(action='info') "
            "shows it), or export 'latest'.\n"
        )

    async def test_an_unknown_session_fails_on_stderr_with_nothing_on_stdout(
        self, connect: Connect, db_path: Path
    ) -> None:
        async with connect() as client:
            await small_thread(client)
        run = frs_mcp("export", "nosuch", "--format", "anthropic", "--db", str(db_path))
        assert (run.returncode, run.stdout) == (2, "")
        assert run.stderr == (
            f"frs-mcp export: No session 'nosuch' in {db_path}. Give a session id, or 'current' "
            "for the current session.\n"
        )
        assert "Traceback" not in run.stderr

    def test_a_database_that_does_not_exist_is_named_and_not_created(self, tmp_path: Path) -> None:
        missing = tmp_path / "typo.db"  # a missing folder: tests/server/test_database_values.py
        run = frs_mcp("export", "current", "--db", str(missing))
        assert (run.returncode, run.stdout) == (2, "")
        assert run.stderr == f"frs-mcp export: no database at {missing}\n"
        assert not missing.exists()


# -- the corpus -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    database: Path
    sessions: dict[str, str]  # file name -> session id


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """Every transcript imported by `frs-mcp import`; each one's session."""
    database, runs = imported_corpus(tmp_path_factory)
    sessions: dict[str, str] = {}
    for name, run in runs.items():
        found = IMPORTED.search(run.stdout)
        assert run.returncode == 0, (name, run.stderr)
        assert found, (name, run.stdout)
        sessions[name] = found["session"]
    return Corpus(database, sessions)


#: The transcripts the command exports too (each export is a process start, ~1 s of CPU): the
#: ones with an unanswered call, reused ids, ids outside [a-zA-Z0-9_-], and parallel calls.
#: The resources export all of them; the command prints what the resources give.
COMMAND_FILES = [f for f in TRANSCRIPTS if f.name[:2] in {"01", "03", "04", "05", "10"}]


@pytest.fixture(scope="module")
def command_exports(corpus: Corpus) -> dict[tuple[str, str], Run]:
    """`frs-mcp export SESSION --format F` of COMMAND_FILES in both shapes."""
    jobs = [(f.name, fmt) for f in COMMAND_FILES for fmt in ("openai", "anthropic")]
    db = str(corpus.database)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = pool.map(
            lambda job: frs_mcp("export", corpus.sessions[job[0]], "--format", job[1], "--db", db),
            jobs,
        )
        return dict(zip(jobs, runs, strict=True))


@pytest.mark.slow
class TestCorpus:
    @pytest.mark.parametrize("file", by_file(TRANSCRIPTS))
    async def test_merged_entries_are_exactly_the_transcripts_runs(
        self, connect: Connect, corpus: Corpus, file: Path
    ) -> None:
        rows = rows_of(file)
        async with connect(database=str(corpus.database)) as client:
            view = await call_text(
                client,
                "frs_view_thread",
                merge_runs=True,
                **WHOLE,
                session_id=corpus.sessions[file.name],
            )
        entries = merged_entries(view)
        assert [(a, b) for a, b, _ in entries] == run_spans(rows)
        for first, last, lines in entries:
            span = rows[first - 1 : last]
            calls = [c["name"] for row in span for c in row.get("tool_calls") or ()]
            assert call_names(lines) == calls, f"calls of [{first}–{last}] in order"
            for number in range(first, last + 1):
                if first < last and rows[number - 1]["role"] == "tool":
                    assert any(f"M.{number}@" in line for line in lines), number
        shown = len(entries)
        assert view.rsplit("\n", 1)[1].startswith(
            f"· {len(rows)} messages in {len(rows)} entries · "
            + (f"runs merged: {len(rows)} entries shown as {shown} · " if shown < len(rows) else "")
        )

    @pytest.mark.parametrize("file", by_file(TRANSCRIPTS))
    async def test_both_exports_keep_every_call_paired_with_its_result(
        self, connect: Connect, corpus: Corpus, file: Path
    ) -> None:
        rows = rows_of(file)
        results = [row["content"] for row in rows if row["role"] == "tool"]
        calls = sum(len(row.get("tool_calls") or ()) for row in rows)
        async with connect(database=str(corpus.database)) as client:
            openai, anthropic = await exports(client, corpus.sessions[file.name])
        assert openai_results(openai) == results
        assert anthropic_results(anthropic) == [r or "(empty)" for r in results]
        assert sum(len(m.get("tool_calls") or ()) for m in openai) == calls
        unanswered = [m for m in openai if m["role"] == "tool" and m["content"] == NO_RESULT]
        assert len(unanswered) == calls - len(results), "only calls the transcript never answered"

    @pytest.mark.parametrize("file", by_file(COMMAND_FILES))
    async def test_the_command_exports_what_the_resources_give(
        self,
        connect: Connect,
        corpus: Corpus,
        command_exports: dict[tuple[str, str], Run],
        file: Path,
    ) -> None:
        async with connect(database=str(corpus.database)) as client:
            openai, anthropic = await exports(client, corpus.sessions[file.name])
        printed_openai = command_exports[file.name, "openai"]
        printed_anthropic = command_exports[file.name, "anthropic"]
        assert printed_openai.returncode == 0, printed_openai.stderr
        assert printed_anthropic.returncode == 0, printed_anthropic.stderr
        assert openai_problems(json.loads(printed_openai.stdout)) == []
        assert anthropic_problems(json.loads(printed_anthropic.stdout)) == []
        assert json.loads(printed_openai.stdout) == openai
        assert json.loads(printed_anthropic.stdout) == anthropic

    @pytest.mark.parametrize("file", by_file(TRANSCRIPTS))
    async def test_both_exports_send_the_same_unique_well_formed_call_ids(
        self, connect: Connect, corpus: Corpus, file: Path
    ) -> None:
        async with connect(database=str(corpus.database)) as client:
            openai, anthropic = await exports(client, corpus.sessions[file.name])
        assert anthropic_id_problems(anthropic) == []
        calls, results, tool_uses, tool_results = sent_ids(openai, anthropic)
        assert (calls, results) == (tool_uses, tool_results)
        recorded = [c["id"] for row in rows_of(file) for c in row.get("tool_calls") or ()]
        assert len(set(calls)) == len(calls) == len(recorded)

    async def test_after_squashing_runs_the_exports_still_validate(
        self, connect: Connect, corpus: Corpus, tmp_path: Path
    ) -> None:
        """Every other merged run of every transcript squashed by its span, newest first, on a
        copy of the corpus database; then views and both exports of every session."""
        copy = tmp_path / "squashed.db"
        with sqlite3.connect(corpus.database) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        source.close()
        target.close()
        squashed_total = 0
        async with connect(database=str(copy)) as client:
            for file in TRANSCRIPTS:
                session = corpus.sessions[file.name]
                rows = rows_of(file)
                view = await call_text(
                    client, "frs_view_thread", merge_runs=True, **WHOLE, session_id=session
                )
                spans = [(a, b) for a, b, _ in merged_entries(view) if b > a][::2]
                for first, last in reversed(spans):
                    await call_text(
                        client,
                        "frs_compress_range",
                        **{"from": first, "to": last},
                        summary=f"run {first}",
                        session_id=session,
                    )
                squashed_total += len(spans)
                after = await call_text(
                    client, "frs_view_thread", merge_runs=True, **WHOLE, session_id=session
                )
                expected = len(rows) - sum(b - a for a, b in spans)
                positions = [p for a, b, _ in merged_entries(after) for p in range(a, b + 1)]
                assert positions == list(range(1, expected + 1)), file.name
                for index, (first, last) in enumerate(spans):
                    at = first - sum(b - a for a, b in spans[:index])
                    line = f"[{at}] Summary of {last - first + 1} messages "
                    assert any(row.startswith(line) for row in after.split("\n")), (file, line)
                openai, anthropic = await exports(client, session)
                summaries = [
                    m["content"]
                    for m in openai
                    if m["role"] == "assistant"
                    and re.match(
                        r"^\[Summary of \d+ messages \(SQ\.\d+@[0-9a-f]{8}\)\] run ",
                        m["content"] or "",
                    )
                ]
                assert len(summaries) == len(spans), file.name
                kept = [
                    row["content"]
                    for number, row in enumerate(rows, start=1)
                    if row["role"] == "tool" and not any(a <= number <= b for a, b in spans)
                ]
                assert openai_results(openai) == kept, file.name
                assert anthropic_results(anthropic) == [r or "(empty)" for r in kept]
        assert squashed_total >= 12
        squashed = frs_mcp(
            "export",
            corpus.sessions[TRANSCRIPTS[-1].name],
            "--format",
            "anthropic",
            "--db",
            str(copy),
        )
        assert squashed.returncode == 0, squashed.stderr
        assert anthropic_problems(json.loads(squashed.stdout)) == []
