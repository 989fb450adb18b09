"""The repository carries its own test data: twelve transcripts, each with provenance and licence.

A clone must pass `make test` on its own, so nothing the tests or benchmarks read may live
outside it, and a missing file must fail the run rather than shrink it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.command import CORPUS, REPO, TRANSCRIPTS

EXPECTED_FILES = 12
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
# What a path to the workspace's shared folder looks like, spelled in pieces so that this file
# does not match itself.
_OUTSIDE = ("../" + "shared", "shared" + "/corpus", '"shared" / ' + '"corpus"')


def _manifest() -> dict[str, dict[str, Any]]:
    """The provenance entries of manifest.json, by file name."""
    data = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    return {entry["file"]: entry for entry in data["transcripts"]}


def _licence_texts(repo: str) -> list[Path]:
    """The licence texts (or the note standing in for a missing one) of `owner/name`."""
    return sorted((CORPUS / "LICENSES").glob(repo.replace("/", "__") + ".*"))


class TestCorpus:
    def test_the_twelve_transcripts_are_in_the_repository(self) -> None:
        assert len(TRANSCRIPTS) == EXPECTED_FILES, f"expected {EXPECTED_FILES} in {CORPUS}"
        assert all(file.stat().st_size > 0 for file in TRANSCRIPTS)

    def test_every_transcript_has_its_provenance(self) -> None:
        entries = _manifest()
        assert sorted(entries) == [file.name for file in TRANSCRIPTS]
        for name, entry in entries.items():
            source = entry["source"]
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", source["repo"]), name
            assert _COMMIT.match(source["commit"]), name
            assert source["path"], name
            assert source["license"].startswith(("MIT", "Apache-2.0")), name

    def test_every_source_repository_has_its_licence_text_beside_the_data(self) -> None:
        for name, entry in _manifest().items():
            texts = _licence_texts(entry["source"]["repo"])
            assert texts, f"{name}: no licence text for {entry['source']['repo']} in LICENSES/"
            assert all(text.stat().st_size > 0 for text in texts)

    def test_the_readme_says_what_the_files_are_and_where_they_come_from(self) -> None:
        readme = (CORPUS / "README.md").read_text(encoding="utf-8")
        for entry in _manifest().values():
            assert entry["source"]["repo"] in readme
            assert entry["source"]["commit"] in readme

    @pytest.mark.parametrize("folder", ["tests", "bench", ".ci"])
    def test_nothing_reads_data_from_outside_the_repository(self, folder: str) -> None:
        files = [p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in {".py", ""}]
        offenders = [
            f"{p.relative_to(REPO)}: {needle}"
            for p in [*files, REPO / "Makefile"]
            if "data" not in p.relative_to(REPO).parts
            for needle in _OUTSIDE
            if needle in p.read_text(encoding="utf-8", errors="replace")
        ]
        assert not offenders
