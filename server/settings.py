"""Server settings: where the database lives and the limits requests must respect."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from frs import Limits
from frs.model import Conversation

APP_NAME = "frs-mcp"
_DEFAULTS = Limits()
PREVIEW_MIN = 200  # a shorter preview cap would turn every message into a card


def version() -> str:
    """The installed distribution's version; 0.0.0 when run from a tree never installed."""
    try:
        return metadata.version(APP_NAME)
    except metadata.PackageNotFoundError:
        return "0.0.0"


def default_database() -> Path:
    """`$XDG_DATA_HOME/frs-mcp/frs.db`, else `~/.local/share/frs-mcp/frs.db`."""
    data_home = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data_home):
        # The XDG spec: a relative path is invalid and ignored (else the database would move
        # with the working directory the host starts us in).
        data_home = str(Path.home() / ".local" / "share")
    return Path(data_home) / APP_NAME / "frs.db"


def resolve_database(flag: str | None) -> str:
    """`--db` wins, then `$FRS_DB`, then the user data directory. A postgresql:// URL is
    kept as given (a path would fold its `//`)."""
    chosen = flag or os.environ.get("FRS_DB") or str(default_database())
    if chosen == ":memory:" or chosen.startswith(("postgresql://", "postgres://")):
        return chosen
    return str(Path(chosen).expanduser())


class Settings(BaseModel):
    # extra="forbid": a misspelt option (say `db=` for `database=`) must fail, not silently
    # fall back to the user's default database.
    model_config = ConfigDict(frozen=True, extra="forbid")

    database: str = Field(default_factory=lambda: resolve_database(None))
    max_message_chars: int = Field(default=_DEFAULTS.max_message_chars, ge=1)
    max_summary_chars: int = Field(default=_DEFAULTS.max_summary_chars, ge=1)
    preview_chars: int = Field(default=_DEFAULTS.preview_chars, ge=PREVIEW_MIN)
    max_view_tokens: int = Field(default=_DEFAULTS.view_tokens, ge=500)
    max_line_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)  # one stdio request
    allow_roots: tuple[str, ...] = ()  # folders file sources may be read from; none by default
    max_source_bytes: int = Field(default=2_000_000, ge=1)
    log_level: str = "INFO"
    # The client part of every caller's scope (--scope, FRS_SCOPE), instead of the name the
    # client gives itself; also the scope of the CLI's import and export.
    scope: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$"
    )
    # The host's conversation this stdio process serves (`frs.conversations.from_env`): the
    # current session of calls without session_id is that conversation's, unless `scope` is set.
    conversation: Conversation | None = None

    def limits(self) -> Limits:
        return Limits(
            max_message_chars=self.max_message_chars,
            max_summary_chars=self.max_summary_chars,
            preview_chars=self.preview_chars,
            view_tokens=self.max_view_tokens,
        )
