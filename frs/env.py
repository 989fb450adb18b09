"""What every use case runs against: the store, the limits, the clock and the file reader.

The one door into the domain: every edge (the MCP tools, the gateway, the runtimes, the
commands) builds an `Env` and calls the use-case functions, which take it as their first
argument: `frs.sessions`, `frs.recording`, `frs.squashes`, `frs.focus`, `frs.pages`,
`frs.sources`, `frs.plans`, `frs.viewing`. `Env.for_scope` is the same `Env` for another caller.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from frs.errors import SourceRefused
from frs.model import Limits, Scope, SessionId
from frs.ports import FileReader, Store

if TYPE_CHECKING:
    from frs.views import Frame

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


class Frames:
    """The views' frames (plan, checkpoints, open layers) by (session, revision), the newest
    `kept`: every change to them bumps the revision, which a view reads in the same snapshot,
    so a kept frame is never stale."""

    def __init__(self, kept: int = 64) -> None:
        self.kept = kept
        self._frames: OrderedDict[tuple[SessionId, int], Frame] = OrderedDict()

    def get(self, key: tuple[SessionId, int]) -> Frame | None:
        return self._frames.get(key)

    def keep(self, key: tuple[SessionId, int], frame: Frame) -> None:
        self._frames[key] = frame
        if len(self._frames) > self.kept:
            self._frames.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Env:
    """What a use case runs against, in one caller's scope: a use case that takes
    `session_id` finds only that tenant's sessions and uses the caller's current session when
    it is None; one that writes creates a first session if there is none."""

    store: Store
    limits: Limits = field(default_factory=Limits)
    clock: Clock = utc_now
    files: FileReader | None = None  # None: no file may be read (sources are inline only)
    scope: Scope = field(default_factory=Scope)  # the caller: its tenant's sessions only
    chosen: Chosen = field(default_factory=Chosen)  # shared by every scope of one edge
    offload: Offload = inline
    frames: Frames = field(default_factory=Frames)  # shared by every scope of one edge

    def for_scope(self, scope: Scope) -> Env:
        """The same Env for another caller: `scope`'s tenant's sessions only, its current
        session. Shares the store, the frames and the connections' choices."""
        return replace(self, scope=scope)

    def file_reader(self) -> FileReader:
        """The file reader; raises SourceRefused when this server reads no files."""
        if self.files is None:
            raise SourceRefused(
                "This server reads no files. Register the text inline with text=... instead."
            )
        return self.files
