"""A finished headless host run, as every driver in tests/hosts returns it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HostRun:
    """A host's exit code and what it printed; each driver's `Run` adds how to read its output."""

    returncode: int
    stdout: str
    stderr: str

    def json_output(self, host: str) -> dict[str, Any]:
        """The one JSON object `host` printed on stdout (`claude -p`, `gemini -p`)."""
        try:
            parsed: dict[str, Any] = json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"{host} printed no JSON result: {self.describe()}") from None
        return parsed

    def describe(self) -> str:
        """The tail of both streams, for an assertion's message."""
        return (
            f"exit {self.returncode}\nstdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-4000:]}"
        )
