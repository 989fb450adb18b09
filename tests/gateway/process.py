"""`frs-mcp gateway` in a subprocess, for what only a real process shows: its exit status on a
signal, its log lines, its memory and open files.

`gateway_process` starts it on a free port of 127.0.0.1 in front of an upstream the test
serves, waits for the line that says where it listens, and keeps draining its stderr (so a
chatty log never blocks it); the block's end stops it with SIGTERM if it still runs.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.command import REPO

_LISTENING = re.compile(r"gateway on (http://127\.0\.0\.1:[0-9]+) ")


@dataclass
class GatewayProcess:
    proc: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)
    _done: threading.Event = field(default_factory=threading.Event)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = _LISTENING.search(line)
            if found:
                self.url = found.group(1)
                self._ready.set()
        self._done.set()
        self._ready.set()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig`, wait for the exit and the end of stderr; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self._done.wait(60)
        return code

    def status(self, field_name: str) -> int:
        """A figure of /proc/PID/status in kB (VmRSS, VmHWM: the peak resident memory)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
        raise KeyError(field_name)

    def open_files(self) -> int:
        return len(list(Path(f"/proc/{self.pid}/fd").iterdir()))


@contextmanager
def gateway_process(database: Path, upstream: str, *flags: str) -> Iterator[GatewayProcess]:
    """`frs-mcp gateway --db DATABASE --port 0` with both upstreams at `upstream`."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "server",
            "gateway",
            "--db",
            str(database),
            "--port",
            "0",
            "--anthropic-upstream",
            upstream,
            "--openai-upstream",
            upstream,
            *flags,
        ],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    gateway = GatewayProcess(proc)
    threading.Thread(target=gateway._drain, daemon=True).start()
    try:
        gateway._ready.wait(60)
        assert gateway.url, f"the gateway did not start:\n{gateway.stderr}"
        yield gateway
    finally:
        gateway.stop()
        if proc.stderr is not None:
            proc.stderr.close()
