"""What every use case runs against: the store, the limits, the clock and the file reader.

The use-case modules (`frs.sessions`, `frs.recording`, `frs.squashes`, `frs.focus`,
`frs.pages`, `frs.sources`, `frs.plans`) take an `Env` as their first argument;
`frs.service.ReasoningService` holds one and gathers them behind one API.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from frs.errors import SourceRefused
from frs.model import Limits, Scope, SessionId
from frs.ports import FileReader, Store

Clock = Callable[[], str]
#: Runs CPU-bound work (a large batch's checks, hashes and token estimates) and gives its
#: result: inline by default; an edge passes a worker thread (`anyio.to_thread.run_sync`) so
#: the event loop keeps serving other clients meanwhile. The domain does no I/O either way.
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]


async def inline(work: Callable[[], Any]) -> Any:
    return work()


def utc_now() -> str:
    """ISO-8601 UTC to the microsecond, `Z`-suffixed: what every stored time looks like."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Chosen:
    """The session each live connection last started or chose, in memory only: a connection
    keeps its own current session while another connection of the same client chooses
    another. Each tenant has its own table of its newest `kept` connections, so one tenant's
    flood of connections pushes out only its own; an older one falls back to its scope's
    current session, kept in the store."""

    def __init__(self, kept: int = 10_000) -> None:
        self.kept = kept
        self._chosen: dict[str, OrderedDict[tuple[str, str], SessionId]] = {}

    def get(self, scope: Scope) -> SessionId | None:
        if scope.connection is None:
            return None
        table = self._chosen.get(scope.tenant)
        key = (scope.client, scope.connection)
        found = table.get(key) if table is not None else None
        if table is not None and found is not None:
            table.move_to_end(key)
        return found

    def choose(self, scope: Scope, session_id: SessionId) -> None:
        if scope.connection is None:
            return
        table = self._chosen.setdefault(scope.tenant, OrderedDict())
        key = (scope.client, scope.connection)
        table[key] = session_id
        table.move_to_end(key)
        if len(table) > self.kept:
            table.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Env:
    store: Store
    limits: Limits
    clock: Clock = utc_now
    files: FileReader | None = None  # None: no file may be read (sources are inline only)
    scope: Scope = field(default_factory=Scope)  # the caller: its tenant's sessions only
    chosen: Chosen = field(default_factory=Chosen)  # shared by every scope of one service
    offload: Offload = inline

    def file_reader(self) -> FileReader:
        """The file reader; raises SourceRefused when this server reads no files."""
        if self.files is None:
            raise SourceRefused(
                "This server reads no files. Register the text inline with text=... instead."
            )
        return self.files
