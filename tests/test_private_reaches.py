"""Only each package's `internals.py` reaches into a library's private members.

A reach is a `_private` attribute read off something other than `self` or `cls` (`x._y`), or
one named to `getattr`, `setattr`, `hasattr` or `delattr` (`getattr(x, "_y")`). Every package of
ours is checked (`frs`, `storage`, `server`, `runtimes`); a package that needs a reach keeps it
in its own `internals.py`, with the release it was written against and a test that names what
changed when an upgrade breaks it (`tests/server/test_internals.py`,
`tests/storage/test_internals.py`, `tests/runtimes/test_internals.py`).
"""

from __future__ import annotations

import ast

import pytest

from tests.dists import REPO

PACKAGES = ("frs", "storage", "server", "runtimes")
#: Our own classes' privates, read by a sibling instance: server.http.sockets, one guarded
#: socket closing another.
OURS = frozenset({"_disarm", "_refuse"})
#: argparse's subparsers and groups have no public type.
PASSED = frozenset({"self", "cls", "argparse"})
_NAMED = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in OURS


def private_reaches(source: str, filename: str) -> list[str]:
    """`file:line name` for each reach of `source` into a private member (module docstring)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in PASSED):
                found.append(f"{filename}:{node.lineno} {node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _NAMED
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append(f"{filename}:{node.lineno} {node.args[1].value}")
    return sorted(found, key=lambda hit: (hit.split(":")[0], int(hit.split(":")[1].split()[0])))


class TestOnlyInternalsReach:
    @pytest.mark.parametrize("package", PACKAGES)
    def test_no_module_but_internals_reads_a_private_member_of_another_object(
        self, package: str
    ) -> None:
        root = REPO / package
        found = [
            hit
            for path in sorted(root.rglob("*.py"))
            if path != root / "internals.py" and "__pycache__" not in path.parts
            for hit in private_reaches(path.read_text("utf-8"), str(path.relative_to(REPO)))
        ]
        assert found == []

    def test_the_check_sees_a_reach_and_lets_self_pass(self) -> None:
        source = "x = mcp._lowlevel_server\ny = self._mine\nz = a.b._c\nw = cls._d\n"
        assert private_reaches(source, "f.py") == ["f.py:1 _lowlevel_server", "f.py:3 _c"]

    def test_the_check_sees_a_reach_by_name_and_lets_dunders_pass(self) -> None:
        source = (
            'a = getattr(conn, "_thread", None)\n'
            'b = getattr(module, "__file__", None)\n'
            'c = hasattr(threading, "_register_atexit")\n'
            'd = getattr(x, "public")\n'
        )
        assert private_reaches(source, "f.py") == ["f.py:1 _thread", "f.py:3 _register_atexit"]

    def test_the_reaches_it_allows_are_in_internals_modules_only(self) -> None:
        holders = [
            str(path.relative_to(REPO))
            for package in PACKAGES
            for path in sorted((REPO / package).rglob("*.py"))
            if "__pycache__" not in path.parts
            and private_reaches(path.read_text("utf-8"), str(path))
        ]
        assert holders == ["storage/internals.py", "server/internals.py", "runtimes/internals.py"]
