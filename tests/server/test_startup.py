"""A command that serves no MCP does not load the MCP SDK: importing `mcp` (and its types,
`mcp_types`) took about 0.5 s of every start, most of `frs-mcp --help`'s 0.9 s (issue 32;
BENCHMARKS.md "Start-up" measures it).

Each command runs in a fresh interpreter, which then lists the modules it loaded; serving the
gateway and the viewer is checked on the real process through `python -X importtime`, which
names every module as it is imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.command import REPO, TRANSCRIPTS

SDK = ("mcp", "mcp_types")
#: Runs `main(argv)` as `frs-mcp` would, then prints the SDK modules it loaded as its last line.
_LOADED = """
import json, sys
from server.__main__ import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in {sdk!r})
print("loaded " + json.dumps([code, loaded]), file=sys.stderr)
"""


def loaded_by(*argv: str, code: str = _LOADED) -> tuple[object, list[str]]:
    """The exit code of `frs-mcp ARGV` and the SDK modules it loaded, in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", code.format(sdk=SDK), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("loaded "), done.stderr
    exit_code, modules = json.loads(last.removeprefix("loaded "))
    return exit_code, modules


def imported_while_serving(argv: list[str], ready: str) -> list[str]:
    """The modules `python -X importtime -m server ARGV` imported until it printed `ready` on
    stderr (it is stopped then)."""
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "server", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert process.stderr is not None
    names: list[str] = []
    try:
        for line in process.stderr:
            if line.startswith("import time:"):
                names.append(line.rsplit("|", 1)[1].strip())
            elif ready in line:
                break
        else:
            raise AssertionError(f"`frs-mcp {' '.join(argv)}` ended before saying {ready!r}")
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
    return names


def of_the_sdk(names: list[str]) -> list[str]:
    return [name for name in names if name.partition(".")[0] in SDK]


class TestCommandsThatServeNoMcp:
    @pytest.mark.parametrize(
        "argv",
        [["--help"], ["gateway", "--help"], ["web", "--help"], ["import", "--help"],
         ["export", "--help"], ["--version"]],
        ids=" ".join,
    )  # fmt: skip
    def test_help_does_not_load_the_sdk(self, argv: list[str]) -> None:
        assert loaded_by(*argv) == (0, [])

    def test_import_and_export_do_not_load_the_sdk(self, tmp_path: Path) -> None:
        db = str(tmp_path / "frs.db")
        assert loaded_by("--db", db, "import", str(TRANSCRIPTS[0])) == (0, [])
        assert loaded_by("--db", db, "export", "latest", "--format", "text") == (0, [])

    @pytest.mark.slow
    def test_the_gateway_serves_without_the_sdk(self, tmp_path: Path) -> None:
        argv = ["gateway", "--port", "0", "--db", str(tmp_path / "frs.db")]
        names = imported_while_serving(argv, "frs-mcp: gateway on http://")
        assert "server.gateway.proxy" in names  # it did import what it serves with
        assert of_the_sdk(names) == []

    @pytest.mark.slow
    def test_the_viewer_serves_without_the_sdk(self, tmp_path: Path) -> None:
        db = str(tmp_path / "frs.db")
        assert loaded_by("--db", db, "import", str(TRANSCRIPTS[0]))[0] == 0
        names = imported_while_serving(["web", "--port", "0", "--db", db], "(read-only) at http")
        assert "server.web.app" in names
        assert of_the_sdk(names) == []


class TestTheCheckItself:
    def test_serving_mcp_loads_the_sdk_and_the_check_sees_it(self) -> None:
        # The MCP server is built (not run): what `frs-mcp` does before it serves.
        built = "from server import Settings, build_server\nbuild_server(Settings())\ncode = 0"
        code = _LOADED.replace(
            "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code",
            built,
        )
        exit_code, modules = loaded_by(code=code)
        assert exit_code == 0
        assert "mcp" in modules
        assert "mcp_types" in modules

    @pytest.mark.slow
    def test_importtime_names_the_sdk_when_stdio_serving_loads_it(self, tmp_path: Path) -> None:
        argv = ["--db", str(tmp_path / "frs.db"), "--log-level", "INFO"]
        names = imported_while_serving(argv, "serving MCP over stdio")
        assert "mcp" in of_the_sdk(names)
