"""A throwaway PostgreSQL cluster for the tests and benchmarks: `initdb` + `pg_ctl` in a
temporary folder, listening on a Unix socket there only (no TCP port to collide on), with
fsync off (the tests crash server instances, never PostgreSQL). As root, the cluster runs as
the `postgres` user, as PostgreSQL requires.

A machine without PostgreSQL fails with the command that installs it; nothing is skipped.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

INSTALL = "sudo apt-get install -y postgresql (Debian/Ubuntu; or run make test as root)"
SUPERUSER = "frs"


class PostgresMissing(RuntimeError):
    pass


def bindir(pattern: str = "/usr/lib/postgresql/*/bin/initdb", path: str | None = None) -> Path:
    """The newest installed server's bin folder (initdb, pg_ctl): Debian's layout, else
    initdb on `path` (default $PATH)."""
    found = sorted(glob.glob(pattern), key=_major)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb", path=path)
    if initdb:
        return Path(initdb).parent
    raise PostgresMissing(f"PostgreSQL's initdb was not found: install it with {INSTALL}")


def _major(path: str) -> int:
    try:
        return int(Path(path).parts[-3])
    except ValueError:
        return 0


@dataclass
class Cluster:
    """A running cluster; `dsn(name)` is the connection string of one of its databases."""

    folder: Path
    bin: Path
    as_user: Sequence[str]  # the prefix that runs a command as the cluster's owner

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.folder}"

    @staticmethod
    def name_of(dsn: str) -> str:
        """The database a `dsn(name)` connection string names."""
        return dsn.split("/")[3].split("?")[0]

    def psql(self, sql: str, database: str = "postgres") -> str:
        done = subprocess.run(
            [str(self.bin / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", str(self.folder), "-U", SUPERUSER, "-d", database, "-c", sql],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"psql {sql!r}: {done.stderr.strip()}")
        return done.stdout.strip()

    def create_database(self) -> str:
        """A new empty database; its connection string."""
        name = "t_" + uuid.uuid4().hex[:16]
        self.psql(f"create database {name}")
        return self.dsn(name)

    def stop(self) -> None:
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"),
             "-m", "immediate", "stop"],
            capture_output=True, check=False,
        )  # fmt: skip
        shutil.rmtree(self.folder, ignore_errors=True)


def start_cluster(durable: bool = False) -> Cluster:
    """initdb and start a cluster in a new temporary folder (fsync off unless `durable`)."""
    bin_ = bindir()
    folder = Path(tempfile.mkdtemp(prefix="frs-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresMissing(f"no postgres user to run the cluster as: {INSTALL}") from None
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    _run([*as_user, str(bin_ / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
          "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])  # fmt: skip
    options = f"-c listen_addresses='' -c unix_socket_directories={folder} -c max_connections=300"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    _run([*as_user, str(bin_ / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"),
          "-o", options, "-w", "-t", "60", "start"])  # fmt: skip
    return Cluster(folder, bin_, as_user)


def _run(command: Sequence[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout}")
