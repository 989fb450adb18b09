"""Peak memory: the server serving a 100,000-message session, and importing the largest transcript.

Peak RSS is the kernel's high-water mark (VmHWM in /proc/<pid>/status) of the server process,
read while it still runs; for the `frs-mcp import` command, which exits, it is the child's
ru_maxrss from wait4(). An idle server's figure is given too, so what serving adds is visible.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from bench.corpus import Transcript, tool_arg
from bench.latency import SUMMARY, call
from bench.servers import child_pid, frs_mcp, memory_kib, stdio_client

MIB = 1024


def _mib(kib: int | None) -> float | None:
    return round(kib / MIB, 1) if kib is not None else None


async def serving(db: Path, session: str, size: int) -> dict[str, Any]:
    """Peak RSS after opening `db` and after view / squash / restore / alias on `session`."""
    mid = 5 * ((size // 2) // 5) + 1
    steps: list[tuple[str, int]] = []
    async with stdio_client(db) as client:
        pid = child_pid(str(db))
        if pid is None:
            return {"error": "could not find the server process"}
        await client.send_ping()
        steps.append(("started (idle)", memory_kib(pid)["VmHWM"]))
        await call(client, "frs_view_thread", {"last": 50, "session_id": session})
        await call(client, "frs_view_thread", {"roles": ["user"], "last": 5, "session_id": session})
        squashed = await call(
            client,
            "frs_compress_range",
            {"from": mid, "to": mid + 9, "summary": SUMMARY, "session_id": session},
        )
        alias = squashed.structured_content["alias"]
        await call(client, "get_alias", {"alias": alias, "session_id": session})
        await call(client, "frs_restore", {"alias": alias, "session_id": session})
        last = await call(
            client, "frs_compress_last", {"count": 5, "summary": SUMMARY, "session_id": session}
        )
        await call(
            client,
            "frs_restore",
            {"alias": last.structured_content["alias"], "session_id": session},
        )
        await call(client, "get_alias", {"alias": f"M.{mid}", "session_id": session})
        steps.append(("view last 50, squash, restore, get_alias", memory_kib(pid)["VmHWM"]))
    return {
        "size": size,
        "steps": [{"after": what, "vm_hwm_mib": _mib(kib)} for what, kib in steps],
    }


async def recording(folder: Path, transcript: Transcript) -> dict[str, Any]:
    """Server peak RSS after recording a whole transcript in one frs_record call and viewing it."""
    db = folder / "memory-record.db"
    args = {"messages": [tool_arg(line) for line in transcript.lines]}
    async with stdio_client(db) as client:
        pid = child_pid(str(db))
        if pid is None:
            return {"error": "could not find the server process"}
        await client.send_ping()
        idle = memory_kib(pid)["VmHWM"]
        await call(client, "frs_record", args)
        await call(client, "frs_view_thread", {})
        peak = memory_kib(pid)["VmHWM"]
    return {"idle_mib": _mib(idle), "vm_hwm_mib": _mib(peak)}


def importing(folder: Path, path: Path) -> dict[str, Any]:
    """`frs-mcp import FILE` as a child process: its peak RSS (ru_maxrss) and exit status."""
    help_text = subprocess.run(
        [frs_mcp(), "import", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    if help_text.returncode != 0:
        return {"unavailable": "frs-mcp import: not available in this build"}
    db = folder / "memory-import.db"
    process = subprocess.Popen(
        [frs_mcp(), "import", str(path), "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    err = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode != 0:
        return {"error": f"exit {process.returncode}: {err[-300:]}"}
    return {"vm_hwm_mib": round(usage.ru_maxrss / MIB, 1)}


async def run(
    folder: Path,
    db: Path,
    session: str,
    size: int,
    largest: Transcript,
    largest_path: Path,
    log: Callable[[str], None],
) -> dict[str, Any]:
    result = {
        "serving": await serving(db, session, size),
        "largest_transcript": largest.name,
        "largest_messages": len(largest.lines),
        "largest_bytes": (await anyio.Path(largest_path).stat()).st_size,
        "record_over_mcp": await recording(folder, largest),
        "import_cli": importing(folder, largest_path),
    }
    log("memory: done")
    return result
