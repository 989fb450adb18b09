"""`server/` is rooms stacked one way: each imports only the rooms below it (docs/architecture.md).

From the top: the command (`cli`); the viewer (`web`) and the gateway (`gateway`), which know
nothing of each other; the MCP edge (`mcp`); the HTTP transports and their guards (`http`),
which serve whatever ASGI app they are handed; and the few modules every room shares, at the
package's root (`settings`, `locations`, `origin`). `server/__init__.py` (the package's face)
and `server/__main__.py` (the `frs-mcp` command) stand above them all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import server

SERVER = Path(server.__file__).parent
# The rooms, from the ground up: a room may import its own modules and those of lower floors.
FLOORS = {"root": 0, "http": 1, "mcp": 2, "web": 3, "gateway": 3, "cli": 4, "entry": 5}
ROOT_MODULES = {"settings", "locations", "origin", "internals", "stores"}
ENTRY_MODULES = {"__init__", "__main__", "entry"}


def room_of(parts: tuple[str, ...]) -> str:
    """The room of a module, from its dotted name below `server` (("mcp", "app"), ("settings",))."""
    if parts[0] in ENTRY_MODULES:
        return "entry"
    if parts[0] in ROOT_MODULES:
        return "root"
    return parts[0]  # a room, or a name the package's face hands on (`from server import X`)


def imports_of(path: Path) -> list[tuple[int, tuple[str, ...]]]:
    """(line, dotted name below `server`) for each import of a `server` module in the file;
    `from server.mcp import live` names `server.mcp.live`."""
    found: list[tuple[int, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = tuple(name.split("."))
            if parts[0] == "server" and len(parts) > 1:
                found.append((node.lineno, parts[1:]))
    return found


def upward_imports(folder: Path) -> list[str]:
    """`file:line module` for each import that reaches a room on the same floor or above."""
    wrong: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        here = room_of(path.relative_to(folder).with_suffix("").parts)
        for line, parts in imports_of(path):
            there = room_of(parts)
            if there != here and FLOORS.get(there, 99) >= FLOORS[here]:
                wrong.append(f"{path.relative_to(folder)}:{line} server.{'.'.join(parts)}")
    return wrong


class TestServerRooms:
    def test_every_module_is_in_a_room(self) -> None:
        loose = {path.stem for path in SERVER.glob("*.py")} - ROOT_MODULES - ENTRY_MODULES
        rooms = {path.name for path in SERVER.iterdir() if (path / "__init__.py").is_file()}
        assert loose == set()
        assert rooms == set(FLOORS) - {"root", "entry"}

    def test_no_import_points_up_or_across(self) -> None:
        assert upward_imports(SERVER) == []

    def test_the_check_sees_an_upward_and_a_sideways_import(self, tmp_path: Path) -> None:
        for room in ("http", "web", "gateway"):
            (tmp_path / room).mkdir()
        (tmp_path / "settings.py").write_text("from server.http import guards\n")
        (tmp_path / "http" / "guards.py").write_text("import server.settings\n")
        (tmp_path / "web" / "app.py").write_text(
            "from server.gateway.proxy import Gateway\nfrom server.http import guards\n"
        )
        (tmp_path / "gateway" / "proxy.py").write_text("from server.gateway import spans\n")
        assert upward_imports(tmp_path) == [
            "settings.py:1 server.http.guards",
            "web/app.py:1 server.gateway.proxy.Gateway",
        ]
