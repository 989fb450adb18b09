"""`frs` is the pure domain: it imports no MCP, no database driver, no event loop library, and
none of our outer packages (`storage`, `server`), so a runtime can embed it alone."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import frs

FORBIDDEN = frozenset({"mcp", "aiosqlite", "sqlite3", "anyio", "storage", "server", "runtimes"})
FRS_DIR = Path(frs.__file__).parent


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
        assert {"service.py", "render.py", "ports.py"} <= names

    def test_no_module_under_frs_imports_a_forbidden_package(self) -> None:
        found = [
            hit
            for path in sorted(FRS_DIR.rglob("*.py"))
            for hit in forbidden_imports(path.read_text("utf-8"), str(path.relative_to(FRS_DIR)))
        ]
        assert found == []

    def test_importing_frs_loads_none_of_them(self) -> None:
        script = (
            "import sys, frs, frs.service, frs.views.render\n"
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


class TestTheOtherArrows:
    def test_the_edge_knows_no_database_engine(self) -> None:
        # Engine errors become frs.errors.StoreError in storage; server sees only those.
        assert package_imports("server", frozenset({"sqlite3", "aiosqlite"})) == []

    def test_storage_knows_no_protocol_and_no_edge(self) -> None:
        assert package_imports("storage", frozenset({"mcp", "server", "runtimes"})) == []

    def test_the_runtime_adapters_use_frs_and_storage_but_not_the_mcp_edge(self) -> None:
        # The adapters run inside someone's agent: the MCP server is another process.
        assert package_imports("runtimes", frozenset({"server", "mcp"})) == []

    def test_no_mcp_edge_imports_the_runtime_adapters(self) -> None:
        assert package_imports("server", frozenset({"runtimes"})) == []


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
