"""Tool annotations on real Claude Code transcripts (corpus 09 and 10), imported by the real
`frs-mcp import` and viewed through MCP: each call shows the argument that tells what it did
(an Edit its file, never `replace_all`), and a path keeps its file name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.calls import call_text
from tests.command import TRANSCRIPTS, by_file, frs_mcp
from tests.conftest import Connect

pytestmark = pytest.mark.slow

CLAUDE_CODE = [file for file in TRANSCRIPTS if file.name.startswith(("09_", "10_"))]
# The argument each Claude Code tool's annotation shows.
TELLING = {
    "Edit": "file_path",
    "Read": "file_path",
    "Write": "file_path",
    "Bash": "command",
    "Glob": "pattern",
    "TodoWrite": "todos",
    "Task": "description",
}
ANNOTATION = re.compile(r"^    \[tool_use:(\w+), (\w+):(.*?)(?:, [\d,]+ chars · M\.\d+@\w+)?\]$")


def calls_in(file: Path) -> list[tuple[str, dict[str, object]]]:
    """(name, arguments) of every tool call in a transcript, in order."""
    found = []
    for line in file.read_text(encoding="utf-8").splitlines():
        for call in json.loads(line).get("tool_calls") or []:
            arguments = call["arguments"]
            found.append(
                (call["name"], json.loads(arguments) if isinstance(arguments, str) else arguments)
            )
    return found


class TestClaudeCodeAnnotations:
    @pytest.mark.parametrize("file", by_file(CLAUDE_CODE))
    async def test_every_call_shows_its_telling_argument_and_a_path_its_tail(
        self, connect: Connect, tmp_path: Path, file: Path
    ) -> None:
        database = tmp_path / "frs.db"
        run = frs_mcp("import", str(file), "--db", str(database))
        assert run.returncode == 0, run.stderr
        async with connect(database=str(database)) as client:
            view = await call_text(client, "frs_view_thread", **{"from": 1})
        shown = [found.groups() for line in view.split("\n") if (found := ANNOTATION.match(line))]
        calls = calls_in(file)
        assert [(name, key) for name, key, _ in shown] == [
            (name, TELLING[name]) for name, _ in calls
        ]
        assert "replace_all" not in view
        edits = 0
        for (name, key, value), (_, arguments) in zip(shown, calls, strict=True):
            if key != "file_path":
                continue
            path = str(arguments["file_path"])
            assert value == path or (value.startswith("…/") and path.endswith(value[1:])), value
            assert value.endswith("/" + path.rsplit("/", 1)[1])
            edits += name == "Edit"
        assert edits == sum(name == "Edit" for name, _ in calls) > 0
