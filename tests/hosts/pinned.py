"""The agent hosts pinned in tests/hosts/package.json and package-lock.json, and how to run each.

`install()` runs `npm ci --ignore-scripts` into .cache/npm-hosts once per lock file (the same
installer as the independent MCP clients, tests/clients/npm.py). No install script runs, so the
hosts that ship a native binary in a per-platform package (Claude Code, OpenCode) are run from
that package directly, where their postinstall would have copied it; Codex's and Gemini CLI's
JavaScript entry points run on the pinned Node. Anything missing raises `npm.NodeMissing` naming
the fix; the tests turn it into a failure, never a skip.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

from tests.clients import npm

HERE = Path(__file__).parent
CACHE = npm.ROOT / ".cache" / "npm-hosts"

_OS = {"linux": "linux", "darwin": "darwin", "win32": "win32"}
_CPU = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def install() -> Path:
    """The folder holding node_modules with the four pinned hosts."""
    return npm.install(HERE, CACHE)


def _machine() -> tuple[str, str]:
    return (
        _OS.get(sys.platform, sys.platform),
        _CPU.get(platform.machine().lower(), platform.machine()),
    )


def _native(root: Path, package: str, binary: str, host: str) -> list[str]:
    path = root / "node_modules" / package / binary
    if not path.exists():
        raise npm.NodeMissing(
            f"{host}: no native binary at {path}; npm installs the package {package} only where "
            f"its os and cpu match this machine ({'/'.join(_machine())}), and the lock pins it"
        )
    return [str(path)]


def claude(root: Path) -> list[str]:
    """The command that runs Claude Code (its native binary for this machine)."""
    os_name, cpu = _machine()
    return _native(root, f"@anthropic-ai/claude-code-{os_name}-{cpu}", "claude", "Claude Code")


def opencode(root: Path) -> list[str]:
    """The command that runs OpenCode (its native binary for this machine)."""
    os_name, cpu = _machine()
    os_name = "windows" if os_name == "win32" else os_name
    return _native(root, f"opencode-{os_name}-{cpu}", "bin/opencode", "OpenCode")


def codex(root: Path) -> list[str]:
    """The command that runs Codex CLI (its launcher finds the native binary it ships)."""
    return [npm.node(root), str(npm.command(root, "codex"))]


def gemini(root: Path) -> list[str]:
    """The command that runs Gemini CLI (a JavaScript bundle) on the pinned Node."""
    return [npm.node(root), str(npm.command(root, "gemini"))]
