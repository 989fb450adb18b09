"""The web viewer on a 100,000-message session: the thread page of the newest 200 entries
(issue 15: ≤ 300 ms), pages further back, and the sessions list, over HTTP against
`frs-mcp web` in its own process, beside a floor measured in the same run (its static
stylesheet: the HTTP round trip and the server's own cost, with no database read).

The session is real corpus text (`bench.threads`) with 20 squashes of whole steps among its
newest entries and one squash nesting two of them, so the newest page opens squashes to their
originals as the viewer does. `render` times the same page in-process, without HTTP: reading
it (`load_page`) and building its HTML.
"""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from bench.corpus import REPO
from bench.stats import Samples, ratio
from bench.threads import STEP, TextPool, build_database
from frs import Env, squashes
from frs.model import LOCAL_TENANT, SessionId
from server.web.pages import thread_page
from server.web.thread import load_page
from storage import SqliteStore, open_database
from storage.readonly import open_readonly

SIZE = 100_000
SQUASHES = 20
SUMMARY = "Bench squash: the step ran, its results were checked, nothing is left open."
TARGET_MS = 300.0
_URL = re.compile(r"at http://127\.0\.0\.1:([0-9]+)/")


async def _squash_the_newest(path: Path, session: SessionId) -> None:
    """Squash every other whole step among the newest, from the end back (earlier positions
    stay put), then one squash holding two of those summaries and the step between them."""
    async with open_database(path) as db:
        env = Env(SqliteStore(db))
        live = SIZE
        for k in range(SQUASHES):
            start = live - STEP * (2 * k + 2) + 1
            await squashes.compress_range(env, start, start + STEP - 1, SUMMARY, session_id=session)
        first = live - STEP * (2 * SQUASHES) + 1  # the oldest of those summaries
        await squashes.compress_range(env, first, first + STEP + 1, SUMMARY, session_id=session)


def _get(port: int, path: str) -> Callable[[], int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def fetch() -> int:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
        return len(body)

    return fetch


def _timed(fetch: Callable[[], int], rounds: int) -> dict[str, Any]:
    samples, size = Samples(), 0
    fetch()  # warm: the connection, the page cache
    for _ in range(rounds):
        start = time.perf_counter()
        size = fetch()
        samples.ms.append((time.perf_counter() - start) * 1000)
    return {**samples.summary(), "bytes": size}


def _serve(path: Path) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "web", "--db", str(path), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    found = _URL.search(line)
    if not found:
        process.kill()
        raise RuntimeError(f"frs-mcp web did not start: {line}")
    return process, int(found.group(1))


async def _render(path: Path, session: SessionId, rounds: int) -> dict[str, Any]:
    samples = Samples()
    async with open_readonly(path) as store:
        for _ in range(rounds + 1):
            start = time.perf_counter()
            async with store.snapshot() as reader:
                found = await reader.find_session(LOCAL_TENANT, session)
                assert found is not None
                thread_page(await load_page(reader, found, None))
            samples.ms.append((time.perf_counter() - start) * 1000)
    samples.ms.pop(0)  # the first warms the page cache
    return samples.summary()


async def run(
    folder: Path, pool: TextPool, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    path = folder / "web-100000.db"
    start = time.perf_counter()
    (session,) = await build_database(path, pool, SIZE)
    await _squash_the_newest(path, session)
    log(f"web: {SIZE:,}-message session built in {time.perf_counter() - start:.0f} s")
    process, port = _serve(path)
    try:
        pages = {
            "floor: GET /static/viewer.css": "/static/viewer.css",
            "thread, newest 200 entries": f"/s/{session}",
            "thread, 200 entries before 50,000": f"/s/{session}?before=50000",
            "thread, first 200 entries": f"/s/{session}?before=201",
            "sessions list": "/",
            "audit trail": f"/s/{session}/audit",
        }
        ops = {
            name: await anyio.to_thread.run_sync(_timed, _get(port, url), rounds)
            for name, url in pages.items()
        }
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
    floor = ops["floor: GET /static/viewer.css"]["p50"]
    for summary in ops.values():
        summary["floor"] = ratio(summary["p50"], floor)
    newest = ops["thread, newest 200 entries"]
    return {
        "size": SIZE,
        "squashes": SQUASHES + 1,
        "rounds": rounds,
        "ops": ops,
        "render": await _render(path, session, rounds),
        "target_ms": TARGET_MS,
        "met": newest["p99"] <= TARGET_MS,
    }
