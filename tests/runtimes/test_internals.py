"""The reach of `runtimes/internals.py` into `threading` still finds what it takes: a failure
names the reach and the Python it was written against; mend `runtimes/internals.py` alone."""

from __future__ import annotations

import subprocess
import sys
import threading

from runtimes.internals import WRITTEN_AGAINST


class TestTheThreadingReach:
    def test_threading_still_has_the_exit_hook_it_registers_with(self) -> None:
        assert callable(getattr(threading, "_register_atexit", None)), (
            "runtimes/internals.py, register_before_thread_exit: threading has no "
            f"_register_atexit. It was written against Python {WRITTEN_AGAINST['python']}; "
            f"this is {sys.version.split()[0]}."
        )

    def test_a_registered_hook_runs_before_the_interpreter_waits_for_threads(self) -> None:
        # A non-daemon thread that waits for the hook: the interpreter exits only if the hook
        # runs before it joins the thread.
        script = (
            "import threading\n"
            "from runtimes.internals import register_before_thread_exit\n"
            "done = threading.Event()\n"
            "threading.Thread(target=done.wait).start()\n"
            "assert register_before_thread_exit(done.set)\n"
        )
        result = subprocess.run([sys.executable, "-c", script], timeout=30, check=False)
        assert result.returncode == 0
