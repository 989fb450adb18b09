"""docs/architecture.md stays true as the code moves: every path and dotted name it cites
exists, every module of our four packages is named in it, and its error tree (with the one in
`frs/errors.py`'s docstring) is the tree the code defines.

The document's conventions, which these tests read: a backticked `pkg/…` path is from the
repository's root; under a `### \\`pkg/\\`` heading, a backticked `name.py` or `dir/` is inside
that package; a backticked `frs.x.y` is a module and then, optionally, a name defined in it
(and a name defined in that class).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import frs.errors
from tests.dists import REPO

DOC = REPO / "docs" / "architecture.md"
PACKAGES = ("frs", "storage", "server", "runtimes")
ROOTED = re.compile(r"^(?:frs|storage|server|runtimes|tests|docs|bench|scripts)/[\w./-]*$")
RELATIVE = re.compile(r"^\w+(?:/\w+)*(?:\.py|/)$")
DOTTED = re.compile(r"^(?:frs|storage|server|runtimes)(?:\.\w+)+$")
SECTION = re.compile(r"^### `(\w+)/`$")
FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)


def cited(text: str) -> Iterator[tuple[str | None, str]]:
    """Every backticked token outside code blocks, with the package section it sits in."""
    section: str | None = None
    for line in FENCE.sub("", text).splitlines():
        if line.startswith("#"):
            heading = SECTION.match(line)
            section = heading.group(1) if heading else None
            continue
        for token in re.findall(r"`([^`\n]+)`", line):
            yield section, token


def module_file(parts: list[str]) -> Path | None:
    """The file of module `parts` (a package's `__init__.py`), or None."""
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defined(body: list[ast.stmt], name: str) -> ast.stmt | None:
    """The statement of `body` that defines `name` (a def, a class, an assignment, an import)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.target.id == name:
                return node
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return node
    return None


def resolve_dotted(name: str) -> tuple[Path | None, str]:
    """The module file a dotted name starts with, and what of it could not be found ('')."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        file = module_file(parts[:cut])
        if file is None:
            continue
        body: list[ast.stmt] = ast.parse(file.read_text("utf-8")).body
        for attribute in parts[cut:]:
            node = defined(body, attribute)
            if node is None:
                return file, attribute
            body = node.body if isinstance(node, ast.ClassDef) else []
        return file, ""
    return None, name


def named_paths(text: str) -> tuple[set[Path], list[str]]:
    """The files and folders the document names, and what it names that does not exist."""
    found: set[Path] = set()
    missing: list[str] = []
    for section, token in cited(text):
        if ROOTED.match(token):
            path = REPO / token
        elif section is not None and RELATIVE.match(token):
            path = REPO / section / token
        elif DOTTED.match(token):
            file, unknown = resolve_dotted(token)
            if file is None or unknown:
                missing.append(f"{token} ({unknown!r} not found)")
            else:
                found.add(file)
            continue
        else:
            continue
        if path.exists():
            found.add(path.resolve() if path.is_dir() else path)
        else:
            missing.append(f"{token} (no {path.relative_to(REPO)})")
    return found, missing


def our_modules() -> list[Path]:
    """Every module and subpackage of our four packages (an `__init__.py` stands for its
    folder, which the document names instead)."""
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            found.append(path.parent if path.name == "__init__.py" else path)
    return [path for path in found if path != REPO / path.name]


def error_tree(lines: list[str]) -> dict[str, str]:
    """Each error of a drawn tree with its parent: `├── Parent  Child, Child` lines, a
    child list continued on `│` lines, `FrsError` at the root."""
    parents: dict[str, str] = {}
    group = ""
    for line in lines:
        names = re.findall(r"\b[A-Z][A-Za-z]+\b", line.split("(")[0])
        if not names:
            continue
        if "──" in line:
            group = names[0]
            parents[group] = "FrsError"
            names = names[1:]
        elif not group:
            parents.update(dict.fromkeys(names, ""))  # the root
            continue
        parents.update(dict.fromkeys(names, group))
    return parents


def code_errors() -> dict[str, str]:
    return {
        name: cls.__mro__[1].__name__ if cls is not frs.errors.FrsError else ""
        for name, cls in vars(frs.errors).items()
        if isinstance(cls, type)
        and issubclass(cls, frs.errors.FrsError)
        and cls.__module__ == frs.errors.__name__
    }


class TestTheDocument:
    def test_every_path_and_dotted_name_it_cites_exists(self) -> None:
        _, missing = named_paths(DOC.read_text("utf-8"))
        assert missing == []

    def test_every_module_of_our_packages_is_named(self) -> None:
        named, _ = named_paths(DOC.read_text("utf-8"))
        unnamed = [str(path.relative_to(REPO)) for path in our_modules() if path not in named]
        assert unnamed == [], "name these in docs/architecture.md, in the room they belong to"

    def test_its_error_tree_is_the_code_s(self) -> None:
        text = DOC.read_text("utf-8")
        block = next(b for b in FENCE.findall(text) if "FrsError" in b)
        assert error_tree(block.splitlines()[1:-1]) == code_errors()

    def test_the_tree_in_the_errors_docstring_is_the_code_s(self) -> None:
        docstring = frs.errors.__doc__ or ""
        drawn = [line for line in docstring.splitlines() if line.startswith("    ")]
        assert error_tree(drawn) == code_errors()


class TestTheReader:
    """The reader itself: a test of the document is only as good as what it notices."""

    TEXT = (
        "`frs/model.py` and `nowhere/x.py`\n"
        "### `storage/`\n"
        "`db.py`, `postgres/`, `gone.py`, `frs.mutation.mutation`, `frs.mutation.nothing`,\n"
        "`frs.ports.Store.newest_entries`, `frs.ports.Store.nothing`\n"
        "```\n`frs/inside_a_block.py`\n```\n"
        "## Elsewhere\n"
        "`db.py`\n"
    )

    def test_it_resolves_rooted_relative_and_dotted_names(self) -> None:
        found, _ = named_paths(self.TEXT)
        assert {
            REPO / "frs/model.py",
            REPO / "storage/db.py",
            (REPO / "storage/postgres").resolve(),
            REPO / "frs/mutation.py",
            REPO / "frs/ports.py",
        } <= found

    def test_it_reports_what_does_not_exist_and_skips_code_blocks(self) -> None:
        _, missing = named_paths(self.TEXT)
        assert missing == [
            "gone.py (no storage/gone.py)",
            "frs.mutation.nothing ('nothing' not found)",
            "frs.ports.Store.nothing ('nothing' not found)",
        ]

    @pytest.mark.parametrize(
        ("lines", "tree"),
        [
            (
                ["FrsError", "├── NotFound   Gone, Lost", "│       Missing (why)", "└── Lone"],
                {
                    "FrsError": "",
                    "NotFound": "FrsError",
                    "Gone": "NotFound",
                    "Lost": "NotFound",
                    "Missing": "NotFound",
                    "Lone": "FrsError",
                },
            ),
        ],
    )
    def test_it_reads_a_drawn_error_tree(self, lines: list[str], tree: dict[str, str]) -> None:
        assert error_tree(lines) == tree
