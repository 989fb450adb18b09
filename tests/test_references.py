"""Every document the project's own files cite exists in the repository (issue 23: the
pyproject and a test docstring cited a design document the repository does not have)."""

from __future__ import annotations

import re
import subprocess

from tests.dists import REPO

# Upper-case document names (README.md, BENCHMARKS.md) and paths under docs/.
CITED = re.compile(r"\b(?:docs/[A-Za-z0-9_-]+|[A-Z][A-Z_]+)\.md\b")


def tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    # Third-party transcripts and npm lock files quote their own projects' files.
    return [
        path
        for path in listed
        if not path.startswith("tests/data/") and not path.endswith("package-lock.json")
    ]


def test_every_cited_document_exists() -> None:
    files = tracked()
    names = {path.rsplit("/", 1)[-1] for path in files} | set(files)
    missing = []
    for path in files:
        try:
            text = (REPO / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary (screenshots), or deleted but not yet committed
        missing += [f"{path}: {name}" for name in CITED.findall(text) if name not in names]
    assert missing == []
