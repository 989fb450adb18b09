"""The host snippets the README gives, read at test time so README and tests cannot disagree.

A host's snippet is the first fenced block in the given language whose preceding prose (the
text since the previous block) names the host, and which holds the host's server key. The one
change a test makes is the command: a snippet that starts frs-mcp through `uvx` (or names a
bare `frs-mcp`) is pointed at the frs-mcp of the environment running the tests, which is what
the README's checkout install gives; every other word of the snippet is used as written.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
LAUNCHERS = ("uvx", "pipx")  # `uvx frs-mcp ...`, `pipx run frs-mcp ...`


def snippet(host: str, language: str, marker: str) -> str:
    """The README's `language` block for `host` that contains `marker`."""
    text = README.read_text(encoding="utf-8")
    previous_end = 0
    for block in _FENCE.finditer(text):
        prose = text[previous_end : block.start()]
        previous_end = block.end()
        if block.group(1) == language and host in prose and marker in block.group(2):
            return block.group(2)
    raise AssertionError(
        f"README.md has no ```{language} block after prose naming {host!r} that contains "
        f"{marker!r}: the host tests configure frs-mcp with the README's own snippet"
    )


def frs_mcp() -> str:
    """The frs-mcp of the environment the tests run in (the checkout's venv)."""
    found = Path(sys.executable).parent / "frs-mcp"
    if found.exists():
        return str(found)
    on_path = shutil.which("frs-mcp")
    if on_path is None:
        raise AssertionError(f"no frs-mcp beside {sys.executable} nor on PATH: make .venv first")
    return on_path


def local_command(command: str, args: list[Any]) -> tuple[str, list[Any]]:
    """`command` and `args` with frs-mcp started from this checkout's environment."""
    name = Path(command).name
    if name in LAUNCHERS:
        rest = args[1:] if args[:1] == ["run"] and name == "pipx" else args
        if not rest or rest[0] != "frs-mcp":
            raise AssertionError(f"the README runs {command} {args}: expected frs-mcp after it")
        return frs_mcp(), list(rest[1:])
    if name == "frs-mcp":
        return frs_mcp(), list(args)
    return command, list(args)
