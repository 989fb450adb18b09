"""Every reach of `runtimes` into a library's internals (here the standard library's), in one
place, and the release it was written against (`WRITTEN_AGAINST`).

Everything else of `runtimes` uses public APIs only; a new reach belongs here, with its check in
`tests/runtimes/test_internals.py`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

WRITTEN_AGAINST = {"python": "3.11"}


def register_before_thread_exit(hook: Callable[[], None]) -> bool:
    """Run `hook` at interpreter exit before the interpreter waits for non-daemon threads;
    False (nothing registered) where this Python has no such hook.

    Why: aiosqlite runs each connection on a thread the interpreter waits for at exit, so a
    runtime that never closes its store would hang there; `atexit` runs after that wait, too
    late. threading's own exit hooks run first, but registering one is private to `threading`
    (`_register_atexit`, which concurrent.futures uses), so it is looked up, not assumed.
    """
    register: Callable[[Callable[[], None]], None] | None = getattr(
        threading, "_register_atexit", None
    )
    if register is None:
        return False
    register(hook)
    return True
