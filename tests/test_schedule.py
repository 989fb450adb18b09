"""The order the two workers take the test files in (tests/schedule.py, issue 23)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import schedule
from tests.dists import REPO


class Item:
    """What `heaviest_first` reads of a collected test: its node id."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


class TestHeaviestFirst:
    def test_the_heaviest_files_come_first_and_each_keeps_its_tests_in_order(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(schedule, "SECONDS", {"tests/b.py": 90, "tests/d.py": 10})
        ids = ["tests/a.py::t1", "tests/b.py::t1", "tests/c.py::T::t", "tests/b.py::t2"]
        ids += ["tests/d.py::t[x]", "tests/a.py::t2"]
        items = [Item(nodeid) for nodeid in ids]
        schedule.heaviest_first(items)  # type: ignore[arg-type]
        assert [item.nodeid for item in items] == [
            "tests/b.py::t1",
            "tests/b.py::t2",
            "tests/d.py::t[x]",
            "tests/a.py::t1",
            "tests/c.py::T::t",
            "tests/a.py::t2",
        ]

    def test_every_file_in_the_table_exists(self) -> None:
        missing = [name for name in schedule.SECONDS if not (REPO / name).is_file()]
        assert not missing, f"tests/schedule.py names files that moved or went: {missing}"

    def test_make_test_keeps_the_collection_order(self, tmp_path: Path) -> None:
        commands = subprocess.run(
            ["make", "-n", "pytest", f"VENV={tmp_path / 'venv'}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "--dist loadfile --no-loadscope-reorder" in commands


class TestTable:
    def test_the_table_sums_each_files_tests_from_a_junit_report(self, tmp_path: Path) -> None:
        report = tmp_path / "report.xml"
        report.write_text(
            '<testsuites><testsuite name="pytest">'
            '<testcase classname="tests.robust.test_load.TestLoad" name="a" time="40.4"/>'
            '<testcase classname="tests.robust.test_load.TestLoad" name="b" time="20.3"/>'
            '<testcase classname="tests.test_make" name="c" time="3.6"/>'
            '<testcase classname="tests.web.test_viewer.TestA.TestB" name="d" time="70"/>'
            '<testcase classname="tests.test_readme" name="e" time="0.2"/>'
            "</testsuite></testsuites>"
        )
        assert schedule.table(str(report)) == (
            "SECONDS: dict[str, int] = {\n"
            '    "tests/web/test_viewer.py": 70,\n'
            '    "tests/robust/test_load.py": 61,\n'
            '    "tests/test_make.py": 4,\n'
            "}"
        )
