"""What every use case runs against: the store, the limits, the clock and the file reader.

The use-case modules (`frs.sessions`, `frs.recording`, `frs.squashes`, `frs.focus`,
`frs.pages`, `frs.sources`, `frs.plans`) take an `Env` as their first argument;
`frs.service.ReasoningService` holds one and gathers them behind one API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from frs.errors import SourceRefused
from frs.model import Limits
from frs.ports import FileReader, Store

Clock = Callable[[], str]


def utc_now() -> str:
    """ISO-8601 UTC to the microsecond, `Z`-suffixed: what every stored time looks like."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Env:
    store: Store
    limits: Limits
    clock: Clock = utc_now
    files: FileReader | None = None  # None: no file may be read (sources are inline only)

    def file_reader(self) -> FileReader:
        """The file reader; raises SourceRefused when this server reads no files."""
        if self.files is None:
            raise SourceRefused(
                "This server reads no files. Register the text inline with text=... instead."
            )
        return self.files
