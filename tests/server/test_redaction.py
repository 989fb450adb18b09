"""The PostgreSQL password never reaches what frs-mcp prints (issue 23): not as `user:password@`
nor as a `password=` parameter, in the "ready" line, the stdio server's "serving" line, the HTTP
server's "stopped … closed" line, the viewer's banner, the export errors, or the refusal of an
unreachable server. Each line is captured from a real process on a throwaway cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest

from storage.postgres import redact
from tests.clients.frs_process import frs_http
from tests.command import REPO, frs_mcp
from tests.pg import Cluster

pytestmark = pytest.mark.slow

IN_USERINFO = "userinfo-pw-7f3a9c"
IN_PARAMETER = "parameter-pw-91c2e4"


def with_passwords(dsn: str) -> str:
    """`dsn` (`postgresql://frs@/name?host=…`) with a password in both places a URL holds one;
    the test cluster trusts its socket, so either is accepted and neither checked."""
    return dsn.replace("frs@", f"frs:{IN_USERINFO}@", 1) + f"&password={IN_PARAMETER}"


def assert_redacted(text: str, *expected: str) -> None:
    assert IN_USERINFO not in text, text
    assert IN_PARAMETER not in text, text
    for line in expected:
        assert line in text, text
    assert "frs:***@" in text, text
    assert "password=***" in text, text


class TestEveryLineThatNamesTheDatabase:
    def test_stdio_http_viewer_and_export_lines(self, pg_cluster: Cluster) -> None:
        url = with_passwords(pg_cluster.create_database())
        stdio = subprocess.run(
            [sys.executable, "-m", "server", "--db", url],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=REPO,
        )
        assert_redacted(stdio.stderr, "ready (PostgreSQL schema version", "serving MCP over stdio")

        with frs_http(url, "--transport", "streamable-http") as server:
            pass
        assert_redacted(server.stderr, "ready (PostgreSQL", "stopped; database")

        web = subprocess.Popen(
            [sys.executable, "-m", "server", "web", "--db", url, "--port", "0"],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert web.stderr is not None
        banner = ""  # and the log lines before it (INFO when serving)
        while "viewer of" not in banner and (line := web.stderr.readline()):
            banner += line
        web.terminate()
        web.wait(timeout=30)
        web.stderr.close()
        assert_redacted(banner, "frs-mcp: viewer of postgresql://")

        unknown = frs_mcp("--db", url, "export", "0badc0ffee00")
        latest = frs_mcp("--db", url, "export", "latest")
        assert unknown.returncode == latest.returncode == 2
        assert_redacted(unknown.stderr, "No session '0badc0ffee00' in postgresql://")
        assert_redacted(latest.stderr, "has no session yet")

    def test_an_unreachable_server_is_named_without_its_password(self) -> None:
        url = f"postgresql://frs:{IN_USERINFO}@127.0.0.1:1/frs?password={IN_PARAMETER}"
        run = frs_mcp("--db", url)
        assert run.returncode == 2
        assert_redacted(run.stderr, "cannot open the database postgresql://frs:***@127.0.0.1:1")


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (
            "postgresql://u:p%40ss@h:5/db?sslmode=require",
            "postgresql://u:***@h:5/db?sslmode=require",
        ),
        (
            "postgres://u@h/db?password=x&sslpassword=y",
            "postgres://u@h/db?password=***&sslpassword=***",
        ),
        ("host=h user=u password='a b' dbname=d", "host=h user=u password=*** dbname=d"),
        ("/home/me/frs.db", "/home/me/frs.db"),
    ],
)
def test_redact_hides_every_form_of_password(given: str, shown: str) -> None:
    assert redact(given) == shown
