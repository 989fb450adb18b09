"""A real `frs-mcp` process serving HTTP on an ephemeral port of 127.0.0.1, for tests.

The server picks its port (`--port 0`) and prints its URLs to stderr; `FrsProcess` waits for
them, keeps draining stderr (so a chatty server never blocks on a full pipe), and stops the
process with SIGTERM on exit.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

FRS_MCP = str(Path(sys.executable).with_name("frs-mcp"))
TOKEN = "test-token-0123456789"
STARTUP_TIMEOUT = 60.0
_URL_LINE = re.compile(r"^frs-mcp: (Streamable HTTP|SSE|web viewer|health)\s+(http://\S+)$")


def server_env(**extra: str) -> dict[str, str]:
    """The test's environment without FRS_* variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRS_")}
    return {**env, **extra}


@dataclass
class FrsProcess:
    proc: subprocess.Popen[str]
    urls: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)
    _done: threading.Event = field(default_factory=threading.Event)

    @property
    def mcp_url(self) -> str:
        return self.urls["Streamable HTTP"]

    @property
    def sse_url(self) -> str:
        return self.urls["SSE"]

    @property
    def health_url(self) -> str:
        return self.urls["health"]

    @property
    def port(self) -> int:
        return int(self.health_url.rsplit(":", 1)[1].split("/", 1)[0])

    @property
    def base(self) -> str:
        return self.health_url.rsplit("/", 1)[0]

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = _URL_LINE.match(line.rstrip("\n"))
            if found:
                self.urls[found[1]] = found[2]
                if found[1] == "health":
                    self._ready.set()
        self._done.set()
        self._ready.set()

    def wait_ready(self) -> None:
        if not self._ready.wait(STARTUP_TIMEOUT) or "health" not in self.urls:
            self.stop()
            raise RuntimeError(f"frs-mcp did not start:\n{self.stderr}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send `sig`, wait for the exit and the end of stderr; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self._done.wait(timeout)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        return code

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)


@contextmanager
def frs_http(
    db: Path | str, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[FrsProcess]:
    """Run `frs-mcp --db DB --port 0 ARGS...` until the block ends (then SIGTERM)."""
    proc = subprocess.Popen(
        [FRS_MCP, "--db", str(db), "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env) if env is not None else server_env(),
    )
    server = FrsProcess(proc)
    threading.Thread(target=server._drain, daemon=True).start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()
