"""The tokens file (`--tokens FILE`): what it accepts, and what it refuses before reading."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.http.tenants import MAX_FILE_BYTES, TokensFileError, read_tokens
from tests.command import frs_mcp

ALICE = "alice-secret-0123456789"
BOB = "bob-secret-0123456789ab"


def tokens_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "tokens"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_each_line_names_a_tenant_and_its_secret(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"# team\nalice {ALICE}\n\n  # ops\nbob {BOB}\n")
    assert read_tokens(str(path)) == {ALICE: "alice", BOB: "bob"}


def test_a_file_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"alice {ALICE}\n", mode=0o644)
    with pytest.raises(TokensFileError, match=r"readable by other users .*chmod 600"):
        read_tokens(str(path))


def test_the_local_tenant_is_not_a_name_the_file_can_give(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"local {ALICE}\n")
    with pytest.raises(TokensFileError, match=r"line 1: local is the tenant of stdio.*--token"):
        read_tokens(str(path))


def test_a_secret_no_http_header_can_carry_is_refused(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, "alice aliceSecrét0123456789abcdef\n")
    with pytest.raises(TokensFileError, match="line 1: the secret of alice is not printable ASCII"):
        read_tokens(str(path))


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"alice {ALICE}\n" + "#" * MAX_FILE_BYTES)
    with pytest.raises(TokensFileError, match="not a regular file of at most 1,048,576 bytes"):
        read_tokens(str(path))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_without_reading_it(tmp_path: Path, kind: str) -> None:
    # Read before the check, a FIFO blocks the server's start for good and /dev/zero never
    # ends: a child process with a deadline shows which it does.
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path, 0o600)
    else:
        path = Path("/dev/zero")
    code = "from server.http.tenants import read_tokens; read_tokens(__import__('sys').argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert f"TokensFileError: --tokens {path}: not a regular file" in done.stderr


def test_a_hash_inside_a_secret_is_part_of_it_and_a_comment_after_a_pair_is_refused(
    tmp_path: Path,
) -> None:
    hashed = "alice#secret-0123456789"
    assert read_tokens(str(tokens_file(tmp_path, f"alice {hashed}\n"))) == {hashed: "alice"}
    trailing = tokens_file(tmp_path, f"alice {ALICE} # the team's\n")
    with pytest.raises(TokensFileError, match=r"line 1: a comment goes on a line of its own"):
        read_tokens(str(trailing))


@pytest.mark.parametrize(
    ("secret", "rule"),
    [
        ("a", "is shorter than 16 characters"),
        ("a" * 40, "has fewer than 8 different characters"),
        ("abcd" * 5, "has fewer than 8 different characters"),
    ],
)
def test_a_weak_secret_is_refused_in_the_file(tmp_path: Path, secret: str, rule: str) -> None:
    with pytest.raises(TokensFileError, match=f"line 1: the secret of alice {rule}"):
        read_tokens(str(tokens_file(tmp_path, f"alice {secret}\n")))


@pytest.mark.parametrize("command", [[], ["web"]])
def test_a_weak_token_is_refused_at_startup_off_loopback_and_on(
    tmp_path: Path, command: list[str]
) -> None:
    """`--token a` once served 0.0.0.0; now neither the server nor the viewer starts on a
    token anyone can guess, and the line says the rule and how to make a good one."""
    db = str(tmp_path / "frs.db")
    transport = [] if command else ["--transport", "streamable-http"]
    for host in ("0.0.0.0", "127.0.0.1"):
        run = frs_mcp(
            *command, "--db", db, *transport, "--host", host, "--port", "0", "--token", "a"
        )
        assert run.returncode == 2, run.stderr
        assert run.stderr.splitlines()[-1].startswith(
            "frs-mcp: --token (or FRS_TOKEN) is shorter than 16 characters; make one with"
        ), run.stderr
        assert "Traceback" not in run.stderr
    assert not (tmp_path / "frs.db").exists()
