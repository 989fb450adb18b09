"""The frs-mcp server as a client meets it: a real subprocess over stdio or Streamable HTTP.

Also what the benchmark asks of a running server: its pid (to read its peak RSS from /proc),
and which optional features this build offers, so a missing feature is reported, not failed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from mcp import Client, StdioServerParameters

NOT_AVAILABLE = "not available in this build"


def frs_mcp() -> str:
    """The `frs-mcp` entry point beside the running interpreter (the project's venv)."""
    beside = Path(sys.executable).parent / "frs-mcp"
    if beside.exists():
        return str(beside)
    found = shutil.which("frs-mcp")
    if found is None:
        raise FileNotFoundError("frs-mcp is not installed; run `make bench`")
    return found


def stdio_params(db: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=frs_mcp(), args=["--db", str(db), "--log-level", "WARNING", *extra]
    )


def stdio_client(db: Path, mode: Literal["legacy", "auto"] = "legacy") -> Client:
    """A client that spawns `frs-mcp --db <db>`; legacy mode (2025-11-25) so `ping` works."""
    return Client(stdio_params(db), mode=mode, read_timeout_seconds=600)


def child_pid(marker: str) -> int | None:
    """The pid of our child process whose command line contains `marker` (e.g. its db path)."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = next(
            (line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), ""
        )
        if ppid == str(me) and marker in cmdline:
            return int(entry.name)
    return None


def memory_kib(pid: int) -> dict[str, int]:
    """VmHWM (peak RSS) and VmRSS of a process, in KiB, from /proc/<pid>/status."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            found[key] = int(value.split()[0])
    return found


def tool_properties(tools: Any, name: str) -> set[str]:
    """Argument names of tool `name` in a tools/list result (empty if the tool is missing)."""
    for tool in tools.tools:
        if tool.name == name:
            return set((tool.input_schema or {}).get("properties", {}))
    return set()


def cli_help() -> str:
    done = subprocess.run(
        [frs_mcp(), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    return done.stdout + done.stderr


def offers_streamable_http() -> bool:
    return "streamable-http" in cli_help()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(db: Path, port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """`frs-mcp --transport streamable-http --port <port> extra...` running until the block
    ends."""
    command = [frs_mcp(), "--db", str(db), "--log-level", "WARNING"]
    command += ["--transport", "streamable-http", "--port", str(port), *extra]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"frs-mcp exited with {process.returncode}: {err[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"frs-mcp did not listen on port {port} in 30 s") from None
                time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr:
            process.stderr.close()
