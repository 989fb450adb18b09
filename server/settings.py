"""Server settings: where the database lives and the limits requests must respect."""

from __future__ import annotations

from importlib import metadata

from pydantic import BaseModel, ConfigDict, Field

from frs import Limits
from frs.model import Conversation
from server.locations import APP_NAME, DatabaseValueError, default_database, resolve_database

__all__ = [
    "APP_NAME",
    "PREVIEW_MIN",
    "DatabaseValueError",
    "Settings",
    "default_database",
    "resolve_database",
    "version",
]
_DEFAULTS = Limits()
PREVIEW_MIN = 200  # a shorter preview cap would turn every message into a card


def version() -> str:
    """The installed distribution's version; 0.0.0 when run from a tree never installed."""
    try:
        return metadata.version(APP_NAME)
    except metadata.PackageNotFoundError:
        return "0.0.0"


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
