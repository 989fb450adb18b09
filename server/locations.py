"""Where the database lives: the value of `--db` or `FRS_DB` made an absolute path, or refused.

Hosts start servers without a shell, so a value written for one (`$HOME/frs.db`, `~/frs.db`)
reaches us as typed. We do what the shell would have done: `~` and `~user` become home folders,
`$NAME` and `${NAME}` the variable's value. Refusing instead would send the user back to a
config file that cannot do the expansion itself (Claude Desktop's `env` cannot), so the kindest
thing is to expand; what a shell would have expanded to nothing (an unset variable) is refused
by name instead, since `$NOPE/frs.db` would otherwise become `/frs.db`. Any other value a shell
would read differently (`${A:-b}`, `$(cmd)`), or that no shell user means (spaces at either
end), is refused too, and so is a path that cannot be a database file (a folder, a pipe, a name
too long, a link loop). Every refusal is one line naming the value, where it came from and what
to do; `cli.main` prints it and exits 2. The value is expanded once: `cli.main` hands the result
to every command, since a second pass would read a `$` the first produced as a variable.

The folder of the default database (`~/.local/share/frs-mcp`, and the one under
`$XDG_DATA_HOME` where that is set) is created when missing; any other missing folder is
refused, so that a typo in `--db` does not silently grow a tree holding an empty thread.
"""

from __future__ import annotations

import os
import re
import stat
from contextlib import suppress
from pathlib import Path

APP_NAME = "frs-mcp"
MEMORY = ":memory:"
_URLS = ("postgresql://", "postgres://")
# $NAME or ${NAME}: what a POSIX shell expands; `$` before anything else stays itself, as there.
_VARIABLE = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
_SHELL_ONLY = re.compile(r"\$[{(]")  # ${...} with an operator, $(command): we run no shell


class DatabaseValueError(ValueError):
    """A database value that names no usable file; the text is the whole one-line message."""


def default_database() -> Path:
    """`$XDG_DATA_HOME/frs-mcp/frs.db`, else `~/.local/share/frs-mcp/frs.db`."""
    data_home = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data_home):
        # The XDG spec: a relative path is invalid and ignored (else the database would move
        # with the working directory the host starts us in).
        data_home = str(Path.home() / ".local" / "share")
    return Path(data_home) / APP_NAME / "frs.db"


def resolve_database(flag: str | None) -> str:
    """The database to open: `--db` wins, then `$FRS_DB`, then `default_database()`.

    A path comes back absolute, with `~` and `$NAME` expanded; a postgresql:// URL and
    `:memory:` come back as given. Raises `DatabaseValueError` for a value that names no
    usable file (see the module's docstring)."""
    if flag:
        given, source = flag, "--db"
    elif os.environ.get("FRS_DB"):
        given, source = os.environ["FRS_DB"], "FRS_DB"
    else:
        try:
            default = str(default_database())
        except RuntimeError:  # no $HOME, and no home folder for this user either
            raise DatabaseValueError(
                "no database given and no home folder to hold the default one; pass --db FILE "
                "or set FRS_DB."
            ) from None
        return _checked(default, default, "the default database")
    if given == MEMORY or given.startswith(_URLS):
        return given
    return _checked(_expanded(given, source), given, source)


def _expanded(given: str, source: str) -> str:
    shown = f"{source} {given!r}"
    if given != given.strip():
        raise DatabaseValueError(
            f"{shown} starts or ends with spaces; remove them (a host passes the value as "
            "written, quotes and spaces included)."
        )
    if _SHELL_ONLY.search(_VARIABLE.sub("", given)):
        raise DatabaseValueError(
            f"{shown} uses shell syntax frs-mcp does not run; only $NAME and ${{NAME}} are "
            "expanded. Write the path out."
        )
    unset = [m["braced"] or m["bare"] for m in _VARIABLE.finditer(given)]
    unset = [name for name in unset if name not in os.environ]
    if unset:
        raise DatabaseValueError(
            f"{shown} names ${unset[0]}, which is not set in frs-mcp's environment (hosts "
            "start servers without your shell's variables); write the path out, or set "
            f"{unset[0]} in the host's env for this server."
        )
    expanded = _VARIABLE.sub(lambda m: os.environ[m["braced"] or m["bare"]], given)
    try:
        return str(Path(expanded).expanduser())
    except RuntimeError:  # ~user this system does not know, or no home folder at all
        user = expanded[1:].split("/", 1)[0] or os.environ.get("USER", "")
        raise DatabaseValueError(
            f"{shown}: the home folder of ~{user} is unknown on this system; write the path out."
        ) from None


def _creatable() -> set[Path]:
    """The folders opening may create: the default database's, and `~/.local/share/frs-mcp`
    even where `$XDG_DATA_HOME` moves the default (the README's host entries name it)."""
    folders = {Path(os.path.abspath(default_database())).parent}
    with suppress(RuntimeError):  # no home folder: the default was under $XDG_DATA_HOME
        folders.add(Path.home() / ".local" / "share" / APP_NAME)
    return folders


def _checked(path: str, given: str, source: str) -> str:
    """`path` made absolute, if it can be an SQLite file: a file or nothing yet (not a folder,
    a pipe or a link that leads nowhere), in a folder that is there (or the default database's,
    which opening creates)."""
    file = Path(os.path.abspath(path))
    shown = f"{source} {given!r}" if given != str(file) else source
    try:
        mode: int | None = file.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # too long a name, a link loop, a file where a folder should be
        raise DatabaseValueError(
            f"{shown}: cannot look at {file}: {exc.strerror}; fix the path."
        ) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise DatabaseValueError(
            f"{shown} is the folder {file}; name a file in it, e.g. {file / 'frs.db'}."
        )
    if mode is not None and not stat.S_ISREG(mode):
        raise DatabaseValueError(
            f"{shown}: {file} is not a regular file (a pipe, socket or device); name a database "
            "file."
        )
    folder = file.parent
    try:
        there = folder.is_dir()
    except OSError as exc:
        raise DatabaseValueError(f"{shown}: cannot look into {folder}: {exc.strerror}.") from None
    if not there and folder not in _creatable():
        raise DatabaseValueError(
            f"{shown}: the folder {folder} does not exist; create it first (mkdir -p {folder}) "
            "or fix the path. frs-mcp creates only the default database's folder."
        )
    return str(file)
