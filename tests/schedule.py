"""The order in which the two pytest-xdist workers take the test files: the heaviest first.

`make test` runs `-n 2 --dist loadfile --no-loadscope-reorder`: each file goes whole to one
worker (its module fixtures built once), in collection order, and a worker takes the next file
when it is free. xdist's own order (the files with the most tests first) left the files of a few
long tests (real hosts, load, crash, the instances behind haproxy) to the end, where one worker
ran them while the other had nothing left. Heaviest first, the short files fill in at the end
and both workers finish within a few seconds of each other.

`SECONDS` holds what each file took in one whole run on the project's 2-core machine (setup,
call and teardown of its tests; other jobs kept it busy, so only the order of the figures
matters). A file not listed weighs nothing and keeps its place among the others. The order
changes how long the run takes, never what it tests; `python -m tests.schedule REPORT.xml`
prints the table again from a run's `pytest --junitxml=REPORT.xml`.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence

import pytest

SECONDS: dict[str, int] = {}


def heaviest_first(items: list[pytest.Item]) -> None:
    """Sort `items` by their file's weight, heaviest first; a stable sort, so the tests of a
    file and the files of equal weight keep their collection order."""
    items.sort(key=lambda item: -SECONDS.get(item.nodeid.split("::", 1)[0], 0))


def table(report: str, top: int = 60) -> str:
    """`SECONDS` as Python source, from a JUnit XML report (a test's `time` is its setup, call
    and teardown): the `top` heaviest files of at least one second."""
    per_file: defaultdict[str, float] = defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        while module and module[-1][:1].isupper():  # the test's class, not its file
            module.pop()
        per_file["/".join(module) + ".py"] += float(case.get("time", "0"))
    heavy = sorted(per_file.items(), key=lambda kv: -kv[1])[:top]
    rows = "".join(f'    "{name}": {round(took)},\n' for name, took in heavy if took >= 1)
    return "SECONDS: dict[str, int] = {\n" + rows + "}"


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.schedule REPORT.xml (pytest --junitxml)", file=sys.stderr)
        return 2
    print(table(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
