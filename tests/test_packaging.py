"""What the package index and installers get (issue 10): the sdist, and the wheel built from it.

Both are built offline with the test venv's hatchling, then checked the way a release would be:
`twine check --strict` (the metadata and README render on the index) and `check-wheel-contents`
(no stray files, the four top-level packages pyproject declares).
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from email.parser import Parser

import pytest

from tests.command import TRANSCRIPTS
from tests.dists import REPO, Dists, build, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    return build(tmp_path_factory.mktemp("dist"))


def sdist_names(dists: Dists) -> set[str]:
    """The sdist's paths without the `frs_mcp-0.1.0/` folder they sit in."""
    with tarfile.open(dists.sdist) as archive:
        return {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}


def wheel_names(dists: Dists) -> set[str]:
    with zipfile.ZipFile(dists.wheel) as archive:
        return set(archive.namelist())


class TestDistributions:
    def test_twine_check_passes_on_the_sdist_and_the_wheel(self, dists: Dists) -> None:
        done = run(sys.executable, "-m", "twine", "check", "--strict", dists.sdist, dists.wheel)
        assert done.stdout.count("PASSED") == 2, done.stdout

    def test_check_wheel_contents_passes(self, dists: Dists) -> None:
        # From the repository, so it reads [tool.check-wheel-contents] in pyproject.toml.
        done = run(sys.executable, "-m", "check_wheel_contents", dists.wheel, cwd=REPO)
        assert done.stdout.strip().endswith(": OK"), done.stdout

    def test_the_wheel_holds_our_four_packages_and_its_metadata_only(self, dists: Dists) -> None:
        names = wheel_names(dists)
        assert {name.split("/", 1)[0] for name in names} == {
            "frs",
            "storage",
            "server",
            "runtimes",
            "frs_mcp-0.1.0.dist-info",
        }
        assert {
            "frs/py.typed",
            "storage/py.typed",
            "server/py.typed",
            "runtimes/py.typed",
        } <= names
        assert "frs_mcp-0.1.0.dist-info/licenses/LICENSE" in names
        assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]

    def test_the_sdist_holds_the_tests_and_their_data(self, dists: Dists) -> None:
        names = sdist_names(dists)
        corpus = {f"tests/data/corpus/{file.name}" for file in TRANSCRIPTS}
        assert len(corpus) == 12
        assert corpus <= names
        assert {
            "tests/data/corpus/manifest.json",
            "tests/data/corpus/README.md",
            "tests/test_corpus.py",
            "pyproject.toml",
            "LICENSE",
            "README.md",
            "Makefile",
            "scripts/preflight",
            "mcp.json",
            "server.json",
            "manifest.json",
            ".mcpbignore",
        } <= names
        assert not [n for n in names if n.startswith((".venv/", ".cache/", "dist/", "build/"))]

    def test_the_metadata_gives_licence_authors_keywords_and_classifiers(
        self, dists: Dists
    ) -> None:
        with zipfile.ZipFile(dists.wheel) as archive:
            text = archive.read("frs_mcp-0.1.0.dist-info/METADATA").decode()
        metadata = Parser().parsestr(text)
        assert metadata["Name"] == "frs-mcp"
        assert metadata["License-Expression"] == "MIT"
        assert metadata.get_all("License-File") == ["LICENSE"]
        assert metadata["Author"] == "frs-mcp authors"
        assert "mcp" in metadata["Keywords"].split(",")
        assert "Programming Language :: Python :: 3.11" in (metadata.get_all("Classifier") or [])
        assert metadata["Description-Content-Type"] == "text/markdown"
        licence = (REPO / "LICENSE").read_text(encoding="utf-8").splitlines()
        assert licence[:3] == ["MIT License", "", "Copyright (c) 2026 the frs-mcp authors"]
