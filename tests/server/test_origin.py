"""frs-mcp refuses to run with someone else's `storage` or `server` (server/origin.py).

Each test installs our wheel into a fresh venv next to a throwaway distribution that ships a
package of the same name, in one of the ways that happens to users: installed after frs-mcp
(pip overwrites our files without a word), or earlier on sys.path. The foreign package raises
if imported, so an exit of 2 without a traceback also shows it never ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

from server.origin import PACKAGES, foreign_packages
from tests.dists import build, clean_env, handmade_wheel, pip_install, run, venv

pytestmark = pytest.mark.slow

BOOM = 'raise RuntimeError("the foreign package was imported")\n'


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("dist")).wheel


def frs_mcp_version(bin_dir: Path, **env: str) -> tuple[int, str, str]:
    """`frs-mcp --version` from `bin_dir`: exit code, stdout, stderr."""
    done = subprocess.run(
        [str(bin_dir / "frs-mcp"), "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(**env),
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def assert_refused(done: tuple[int, str, str], package: str, distribution: str) -> None:
    code, stdout, stderr = done
    assert (code, stdout) == (2, ""), stderr
    assert "Traceback" not in stderr
    assert f"frs-mcp: the package {package!r} at " in stderr
    assert f"the distribution {distribution!r} ships one too" in stderr
    assert "`uv tool install .`" in stderr
    assert "`pipx install .`" in stderr


class TestOwnPackages:
    def test_the_test_environment_imports_our_own_four_packages(self) -> None:
        assert foreign_packages() == {}
        assert PACKAGES == ("frs", "storage", "server", "runtimes")

    def test_our_wheel_alone_runs(self, wheel: Path, tmp_path: Path) -> None:
        bin_dir = venv(tmp_path / "venv")
        pip_install(wheel, python=bin_dir / "python")
        assert frs_mcp_version(bin_dir) == (0, "frs-mcp 0.1.0\n", "")

    def test_a_storage_installed_after_frs_mcp_over_our_files_is_refused(
        self, wheel: Path, tmp_path: Path
    ) -> None:
        bin_dir = venv(tmp_path / "venv")
        foreign = handmade_wheel(tmp_path, "clash-storage", {"storage/__init__.py": BOOM})
        pip_install(wheel, python=bin_dir / "python")
        pip_install(foreign, python=bin_dir / "python")
        assert_refused(frs_mcp_version(bin_dir), "storage", "clash-storage")

    def test_a_storage_earlier_on_sys_path_is_refused(self, wheel: Path, tmp_path: Path) -> None:
        bin_dir = venv(tmp_path / "venv")
        foreign = handmade_wheel(tmp_path, "clash-storage", {"storage/__init__.py": BOOM})
        pip_install(wheel, python=bin_dir / "python")
        pip_install("--target", tmp_path / "elsewhere", foreign)
        done = frs_mcp_version(bin_dir, PYTHONPATH=str(tmp_path / "elsewhere"))
        assert_refused(done, "storage", "clash-storage")
        assert f"at {tmp_path / 'elsewhere' / 'storage'} is not" in done[2]

    def test_a_server_installed_over_ours_is_refused_even_though_its_init_ran(
        self, wheel: Path, tmp_path: Path
    ) -> None:
        bin_dir = venv(tmp_path / "venv")
        # A harmless __init__: it runs (nothing can stop that), then our __main__ checks.
        foreign = handmade_wheel(tmp_path, "clash-server", {"server/__init__.py": "VALUE = 1\n"})
        pip_install(wheel, python=bin_dir / "python")
        pip_install(foreign, python=bin_dir / "python")
        assert_refused(frs_mcp_version(bin_dir), "server", "clash-server")

    def test_the_check_passes_for_an_editable_install(self) -> None:
        installed = distribution("frs-mcp").read_text("direct_url.json")
        assert installed is not None, "make installs the test venv's frs-mcp with `pip -e`"
        assert json.loads(installed)["dir_info"] == {"editable": True}
        done = run(Path(sys.executable).with_name("frs-mcp"), "--version")
        assert done.stdout.startswith("frs-mcp ")
