"""Running the `frs-mcp` command in a subprocess in tests, and the corpus of third-party
transcripts it imports (tests/data/corpus, with its licences and provenance)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
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


def imported_corpus(factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Run]]:
    """`import_corpus` into a new database of this test's own, the import made once per run:
    test_import and test_export both need the whole corpus imported (two minutes of processes
    on a loaded machine), and pytest-xdist may run them in two workers at once. The first to
    come imports under a file lock, in the folder every worker of the run shares; each caller
    gets a copy, so that what one writes the other does not read."""
    base = factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / "corpus-import"
    with (shared / "corpus-import.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cache / "runs.json").exists():
            cache.mkdir(exist_ok=True)
            runs = import_corpus(cache / "frs.db")
            saved = {name: [r.returncode, r.stdout, r.stderr] for name, r in runs.items()}
            (cache / "runs.json").write_text(json.dumps(saved), encoding="utf-8")
    database = factory.mktemp("corpus") / "frs.db"
    # Every import has exited; the last to close checkpointed, but a -wal left beside the file
    # would hold data too, so it travels with it.
    for suffix in ("", "-wal"):
        if (cache / f"frs.db{suffix}").exists():
            shutil.copyfile(cache / f"frs.db{suffix}", f"{database}{suffix}")
    loaded = json.loads((cache / "runs.json").read_text(encoding="utf-8"))
    return database, {name: Run(*run) for name, run in loaded.items()}


def by_file(files: list[Path]) -> list[Any]:
    """Test parameters, one per file, named by its stem."""
    return [pytest.param(file, id=file.stem) for file in files]
