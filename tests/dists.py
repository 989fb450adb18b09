"""Building frs-mcp's sdist and wheel, and installing wheels into throwaway venvs, offline.

`python -m build --no-isolation` uses the build backend of the test venv, so nothing is
downloaded. A fresh venv gets our dependencies (mcp, pydantic, ...) from the test venv through
a path line in a `.pth` file: Python adds that folder to sys.path but does not run the `.pth`
files inside it, so the test venv's editable frs-mcp stays out and frs-mcp comes from the
wheel alone.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 300


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path


def run(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A command whose failure is the test's failure, with its output in the message."""
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=cwd
    )
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def build(out: Path) -> Dists:
    """The sdist, and the wheel built from that sdist (as `python -m build` does), in `out`."""
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return Dists(sdist, wheel)


def venv(path: Path) -> Path:
    """A new venv at `path` seeing the test venv's packages but not its frs-mcp; its bin/."""
    run(sys.executable, "-m", "venv", "--without-pip", path)
    (site,) = path.glob("lib/python*/site-packages")
    (site / "test-venv-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return path / "bin"


def pip_install(*args: str | Path, python: Path | None = None) -> None:
    """`pip install --no-deps --no-index ARGS`, into the venv of `python` if given."""
    target = ["--python", str(python)] if python else []
    run(
        sys.executable,
        "-m",
        "pip",
        *target,
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-index",
        *args,
    )


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without anything that points Python or frs-mcp elsewhere."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "FRS_DB")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def handmade_wheel(out: Path, name: str, files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel of distribution `name` 1.0 holding `files`, zipped by hand
    (metadata, WHEEL and a RECORD with hashes), so no build backend or network is involved."""
    stem = f"{name.replace('-', '_')}-1.0"
    info = f"{stem}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in contents.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    wheel = out / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel
