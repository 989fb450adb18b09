"""The README's promises a newcomer acts on first: the two commands, and the runtime example."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


class TestReadme:
    def test_it_starts_with_the_two_commands_and_ci_runs_the_test_one(self) -> None:
        first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
        commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
        assert commands == ["make run", "make test"]
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
        assert ci[-1] == "make test"

    def test_the_runtime_example_runs_and_exports_a_paired_thread(self, tmp_path: Path) -> None:
        example = re.search(r"```python\n(.*?)```", README, re.S)
        assert example is not None
        code = example.group(1)
        ast.parse(code)
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        view, exported = done.stdout.split("\n[{", 1)
        assert "[1] User: test_sync fails one run in five" in view
        assert "[tool_use:bash, cmd:pytest --count 20]" in view
        messages = ast.literal_eval("[{" + exported.strip())
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[1]["content"].startswith("[Summary of 2 messages (SQ.1@")
        assert (tmp_path / "frs.db").exists()
