"""Each adapter is an optional extra: without its framework, importing it says which to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("runtimes.openai_agents", "agents", "frs-mcp[openai-agents]"),
        ("runtimes.pydantic_ai", "pydantic_ai", "frs-mcp[pydantic-ai]"),
        ("runtimes.langchain", "langchain", "frs-mcp[langchain]"),
        ("runtimes.adk", "google.adk", "frs-mcp[adk]"),
    ],
)
def test_importing_an_adapter_without_its_framework_names_the_extra(
    module: str, framework: str, extra: str
) -> None:
    # `sys.modules[name] = None` makes `import name` fail as if it were not installed.
    script = f"import sys; sys.modules[{framework!r}] = None; import {module}"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: runtimes.")
    assert f"pip install '{extra}'" in last


def test_the_core_needs_no_framework() -> None:
    script = (
        "import sys; sys.modules['agents'] = sys.modules['pydantic_ai'] = None; "
        "sys.modules['langchain'] = sys.modules['google.adk'] = None; "
        "import runtimes, runtimes.core; print(runtimes.Conversation.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "Conversation"
