"""Start-up: how long `frs-mcp` takes to start, as a whole process, for the commands that serve
no MCP (issue 32), against the same command made to load the MCP SDK first, as every command
did before (`tests/server/test_startup.py` keeps them from loading it).

Each command is run `runs` times, the two ways in turn (A B A B ...: drift on a shared machine
hits both alike), from the start of the process to its exit, or for a server to the line that
says it serves: `--help`, `gateway --help`, `web --help`, `--version`, `export` of a small
session, and the gateway and the viewer until each says where it listens. The SDK's own cost
is `python -c "import mcp"`, beside `python -c pass`.

`run` is the `bench` section (`python -m bench --only startup`).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.corpus import REPO
from bench.stats import ratio

Log = Callable[[str], None]
#: `frs-mcp ARGV` as a plain `python -c` script, the SDK loaded first or not.
_AS_BEFORE = "import mcp, mcp_types\n"
_MAIN = "import sys\nfrom server.__main__ import main\nsys.exit(main(sys.argv[1:]))\n"


def _argv(command: list[str], sdk: bool) -> list[str]:
    return [sys.executable, "-c", (_AS_BEFORE if sdk else "") + _MAIN, *command]


def _until_exit(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False, cwd=REPO)
    return (time.perf_counter() - started) * 1000


def _until_ready(argv: list[str], ready: str) -> float:
    """Milliseconds until the process says `ready` on stderr (then it is stopped)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert process.stderr is not None
    try:
        for line in process.stderr:
            if ready in line:
                return (time.perf_counter() - started) * 1000
        raise RuntimeError(f"{argv} ended before saying {ready!r}")
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


def _summary(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "p50": round(statistics.median(ms), 1),
        "min": round(min(ms), 1),
        "max": round(max(ms), 1),
    }


def _commands(folder: Path) -> dict[str, tuple[list[str], str | None]]:
    """What is timed: the command, and the line a server says once it serves (None: to exit)."""
    db = str(folder / "startup.db")
    return {
        "frs-mcp --help": (["--help"], None),
        "frs-mcp --version": (["--version"], None),
        "frs-mcp gateway --help": (["gateway", "--help"], None),
        "frs-mcp web --help": (["web", "--help"], None),
        "frs-mcp export latest": (["--db", db, "export", "latest", "--format", "text"], None),
        "frs-mcp gateway, until it serves": (
            ["gateway", "--port", "0", "--db", db],
            "gateway on http://",
        ),
        "frs-mcp web, until it serves": (["web", "--port", "0", "--db", db], "(read-only) at http"),
    }


def run(folder: Path, runs: int, log: Log) -> dict[str, Any]:
    before = os.getloadavg()
    db = folder / "startup.db"
    transcript = sorted((REPO / "tests" / "data" / "corpus").glob("*.jsonl"))[0]
    subprocess.run(_argv(["--db", str(db), "import", str(transcript)], False), check=True,
                   capture_output=True, cwd=REPO)  # fmt: skip
    floor: dict[str, list[float]] = {"python -c pass": [], "python -c 'import mcp'": []}
    for _ in range(runs):
        floor["python -c pass"].append(_until_exit([sys.executable, "-c", "pass"]))
        floor["python -c 'import mcp'"].append(
            _until_exit([sys.executable, "-c", "import mcp, mcp_types"])
        )
    out: dict[str, Any] = {
        "runs": runs,
        "floor": {name: _summary(ms) for name, ms in floor.items()},
        "commands": {},
    }
    for name, (command, ready) in _commands(folder).items():
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(runs):
            for sdk in (False, True):
                argv = _argv(command, sdk)
                times[sdk].append(_until_exit(argv) if ready is None else _until_ready(argv, ready))
        now, sdk_first = _summary(times[False]), _summary(times[True])
        out["commands"][name] = {
            "now": now,
            "sdk_loaded": sdk_first,
            "ratio": ratio(now["p50"], sdk_first["p50"]),
        }
        log(f"startup: {name}: {now['p50']} ms, {sdk_first['p50']} ms with the SDK loaded")
    out["load_before"] = before
    out["load_after"] = os.getloadavg()
    return out


def render(section: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    if not section:
        return []
    floor = section["floor"]
    lines = [
        "## Start-up: the commands that serve no MCP (issue 32)",
        "",
        "Whole process, from its start to its exit (a server: to the line saying where it"
        " listens), median of"
        f" {section['runs']} runs (min–max), each command run in turn as it is now and with the"
        " MCP SDK imported first, as every command did before (its `mcp` and `mcp_types`). Load"
        f" average {'/'.join(f'{x:.1f}' for x in section['load_before'])} before,"
        f" {'/'.join(f'{x:.1f}' for x in section['load_after'])} after."
        " `python -m bench --only startup`.",
        "",
        "| command | now ms | with the SDK, as before ms | now / before |",
        "|---|---:|---:|---:|",
    ]
    for name, c in section["commands"].items():
        now, before = c["now"], c["sdk_loaded"]
        lines.append(
            f"| {name} | {now['p50']} ({now['min']}–{now['max']}) |"
            f" {before['p50']} ({before['min']}–{before['max']}) | {c['ratio']:.2f}× |"
        )
    bare, sdk = floor["python -c pass"], floor["python -c 'import mcp'"]
    lines += [
        "",
        f"For scale, in the same run: `python -c pass` {bare['p50']} ms, `python -c 'import mcp,"
        f" mcp_types'` {sdk['p50']} ms. Serving MCP (stdio or HTTP) still imports the SDK: it"
        " is what that command serves.",
        "",
    ]
    return lines
