"""Every reach of `storage` into a library's internals, in one place, and the release it was
written against (`WRITTEN_AGAINST`).

Everything else of `storage` uses the libraries' public API only; a new reach belongs here, with
its check in `tests/storage/test_internals.py`, which names this module and the reach when an
upgrade takes away what it reads.
"""

from __future__ import annotations

import threading

import aiosqlite

WRITTEN_AGAINST = {"aiosqlite": "0.22.1"}


def worker_of(connecting: aiosqlite.Connection) -> threading.Thread | None:
    """The worker thread of an aiosqlite connection that is opening or failed to open; None
    when it has none.

    Why: a failed connect stops the thread without waiting for it, and unless we wait, the
    thread may report to an event loop that is already closed (a traceback after our one-line
    error). aiosqlite offers no public way to wait for it; it keeps it as `_thread`.
    """
    found = getattr(connecting, "_thread", None)
    return found if isinstance(found, threading.Thread) else None
