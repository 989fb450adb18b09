"""Each reach of `storage/internals.py` into aiosqlite still finds what it takes.

A failure names the reach, what is no longer there, and the release it was written against
beside the one installed: read aiosqlite's new code and mend `storage/internals.py` alone.
"""

from __future__ import annotations

import threading
from importlib.metadata import version
from pathlib import Path

import aiosqlite
import pytest

from storage.internals import WRITTEN_AGAINST, worker_of


def changed(what: str) -> str:
    return (
        f"storage/internals.py, worker_of: {what}. It was written against aiosqlite "
        f"{WRITTEN_AGAINST['aiosqlite']}; aiosqlite {version('aiosqlite')} is installed."
    )


class TestTheAiosqliteReach:
    async def test_worker_of_finds_the_thread_of_a_connection_that_failed_to_open(
        self, tmp_path: Path
    ) -> None:
        connecting = aiosqlite.connect(tmp_path / "missing" / "x.db")
        with pytest.raises(aiosqlite.Error):
            await connecting  # its folder does not exist
        worker = worker_of(connecting)
        assert isinstance(worker, threading.Thread), changed("no `_thread` on a Connection")
        worker.join(5.0)
        assert not worker.is_alive()
