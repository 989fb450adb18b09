"""Independent MCP clients from the npm registry, pinned in package.json and package-lock.json.

The first test that needs them installs them into `.cache/npm-clients` (see tests/clients/npm.py,
which also picks the Node they run on: the system one if recent enough, else the pinned Node
package for this platform). If Node, npm or the registry cannot be reached, the tests fail and
say what to install: they never skip.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clients import npm

HERE = Path(__file__).parent


@dataclass(frozen=True)
class NodeClients:
    """Where the pinned clients live, and the Node (22.19 or later) that runs them."""

    root: Path
    node: str

    def package(self, name: str) -> Path:
        return self.root / "node_modules" / name

    def env(self, home: Path) -> dict[str, str]:
        """A clean environment: no FRS_* variables; HOME and the Inspector's catalog in `home`,
        so nothing is written to the user's home directory."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRS_")}
        return {**env, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "catalog.json")}


@pytest.fixture(scope="session")
def node_clients() -> NodeClients:
    try:
        root = npm.install()
        node = npm.node(root)
    except npm.NodeMissing as exc:
        pytest.fail(f"the independent MCP clients cannot run: {exc}")
    for script in HERE.glob("*.mjs"):
        # ES modules resolve packages from their own folder, so the scripts run from the cache.
        # Written aside and renamed: another worker's node may be reading the copy already.
        aside = root / f".{script.name}.{os.getpid()}"
        shutil.copyfile(script, aside)
        os.replace(aside, root / script.name)
    return NodeClients(root, node)
