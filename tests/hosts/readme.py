"""The README's host snippets as a user pastes them, read at test time (tests/snippets.py), so
README and host tests cannot disagree.

The only thing a test fills in is what the user fills in: the absolute path of the installed
`frs-mcp`, here the one of the environment running the tests (the checkout's venv).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from tests.snippets import host_snippet


def frs_mcp() -> str:
    """The frs-mcp of the environment the tests run in (the checkout's venv)."""
    found = Path(sys.executable).parent / "frs-mcp"
    if found.exists():
        return str(found)
    on_path = shutil.which("frs-mcp")
    if on_path is None:
        raise AssertionError(f"no frs-mcp beside {sys.executable} nor on PATH: make .venv first")
    return on_path


def pasted(host: str) -> str:
    """The README's snippet for `host` ("Claude Code", "Codex CLI", ...) as pasted, with this
    checkout's frs-mcp as its command."""
    return host_snippet(host).installed(frs_mcp())


def parsed(host: str) -> dict[str, Any]:
    return host_snippet(host).parsed(frs_mcp())
