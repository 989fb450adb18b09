"""What `make run` and `make test` install, and that they say so (issue 23).

`make run` installs frs-mcp alone (`pip install -e .`), not the test extra; `make test` says
before it starts what it will install, and keeps apt's output out of the terminal, in a log
whose path it prints (again when apt fails).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dists import REPO

NEEDED = ("sh", "bash", "python3", "node", "npm", "grep", "mkdir", "ls", "cat", "dirname", "env")


def dry_run(*targets: str, venv: Path) -> str:
    """The commands `make -n TARGETS` would run with a venv at `venv`."""
    return subprocess.run(
        ["make", "-n", *targets, f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


class TestInstalls:
    def test_make_run_installs_frs_mcp_without_the_test_extra(self, tmp_path: Path) -> None:
        commands = dry_run("run", venv=tmp_path / "venv")
        assert "pip install --quiet -e . " in commands.replace("\n", " ")
        assert "[test]" not in commands

    def test_the_test_stamp_installs_the_test_extra(self, tmp_path: Path) -> None:
        commands = dry_run(str(tmp_path / "venv" / ".installed"), venv=tmp_path / "venv")
        assert '-e ".[test]"' in commands


def fake_bin(folder: Path, apt_exit: int) -> Path:
    """A PATH with the tools preflight needs, no Chromium, `id -u` 0 and an apt-get that
    prints as much as dpkg does and exits `apt_exit`."""
    folder.mkdir()
    for name in NEEDED:
        found = sys.executable if name == "python3" else shutil.which(name)  # not a pyenv shim
        assert found is not None, f"{name} is needed to run scripts/preflight"
        # A wrapper, not a symlink: a venv's python finds its venv from its own path.
        (folder / name).write_text(f'#!/bin/sh\nexec {found} "$@"\n')
    (folder / "id").write_text("#!/bin/sh\necho 0\n")
    (folder / "apt-get").write_text(
        "#!/bin/sh\n"
        'case "$*" in update*) exit 0;; *" -s "*)\n'
        '  printf "Inst one\\nInst two\\nInst three\\nConf one\\n"; exit 0;; esac\n'
        'i=0; while [ $i -lt 540 ]; do echo "Unpacking package-$i ..."; i=$((i+1)); done\n'
        f"exit {apt_exit}\n"
    )
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return folder


def missing_packages() -> str:
    """What preflight finds missing on the fake PATH: Chromium, and what the system lacks."""
    missing = " chromium"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        missing += " postgresql"
    if not Path("/usr/sbin/haproxy").exists():
        missing += " haproxy"
    return missing


class TestPreflight:
    @pytest.mark.parametrize("apt_exit", [0, 100], ids=["installs", "fails"])
    def test_apt_is_announced_with_its_count_and_its_output_goes_to_a_log(
        self, tmp_path: Path, apt_exit: int
    ) -> None:
        path = fake_bin(tmp_path / "bin", apt_exit)
        env = {k: v for k, v in os.environ.items() if k != "FRS_CHROMIUM"} | {"PATH": str(path)}
        done = subprocess.run(
            ["sh", str(REPO / "scripts" / "preflight"), "python3"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        log = tmp_path / ".cache" / "apt-get.log"
        packages = missing_packages()
        assert (
            f"preflight: installing{packages} with apt-get as root (the browser and PostgreSQL "
            f"tests need them): 3 Debian packages, a few minutes; apt's output goes to {log}\n"
        ) in done.stderr
        assert "Unpacking" not in done.stderr
        assert log.read_text().count("Unpacking package-") == 540
        if apt_exit:
            assert done.returncode == 1
            assert f"apt-get could not install{packages} (its output: {log})" in done.stderr
        else:
            assert done.returncode == 0, done.stderr

    def test_it_names_the_npm_packages_the_tests_install_before_they_do(self) -> None:
        done = subprocess.run(
            ["sh", "scripts/preflight", "python3"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        for lock in sorted(REPO.glob("tests/*/package-lock.json")):
            folder = lock.parent.relative_to(REPO)
            assert f"the tests in {folder} install from npm, pinned in {folder}/" in done.stderr
        assert "@modelcontextprotocol/inspector" in done.stderr


def stub_venv(venv: Path) -> Path:
    """A venv whose python (pytest), ruff and mypy only say they ran, each exiting with the
    code in its environment variable; stamped newer than pyproject.toml, so make installs
    nothing."""
    (venv / "bin").mkdir(parents=True)
    stubs = {"python": "PYTEST", "ruff": "RUFF", "mypy": "MYPY"}
    for name, tool in stubs.items():
        script = venv / "bin" / name
        script.write_text(f'#!/bin/sh\necho "{tool} ran: $*"\nexit ${{{tool}_EXIT:-0}}\n')
        script.chmod(0o755)
    for stamp in (".installed", ".installed-run"):
        (venv / stamp).touch()
    return venv


class TestLintBesidePytest:
    """`make test` runs lint beside pytest, prints lint's output after pytest's, and fails when
    either fails (issue 23: mypy's minute on a fresh clone no longer comes first)."""

    @pytest.mark.parametrize(
        ("failing", "status"),
        [(None, 0), ("RUFF", 2), ("MYPY", 2), ("PYTEST", 2)],
        ids=["both-pass", "ruff-fails", "mypy-fails", "pytest-fails"],
    )
    def test_either_failing_fails_and_lints_output_follows_pytests(
        self, tmp_path: Path, failing: str | None, status: int
    ) -> None:
        venv = stub_venv(tmp_path / "venv")
        env = {**os.environ, **({f"{failing}_EXIT": "1"} if failing else {})}
        done = subprocess.run(
            ["make", "--no-print-directory", "test", f"VENV={venv}", "PYTEST_ARGS=-k x"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == status, done.stdout + done.stderr
        out = done.stdout
        assert "PYTEST ran: -m pytest -n 2 --dist loadfile -k x" in out, out
        lint = out.index("RUFF ran: check .")
        assert out.index("PYTEST ran:") < lint, "lint's output comes after pytest's"
        if failing != "RUFF":
            assert "RUFF ran: format --check ." in out[lint:], out
            assert "MYPY ran: " in out[lint:], out
        if failing in ("RUFF", "MYPY"):
            assert f"lint failed: its output is in {venv}/lint.log" in out, out
        else:
            assert "lint failed" not in out, out
