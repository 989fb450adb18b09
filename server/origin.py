"""Refuse to run with someone else's `frs`, `storage` or `server` package.

frs-mcp installs four top-level packages with common names. Another distribution that ships
one of them either overwrote our files in site-packages, or comes earlier on sys.path; either
way frs-mcp would die far from the cause (`cannot import name 'Database' from 'storage'`) or
run someone else's code. So importing this module checks, before anything imports `storage`,
that each of the four is ours: it lies beside this file's package, and its `__init__.py`
carries our `__distribution__` marker. If not, it names the other distribution and the fix on
stderr and exits with status 2. `server/__init__.py` and `server/__main__.py` import it first.

It imports nothing of ours, and reads the other package's files without running them.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

DISTRIBUTION = "frs-mcp"
PACKAGES = ("frs", "storage", "server", "runtimes")
FIX = (
    "Install frs-mcp in an environment of its own: in its source checkout, `uv tool install .` "
    "or `pipx install .` makes one."
)
_MARKER = re.compile(r'^__distribution__ = "frs-mcp"$', re.MULTILINE)
_ROOT = Path(__file__).resolve().parents[1]  # where our four packages sit side by side


def _origin(name: str) -> Path | None:
    """The `__init__.py` that `import name` loads (or loaded), without importing it."""
    module = sys.modules.get(name)
    if module is not None:
        file = getattr(module, "__file__", None)
    else:
        spec = importlib.util.find_spec(name)
        file = spec.origin if spec is not None and spec.has_location else None
    return Path(file).resolve() if file else None


def _is_ours(name: str, origin: Path | None) -> bool:
    if origin != _ROOT / name / "__init__.py":
        return False
    try:
        return _MARKER.search(origin.read_text(encoding="utf-8")) is not None
    except (OSError, UnicodeDecodeError):
        return False


def foreign_packages() -> dict[str, Path | None]:
    """Each of our package names whose import is not ours, with the `__init__.py` Python
    finds for it (None: none, or a namespace package)."""
    found = {name: _origin(name) for name in PACKAGES}
    return {name: origin for name, origin in found.items() if not _is_ours(name, origin)}


def _claimants(name: str) -> list[str]:
    """The installed distributions other than ours that ship a top-level `name`."""
    from importlib.metadata import packages_distributions  # only on the error path: it is slow

    ours = DISTRIBUTION.replace("-", "_").lower()
    shipped = packages_distributions().get(name, [])
    return sorted({d for d in shipped if d.replace("-", "_").lower() != ours})


def explain(foreign: dict[str, Path | None]) -> str:
    """What is wrong, who else ships the package, and the fix."""
    lines = []
    for name, origin in foreign.items():
        where = f"at {origin.parent}" if origin else "(a folder with no __init__.py)"
        others = ", ".join(repr(d) for d in _claimants(name))
        who = f"the distribution {others} ships one too" if others else "no distribution claims it"
        lines.append(f"frs-mcp: the package {name!r} {where} is not frs-mcp's; {who}.")
    lines.append(
        "frs-mcp: frs-mcp cannot share a Python environment with a distribution that has a "
        f"top-level package of the same name. {FIX}"
    )
    return "\n".join(lines)


def refuse_foreign_packages() -> None:
    """Exit with status 2 and the explanation on stderr if any of our packages is not ours."""
    foreign = foreign_packages()
    if foreign:
        print(explain(foreign), file=sys.stderr)
        raise SystemExit(2)


refuse_foreign_packages()
