"""The command line (issue 10): global options before or after a command, export progress.

Users type `frs-mcp --db x.db import FILE` as often as `frs-mcp import FILE --db x.db`; both
must reach the same database. A long export reports its progress on stderr as import does,
while stdout stays exactly `json.dumps(..., indent=2)`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.cli.exporter import pieces
from server.cli.options import parser
from tests.command import Run, frs_mcp

IMPORTED = re.compile(r" into session (?P<session>[0-9a-f]+) ")


def transcript(folder: Path, count: int) -> Path:
    """A JSONL file of `count` alternating user and assistant messages."""
    file = folder / f"chat-{count}.jsonl"
    roles = ("user", "assistant")
    rows = ({"role": roles[(i - 1) % 2], "content": f"message {i}"} for i in range(1, count + 1))
    file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return file


def session_of(run: Run) -> str:
    assert run.returncode == 0, run.stderr
    found = IMPORTED.search(run.stdout)
    assert found is not None, run.stdout
    return found["session"]


class TestParsing:
    @pytest.mark.parametrize(
        "argv",
        [
            ["--db", "x.db", "import", "chat.jsonl"],
            ["import", "chat.jsonl", "--db", "x.db"],
            ["import", "--db", "x.db", "chat.jsonl"],
        ],
        ids=["before", "after", "between"],
    )
    def test_db_reaches_import_wherever_it_is_given(self, argv: list[str]) -> None:
        args = parser().parse_args(argv)
        assert (args.command, args.file, args.db) == ("import", "chat.jsonl", "x.db")

    @pytest.mark.parametrize(
        "argv",
        [
            ["--db", "x.db", "--log-level", "DEBUG", "export", "current"],
            ["export", "current", "--db", "x.db", "--log-level", "DEBUG"],
        ],
        ids=["before", "after"],
    )
    def test_db_and_log_level_reach_export_wherever_they_are_given(self, argv: list[str]) -> None:
        args = parser().parse_args(argv)
        assert (args.command, args.session, args.db, args.log_level) == (
            "export",
            "current",
            "x.db",
            "DEBUG",
        )

    def test_a_command_without_the_options_keeps_their_defaults(self) -> None:
        args = parser().parse_args(["export", "current"])
        assert (args.db, args.log_level, args.format) == (None, None, "openai")

    def test_no_command_serves_with_the_options_given(self) -> None:
        args = parser().parse_args(["--db", "x.db", "--transport", "sse"])
        assert (args.command, args.db, args.transport) == (None, "x.db", "sse")

    def test_an_unknown_log_level_after_a_command_is_refused_by_that_command(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as exited:
            parser().parse_args(["import", "chat.jsonl", "--log-level", "LOUD"])
        assert exited.value.code == 2
        assert "frs-mcp import: error: argument --log-level: invalid choice: 'LOUD'" in (
            capsys.readouterr().err
        )


@pytest.mark.slow
class TestCommands:
    def test_import_and_export_use_the_database_given_before_the_command(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "before.db"
        session = session_of(frs_mcp("--db", str(db), "import", str(transcript(tmp_path, 3))))
        run = frs_mcp("--db", str(db), "export", session)
        assert run.returncode == 0, run.stderr
        assert [m["content"] for m in json.loads(run.stdout)] == [f"message {i}" for i in (1, 2, 3)]

    def test_import_and_export_use_the_database_given_after_the_command(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "after.db"
        session = session_of(frs_mcp("import", str(transcript(tmp_path, 3)), "--db", str(db)))
        run = frs_mcp("export", session, "--format", "text", "--db", str(db))
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith('Thread "chat-3"\n[1] User: message 1\n')

    def test_log_level_after_the_command_sets_the_commands_log_level(self, tmp_path: Path) -> None:
        db = tmp_path / "frs.db"
        quiet = frs_mcp("import", str(transcript(tmp_path, 3)), "--db", str(db))
        loud = frs_mcp("export", "current", "--db", str(db), "--log-level", "INFO")
        assert quiet.stderr == "", "import and export log only warnings by default"
        assert loud.returncode == 0, loud.stderr
        assert f"INFO storage.db: database {db} opened, ready" in loud.stderr

    def test_a_long_export_reports_progress_on_stderr_and_only_the_export_on_stdout(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "frs.db"
        session = session_of(frs_mcp("import", str(transcript(tmp_path, 2_400)), "--db", str(db)))
        for fmt, unit in (("openai", "messages"), ("anthropic", "messages"), ("text", "lines")):
            run = frs_mcp("export", session, "--format", fmt, "--db", str(db))
            assert run.returncode == 0, run.stderr
            progress = re.findall(rf"^exported ([\d,]+)/([\d,]+) {unit}$", run.stderr, re.M)
            assert len(progress) == 4, run.stderr
            assert progress[-1][0] == progress[-1][1], "the last line says it is done"
            if fmt == "openai":
                assert len(json.loads(run.stdout)) == 2_400
        assert run.stdout.count("\n") == 2_400 + 2, "the title, 2,400 entries and the footer"

    def test_a_short_export_prints_no_progress(self, tmp_path: Path) -> None:
        db = tmp_path / "frs.db"
        session = session_of(frs_mcp("import", str(transcript(tmp_path, 30)), "--db", str(db)))
        run = frs_mcp("export", session, "--db", str(db))
        assert (run.returncode, run.stderr) == (0, "")


# Text a message may hold: newlines, quotes, backslashes, control characters, non-ASCII, and
# the exporter's own stand-in for the message list.
_TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.just("\x00messages\x00")
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": _TEXT},
    optional={
        "tool_calls": st.lists(
            st.fixed_dictionaries({"id": _TEXT, "function": st.dictionaries(_TEXT, _TEXT)}),
            max_size=2,
        )
    },
)


def _joined(exported: Any) -> str:
    return "".join(pieces(exported)[2])


class TestExportLayout:
    @given(messages=st.lists(_MESSAGE, max_size=8))
    def test_openai_pieces_join_to_the_json_dumps_of_the_list(
        self, messages: list[dict[str, Any]]
    ) -> None:
        assert _joined(messages) == json.dumps(messages, ensure_ascii=False, indent=2)
        assert pieces(messages)[0] == len(messages)

    @given(system=_TEXT, turns=st.lists(_MESSAGE, max_size=8))
    def test_anthropic_pieces_join_to_the_json_dumps_of_the_payload(
        self, system: str, turns: list[dict[str, Any]]
    ) -> None:
        payload = {"system": system, "messages": turns}
        assert _joined(payload) == json.dumps(payload, ensure_ascii=False, indent=2)

    @given(text=st.text(max_size=200))
    def test_text_pieces_are_its_lines(self, text: str) -> None:
        count, unit, chunks = pieces(text)
        assert ("".join(chunks), count, unit) == (text, len(text.splitlines()), "lines")
