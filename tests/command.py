"""Running the `frs-mcp` command in a subprocess in tests, and the corpus of third-party
transcripts it imports (tests/data/corpus, with its licences and provenance)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "corpus"
# Empty if the folder is missing: the tests parametrised on it then fail at collection
# (empty_parameter_set_mark), and tests/test_corpus.py says what is missing.
TRANSCRIPTS = sorted(CORPUS.glob("*.jsonl"))


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def frs_mcp(*args: str) -> Run:
    """`frs-mcp ARGS` in a subprocess."""
    done = subprocess.run(
        [sys.executable, "-m", "server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def import_corpus(database: Path) -> dict[str, Run]:
    """`frs-mcp import` of every transcript into `database`, by file name: the first alone (it
    creates the schema), the rest two at a time (the machine has two cores)."""
    assert TRANSCRIPTS, f"no *.jsonl transcripts in {CORPUS}: the test data is missing"
    first, *rest = TRANSCRIPTS
    runs = {first.name: frs_mcp("import", str(first), "--db", str(database))}
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(lambda f: frs_mcp("import", str(f), "--db", str(database)), rest)
        runs.update(zip((f.name for f in rest), done, strict=True))
    return runs


def by_file(files: list[Path]) -> list[Any]:
    """Test parameters, one per file, named by its stem."""
    return [pytest.param(file, id=file.stem) for file in files]
