"""The errors the domain raises; every message says what was wrong, the valid range, the next step.

    FrsError
    ├── NotFound          SessionNotFound, AliasNotFound
    ├── Conflict          StaleRevision, AlreadyRestored, CoveredByLaterSquash, AliasTaken
    ├── InvalidRequest    PositionOutOfRange, SplitsToolCall, SummaryTooLarge, SummaryNotSmaller,
    │                     InvalidContent, InvalidAlias, NothingToSquash, SourceRefused
    ├── StoreError        StoreUnavailable, StoreReadOnly, StoreFull, StoreConflict (the store
    │                     failed, not the request; raised by a store, with the engine's words)
    └── SearchTooSlow     (a search stopped at its time bound)

The server turns any FrsError into a tool error whose text is `str(exc)`; anything else is a bug.
"""

from __future__ import annotations


class FrsError(Exception):
    """A failure the caller can act on; `str(exc)` is written for the model to read."""


class NotFound(FrsError):
    pass


class Conflict(FrsError):
    pass


class InvalidRequest(FrsError):
    pass


class SessionNotFound(NotFound):
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            f"No session {session_id!r}. Call frs_session(action='list') to see the sessions, "
            "or omit session_id to use the current one."
        )


class AliasNotFound(NotFound):
    def __init__(self, alias: str, detail: str) -> None:
        self.alias = alias
        super().__init__(f"No alias {alias!r}: {detail}")


class InvalidAlias(InvalidRequest):
    def __init__(self, alias: str, detail: str = "") -> None:
        self.alias = alias
        super().__init__(
            f"{alias!r} is not an alias{': ' + detail if detail else ''}. Aliases look like M.17 "
            "(a message), SQ.2 (the originals of a squash) or PREFIX.name for a source (H.main, "
            "S.schema, D.readme: prefix in capitals, name of letters, digits, _ or -), "
            "optionally with @sha8 as shown in the view, e.g. SQ.2@0b4f2d11."
        )


class StaleRevision(Conflict):
    def __init__(
        self, expected: int, actual: int, changes: tuple[str, ...], unlisted: int = 0
    ) -> None:
        self.expected = expected
        self.actual = actual
        self.changes = changes
        listed = "; ".join(changes) if changes else "changes not listed"
        if changes and unlisted:
            earlier = "change" if unlisted == 1 else "changes"
            listed = f"{unlisted:,} earlier {earlier}, then {listed}"
        super().__init__(
            f"Stale revision: you expected revision {expected}, the session is at revision "
            f"{actual} (since then: {listed}). Nothing was changed. View the thread again and "
            f"retry with expected_revision={actual}."
        )


class AlreadyRestored(Conflict):
    def __init__(self, alias: str) -> None:
        self.alias = alias
        super().__init__(
            f"{alias} was already restored; its originals are back in the thread. "
            "View the thread to see the current positions."
        )


class CoveredByLaterSquash(Conflict):
    def __init__(self, alias: str, outer: str) -> None:
        self.alias = alias
        self.outer = outer
        super().__init__(
            f"{alias} is inside the later squash {outer}, so its summary is not in the thread. "
            f"Restore {outer} first, then {alias}."
        )


class PositionOutOfRange(InvalidRequest):
    def __init__(
        self, start: int, end: int, first: int, last: int, unit: str = "positions"
    ) -> None:
        self.start, self.end, self.first, self.last = start, end, first, last
        if last < first:
            where = "the thread has no numbered messages yet"
            step = "Record messages with frs_record first."
        else:
            where = f"the thread has {unit} {first}..{last}"
            step = "View the thread and try again."
        what = f"Range {start}..{end}" if start != end else f"Position {start}"
        if unit == "numbers":
            what = f"Numbers {start}..{end}" if start != end else f"Number {start}"
        verb = "are" if what.startswith("Numbers") else "is"
        super().__init__(f"{what} {verb} outside the thread: {where}. {step}")


class SplitsToolCall(InvalidRequest):
    def __init__(
        self,
        start: int,
        end: int,
        suggested_start: int,
        suggested_end: int,
        count: int | None = None,
    ) -> None:
        self.start, self.end = start, end
        self.suggested = (suggested_start, suggested_end)
        self.count = count  # set when the caller squashes the last entries by count
        if count is not None:
            message = (
                f"count={end - start + 1} would separate a tool call from its result. The "
                f"smallest count that keeps them together is {count} (positions "
                f"{suggested_start}–{suggested_end}); squash that instead."
            )
        else:
            message = (
                f"Range {start}..{end} would separate a tool call from its result. The smallest "
                f"range that keeps them together is {suggested_start}..{suggested_end}; squash "
                "that instead."
            )
        super().__init__(message)


class NothingToSquash(InvalidRequest):
    pass


class SummaryTooLarge(InvalidRequest):
    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit
        super().__init__(
            f"The summary has {size:,} characters; the limit is {limit:,}. "
            "Write a shorter summary: keep decisions, numbers, file names and open questions."
        )


class SummaryNotSmaller(InvalidRequest):
    def __init__(self, before: int, after: int, fix: str) -> None:
        self.before, self.after = before, after
        super().__init__(
            f"The summary (~{after:,} tokens) is not smaller than what it would replace "
            f"(~{before:,} tokens), so squashing would grow the thread. {fix}"
        )


class InvalidContent(InvalidRequest):
    pass


class AliasTaken(Conflict):
    def __init__(self, alias: str, by: str) -> None:
        self.alias, self.by = alias, by
        super().__init__(
            f"{alias} is already registered for {by}. Remove it first with "
            f"frs_source(action='remove', alias='{alias}'), or choose another name."
        )


class SourceRefused(InvalidRequest):
    """A file source that may not or cannot be read; the message says which rule refused it."""


class StoreError(FrsError):
    """The store failed, not the request, and rolled back: nothing was changed. `str(exc)` is
    the engine's own message; the edge says what to check."""


class SearchTooSlow(FrsError):
    """A search ran past its time bound and was stopped, so that it holds up no one else."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(
            f"The search took longer than {seconds:g} s and was stopped, so that it holds up "
            "no one else's pages. Search for a longer or rarer phrase."
        )


class StoreUnavailable(StoreError):
    """The store cannot be reached, opened or locked in time, or its disk failed."""


class StoreReadOnly(StoreError):
    """The store takes no writes (a read-only file, a standby)."""


class StoreFull(StoreError):
    """The store's disk or quota is full."""


class StoreConflict(StoreError):
    """A write broke one of the store's own rules (a unique key, a reference): the state it
    was decided on changed under it, or the caller broke a port's promise."""
