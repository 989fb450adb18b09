"""The viewer under test: `frs-mcp web` in a subprocess on a free port of 127.0.0.1."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.command import REPO

_URL = re.compile(r"at (http://127\.0\.0\.1:[0-9]+)/")


@contextmanager
def viewer(database: Path, *flags: str) -> Iterator[str]:
    """Run `frs-mcp web --db DATABASE --port 0` and yield its base URL; stop it after."""
    with viewer_process(database, *flags) as (base, _):
        yield base


@contextmanager
def viewer_process(database: Path, *flags: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`viewer`, yielding the process too, whose stderr (past the line with its URL) is the
    log."""
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "web", "--db", str(database), "--port", "0", *flags],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        # The log (INFO when serving) may come first: PostgreSQL's "ready" line.
        lines: list[str] = []
        found = None
        while found is None and (line := process.stderr.readline()):
            lines.append(line)
            found = _URL.search(line)
        assert found, f"the viewer did not start: {''.join(lines)}"
        yield found.group(1), process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
