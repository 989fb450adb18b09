"""Bad database values (issue 23): one line, exit 2, the absolute path, for every command.

Hosts start servers without a shell, so `FRS_DB='$HOME/frs/frs.db'` arrives as typed. It is
expanded as a shell would; an unset variable, shell syntax we do not run, a `~user` this
system does not know, spaces at either end, a folder, and a missing folder (other than the
default database's) are refused before anything is created.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from server.locations import DatabaseValueError, resolve_database
from tests.command import REPO

FRS_MCP = [sys.executable, "-m", "server"]


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`frs-mcp ARGS` in `cwd`, with `env` over a copy of ours, stdin closed."""
    environment = {k: v for k, v in os.environ.items() if k != "FRS_DB"} | env
    environment["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [*FRS_MCP, *args],
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("FRS_DB", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return folder


class TestResolving:
    def test_the_readme_path_may_create_its_folder_where_xdg_moves_the_default(
        self, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Every host entry in the README names ~/.local/share/frs-mcp/frs.db.
        monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
        named = "~/.local/share/frs-mcp/frs.db"
        assert resolve_database(named) == str(home / ".local/share/frs-mcp/frs.db")
        assert resolve_database(None) == str(home / "xdg/frs-mcp/frs.db")

    @pytest.mark.parametrize("value", ["$HOME/frs.db", "${HOME}/frs.db", "~/frs.db"])
    def test_home_is_expanded_as_a_shell_would(self, home: Path, value: str) -> None:
        assert resolve_database(value) == str(home / "frs.db")

    def test_frs_db_is_expanded_too_and_db_wins(
        self, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FRS_WORK", str(home))
        monkeypatch.setenv("FRS_DB", "${FRS_WORK}/env.db")
        assert resolve_database(None) == str(home / "env.db")
        assert resolve_database("$FRS_WORK/flag.db") == str(home / "flag.db")

    def test_a_dollar_before_no_name_stays_itself_as_in_a_shell(self, home: Path) -> None:
        assert resolve_database("~/a$.db") == str(home / "a$.db")

    def test_a_relative_path_comes_back_absolute(
        self, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(home)
        assert resolve_database("frs.db") == str(home / "frs.db")

    @pytest.mark.parametrize(
        ("value", "says"),
        [
            ("$FRS_NOPE_ZZ/frs.db", "names $FRS_NOPE_ZZ, which is not set"),
            ("${FRS_NOPE_ZZ}/frs.db", "names $FRS_NOPE_ZZ, which is not set"),
            ("${HOME:-/tmp}/frs.db", "uses shell syntax frs-mcp does not run"),
            ("$(pwd)/frs.db", "uses shell syntax frs-mcp does not run"),
            ("~nosuchuser_zz/frs.db", "the home folder of ~nosuchuser_zz is unknown"),
            ("  ~/frs.db", "starts or ends with spaces"),
            ("~/frs.db ", "starts or ends with spaces"),
        ],
        ids=["unset", "unset-braced", "default-op", "command", "user", "leading", "trailing"],
    )
    def test_a_value_no_shell_would_make_a_path_of_is_refused_by_name(
        self, home: Path, value: str, says: str
    ) -> None:
        with pytest.raises(DatabaseValueError) as refused:
            resolve_database(value)
        assert says in str(refused.value)
        assert f"--db {value!r}" in str(refused.value)
        assert "\n" not in str(refused.value)

    def test_a_folder_is_refused_with_a_file_in_it_to_give(self, home: Path) -> None:
        with pytest.raises(DatabaseValueError) as refused:
            resolve_database(str(home))
        assert f"is the folder {home}; name a file in it, e.g. {home / 'frs.db'}" in str(
            refused.value
        )

    def test_a_missing_folder_is_refused_and_not_created(self, home: Path) -> None:
        with pytest.raises(DatabaseValueError) as refused:
            resolve_database("~/typo/frs.db")
        assert f"the folder {home / 'typo'} does not exist" in str(refused.value)
        assert f"mkdir -p {home / 'typo'}" in str(refused.value)
        assert not (home / "typo").exists()

    @pytest.mark.parametrize(
        ("make", "says"),
        [
            (lambda p: p.mkdir(), "is the folder"),
            (lambda p: os.mkfifo(p), "is not a regular file (a pipe, socket or device)"),
            (lambda p: p.symlink_to(p), "Too many levels of symbolic links; fix the path."),
        ],
        ids=["folder", "pipe", "link-loop"],
    )
    def test_a_path_that_cannot_be_a_database_file_is_refused(
        self, home: Path, make: Callable[[Path], object], says: str
    ) -> None:
        # A pipe would hang the SQLite open; a link loop ended in a traceback.
        make(home / "frs.db")
        with pytest.raises(DatabaseValueError, match=re.escape(says)):
            resolve_database(str(home / "frs.db"))

    def test_a_name_too_long_for_the_system_is_refused_not_raised(self, home: Path) -> None:
        with pytest.raises(DatabaseValueError, match="File name too long; fix the path"):
            resolve_database(str(home / ("a" * 300) / "frs.db"))

    def test_a_file_where_a_folder_should_be_is_refused(self, home: Path) -> None:
        (home / "notes").write_text("")
        with pytest.raises(DatabaseValueError) as refused:
            resolve_database(str(home / "notes" / "frs.db"))
        assert "Not a directory; fix the path." in str(refused.value)
        assert "mkdir" not in str(refused.value), "mkdir -p on a file cannot help"

    @pytest.mark.parametrize("named", [False, True], ids=["default", "named"])
    def test_the_default_databases_missing_folder_is_allowed(self, home: Path, named: bool) -> None:
        # README: the default file (and its folder) is created on first use, given or not.
        default = home / ".local" / "share" / "frs-mcp" / "frs.db"
        got = resolve_database("~/.local/share/frs-mcp/frs.db" if named else None)
        assert got == str(default)


@pytest.mark.slow
class TestCommands:
    @pytest.mark.parametrize(
        ("value", "says"),
        [
            ("$FRS_NOPE_ZZ/frs/frs.db", "names $FRS_NOPE_ZZ, which is not set"),
            ("~nosuchuser_zz/frs.db", "the home folder of ~nosuchuser_zz is unknown"),
            ("  ~/frs.db", "starts or ends with spaces"),
            (".", "is the folder "),
            ("typo/frs.db", "typo does not exist"),
        ],
        ids=["unset", "user", "spaces", "folder", "missing-folder"],
    )
    def test_a_bad_frs_db_is_one_line_and_exit_2_and_creates_nothing(
        self, tmp_path: Path, value: str, says: str
    ) -> None:
        done = run([], tmp_path, FRS_DB=value, HOME=str(tmp_path))
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"frs-mcp: FRS_DB {value!r}"), done.stderr
        assert says in done.stderr
        assert list(tmp_path.iterdir()) == [], "nothing is created for a refused value"

    @pytest.mark.parametrize(
        "command",
        [
            [],
            ["export", "latest"],
            ["import", "chat.jsonl"],
            ["web", "--port", "0"],
            ["gateway", "--port", "0"],
        ],
        ids=["serve", "export", "import", "web", "gateway"],
    )
    def test_every_command_refuses_a_bad_db_before_it_starts(
        self, tmp_path: Path, command: list[str]
    ) -> None:
        done = run([*command, "--db", "typo/frs.db"], tmp_path, HOME=str(tmp_path))
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            f"frs-mcp: --db 'typo/frs.db': the folder {tmp_path / 'typo'} does not exist; "
            f"create it first (mkdir -p {tmp_path / 'typo'}) or fix the path. frs-mcp creates "
            "only the default database's folder.\n"
        )

    @pytest.mark.parametrize(
        "command",
        [[], ["export", "latest"], ["import", "chat.jsonl"]],
        ids=["serve", "export", "import"],
    )
    def test_a_variable_holding_a_dollar_is_expanded_once(
        self, tmp_path: Path, command: list[str]
    ) -> None:
        # FRS_DB='$D/x.db' with D=/tmp/a$b is /tmp/a$b/x.db; a second expansion read `$b` as
        # a variable (a traceback naming --db). Every command opens the file expanded once.
        folder = tmp_path / "a$b"
        folder.mkdir()
        (tmp_path / "chat.jsonl").write_text('{"role": "user", "content": "hi"}\n')
        done = run(command, tmp_path, FRS_DB="$D/x.db", D=str(folder), HOME=str(tmp_path))
        assert "Traceback" not in done.stderr, done.stderr
        assert "$b" not in done.stderr.replace(str(folder), ""), done.stderr
        if command[:1] == ["export"]:  # export opens only a database that is there
            assert done.stderr == f"frs-mcp export: no database at {folder / 'x.db'}\n"
        else:
            assert done.returncode == 0, done.stderr
            assert (folder / "x.db").is_file()

    def test_a_bad_frs_db_names_frs_db_in_every_command(self, tmp_path: Path) -> None:
        for command in ([], ["export", "latest"], ["web", "--port", "0"]):
            done = run(command, tmp_path, FRS_DB="typo/frs.db", HOME=str(tmp_path))
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith("frs-mcp: FRS_DB 'typo/frs.db': the folder"), done.stderr
        assert list(tmp_path.iterdir()) == []

    def test_the_log_says_created_then_opened_with_the_absolute_path(self, tmp_path: Path) -> None:
        # A host starts servers without a shell: $HOME in FRS_DB, a cwd of its own choosing.
        default = tmp_path / ".local" / "share" / "frs-mcp"
        first = run([], tmp_path, FRS_DB="$HOME/.local/share/frs-mcp/frs.db", HOME=str(tmp_path))
        again = run(["--db", "frs.db"], default, HOME=str(tmp_path))
        assert first.returncode == again.returncode == 0, first.stderr + again.stderr
        assert f"created folder {default}\n" in first.stderr
        assert f"database {default / 'frs.db'} created, ready (schema version" in first.stderr
        assert f"serving MCP over stdio on {default / 'frs.db'}\n" in first.stderr
        assert "created folder" not in again.stderr
        assert f"database {default / 'frs.db'} opened, ready (schema version" in again.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == [".local"]


@pytest.mark.slow
class TestPortsAndHelp:
    @pytest.mark.parametrize(
        "command",
        [["--transport", "streamable-http"], ["web"]],
        ids=["server", "viewer"],
    )
    def test_a_busy_port_names_the_fix(self, tmp_path: Path, command: list[str]) -> None:
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            port = holder.getsockname()[1]
            done = run([*command, "--port", str(port), "--db", "x.db"], tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert f"cannot listen on 127.0.0.1:{port}: [Errno 98] Address already in use" in (
            done.stderr
        )
        assert "pass --port 0 to take a free one" in done.stderr
        assert f"ss -ltnp 'sport = :{port}'" in done.stderr

    def test_help_shows_that_a_command_is_optional(self, tmp_path: Path) -> None:
        done = run(["--help"], tmp_path)
        usage = done.stdout.split("\n\n", 1)[0]
        assert done.returncode == 0
        assert usage.startswith("usage: frs-mcp [OPTIONS]                serve MCP"), usage
        assert "frs-mcp [OPTIONS] COMMAND ...  one of import, export, web" in usage
        assert "optional: with no command, frs-mcp serves MCP" in done.stdout
