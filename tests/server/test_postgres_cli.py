"""Choosing PostgreSQL from the command line: `--db postgresql://…` or `FRS_DB` (issue 14).

A server that cannot use the database it was given says so in one line and exits 2: the
driver missing (the extra not installed), the server unreachable, the database absent. The
password never appears in what it prints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest

from frs import Env, NewMessage, recording, sessions
from server.settings import resolve_database
from storage.postgres import PgStore, open_postgres
from storage.postgres.database import install_command, installed_from
from tests.command import REPO, frs_mcp
from tests.pg import Cluster
from tests.web.conftest import viewer

pytestmark = pytest.mark.slow


def one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert lines, stderr
    return lines[-1]


class TestSelection:
    def test_a_url_is_kept_as_given_and_a_path_is_expanded(self) -> None:
        url = "postgresql://frs:pw@db.example:5432/frs?sslmode=require"
        assert resolve_database(url) == url
        assert resolve_database("~/x.db") == str(Path("~/x.db").expanduser())

    def test_import_then_export_go_through_postgres(
        self, pg_cluster: Cluster, tmp_path: Path
    ) -> None:
        dsn = pg_cluster.create_database()
        chat = tmp_path / "chat.jsonl"
        chat.write_text(
            "".join(json.dumps({"role": "user", "content": f"m{i}\x00"}) + "\n" for i in range(5)),
            encoding="utf-8",
        )
        imported = frs_mcp("--db", dsn, "import", str(chat))
        assert imported.returncode == 0, imported.stderr
        exported = frs_mcp("--db", dsn, "export", "current", "--format", "openai")
        assert exported.returncode == 0, exported.stderr
        assert [m["content"] for m in json.loads(exported.stdout)] == [
            f"m{i}\x00" for i in range(5)
        ]
        rows = pg_cluster.psql("select count(*) from messages", pg_cluster.name_of(dsn))
        assert rows == "5"


class TestClearErrors:
    def test_an_unreachable_server_exits_2_with_one_line_naming_what_to_check(self) -> None:
        run = frs_mcp("--db", "postgresql://frs:hunter2@127.0.0.1:1/frs")
        assert run.returncode == 2
        line = one_line_error(run.stderr)
        assert line.startswith(
            "frs-mcp: cannot open the database postgresql://frs:***@127.0.0.1:1/frs"
        )
        assert "cannot reach the PostgreSQL server" in line
        assert "Check that it runs" in line
        assert "hunter2" not in run.stderr

    def test_frs_db_selects_postgres_too(self, pg_cluster: Cluster) -> None:
        missing = pg_cluster.dsn("no_such_database")
        done = subprocess.run(
            [sys.executable, "-m", "server"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=REPO,
            env={**os.environ, "FRS_DB": missing},
        )
        assert done.returncode == 2
        assert 'database "no_such_database" does not exist' in one_line_error(done.stderr)

    def test_without_the_driver_the_error_names_the_extra_to_install(self, tmp_path: Path) -> None:
        # A module named asyncpg that cannot be imported stands for the extra not installed.
        (tmp_path / "asyncpg.py").write_text("raise ImportError('No module named asyncpg')\n")
        done = subprocess.run(
            [sys.executable, "-m", "server", "--db", "postgresql://frs@127.0.0.1/frs"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
        )
        assert done.returncode == 2
        line = one_line_error(done.stderr)
        # Not `pip install 'frs-mcp[postgres]'`: frs-mcp is not on the package index yet.
        assert "frs-mcp[postgres]" not in line
        assert "its driver (asyncpg, the extra postgres) is not installed" in line
        assert line.endswith(install_command(sys.prefix, *installed_from())), line


class TestInstallCommand:
    """The driver's install line, for each route the README installs frs-mcp by."""

    def test_a_uv_tool_is_installed_again_from_its_clone_with_the_extra(self) -> None:
        got = install_command("/home/u/.local/share/uv/tools/frs-mcp", "/home/u/frs-mcp", False)
        assert got == "cd /home/u/frs-mcp && uv tool install --reinstall '.[postgres]'"

    def test_a_pipx_install_is_forced_again_with_the_extra(self) -> None:
        got = install_command("/home/u/.local/share/pipx/venvs/frs-mcp", "/home/u/frs-mcp", False)
        assert got == "cd /home/u/frs-mcp && pipx install --force '.[postgres]'"

    def test_a_venv_uses_its_own_pip_and_keeps_an_editable_install_editable(self) -> None:
        venv = "/home/u/frs-mcp/.venv"
        assert install_command(venv, "/home/u/frs-mcp", True) == (
            "cd /home/u/frs-mcp && /home/u/frs-mcp/.venv/bin/pip install -e '.[postgres]'"
        )
        assert install_command(venv, None, False) == (
            "in the frs-mcp clone, /home/u/frs-mcp/.venv/bin/pip install '.[postgres]'"
        )


async def write_session(dsn: str) -> str:
    async with open_postgres(dsn, size=2) as db:
        service = Env(PgStore(db))
        sid = (await sessions.start(service, "Viewer on PostgreSQL")).session.id
        await recording.record(service, [NewMessage("user", "seen in the viewer")], sid)
    return sid


class TestViewer:
    def test_frs_mcp_web_reads_a_postgres_database_and_writes_nothing(
        self, pg_cluster: Cluster
    ) -> None:
        dsn = pg_cluster.create_database()
        sid = anyio.run(write_session, dsn)
        name = pg_cluster.name_of(dsn)
        before = pg_cluster.psql("select count(*), max(revision) from changes", name)
        with viewer(dsn) as base:  # type: ignore[arg-type]
            with urllib.request.urlopen(base + "/", timeout=30) as response:
                listing = response.read().decode()
            with urllib.request.urlopen(f"{base}/s/{sid}", timeout=30) as response:
                thread = response.read().decode()
        assert "Viewer on PostgreSQL" in listing
        assert "seen in the viewer" in thread
        assert pg_cluster.psql("select count(*), max(revision) from changes", name) == before

    def test_an_unmigrated_database_is_refused_and_left_alone(self, pg_cluster: Cluster) -> None:
        dsn = pg_cluster.create_database()
        run = frs_mcp("web", "--db", dsn, "--port", "0")
        assert run.returncode == 2
        assert "never writes, so it does not migrate" in one_line_error(run.stderr)
        tables = pg_cluster.psql(
            "select count(*) from pg_tables where schemaname = 'public'", pg_cluster.name_of(dsn)
        )
        assert tables == "0"
