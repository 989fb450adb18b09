"""The README's adapter examples, as written: one ```python block under a heading naming the
framework. A test runs the block's code (not its ``__main__`` part, which would reach a real
model) and calls its ``main`` with the framework's scripted model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"


def example(heading: str) -> dict[str, Any]:
    """The names the README's example under ``### {heading}`` defines when run as a module."""
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"^### {re.escape(heading)}\n(.*?)^```python\n(.*?)^```", text, re.S | re.M)
    assert found is not None, f"README.md has no ```python block under '### {heading}'"
    assert "\n#" not in found.group(1), f"the example is not the first thing under '{heading}'"
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(found.group(2), f"README.md ({heading})", "exec"), namespace)
    return namespace
