"""Several gateways, one database: three `frs-mcp gateway` processes on one PostgreSQL database
behind haproxy (plain round robin), and a host in a tool loop whose consecutive calls each go
to another instance (issue 32).

The same host, the same model and the same squash go through one gateway alone on a database
of its own, in the same run: every body the upstream received through the three equals, byte
for byte, the one it received through the one (the model's own squash and an autopilot batch
among them, so what a call sent and what the autopilot wrote reached the instance that served
the next call). The thread holds each message once. Then one instance is killed with SIGKILL
while a call it serves is in the middle of its answer: the host asks again, another instance
answers, and nothing an answer had acknowledged is lost.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from frs import AskedRange
from frs.env import Env
from frs.host_threads import find_thread
from frs.model import Limits
from frs.squashes import compress_ranges
from server.settings import Settings
from server.stores import open_store
from tests.command import REPO
from tests.gateway.conversation import SESSION, SYSTEM, TOOLS, result, user
from tests.gateway.harness import Upstream, served
from tests.gateway.test_thinking import Model
from tests.haproxy import free_port, haproxy
from tests.pg import Cluster
from tests.pgsync import SyncPg

pytestmark = pytest.mark.slow

INSTANCES = 3
CALLS = 16
SQUASH_AT = 5  # the model squashes positions 2-3 after this call
#: The autopilot as test_autopilot's SMALL: past 6,000 tokens, the newest 3 exchanges kept.
FLAGS = ("--auto-squash-after", "6000", "--auto-squash-keep", "3", "--auto-squash-payback", "4")
_LISTENING = re.compile(rb"gateway on http://127\.0\.0\.1:([0-9]+) ")


@asynccontextmanager
async def gateway(
    dsn: str, upstream: str, folder: Path, name: str, front: int
) -> AsyncIterator[Gateway]:
    """`frs-mcp gateway` on `dsn` in front of `upstream`, on a free port, answering to the
    name haproxy passes on (127.0.0.1:`front`); killed at the end."""
    err = folder / f"{name}.err"
    with err.open("ab") as stderr:
        process = await anyio.open_process(
            [sys.executable, "-m", "server", "gateway", "--db", dsn, "--port", "0",
             "--anthropic-upstream", upstream, "--openai-upstream", upstream,
             "--allowed-host", f"127.0.0.1:{front}", *FLAGS],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        with anyio.fail_after(60):
            while not (found := _LISTENING.search(err.read_bytes())):
                assert process.returncode is None, err.read_text(errors="replace")
                await anyio.sleep(0.05)
        yield Gateway(int(found.group(1)), process, err)
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()


@dataclass
class Gateway:
    port: int
    process: anyio.abc.Process
    err: Path


@dataclass
class Host:
    """Claude Code in a tool loop, thinking on, its answers kept as they came: each result a
    listing of ~600 tokens (as test_autopilot's loop). Asks again when a call fails, as a
    host does when its connection drops."""

    url: str
    messages: list[dict[str, Any]] = field(
        default_factory=lambda: [user("Find the race in src/sync.py.")]
    )
    served_by: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)  # tool ids answered

    async def call(self, client: httpx2.AsyncClient) -> None:
        body = {
            "model": "claude-test",
            "max_tokens": 1000,
            "system": SYSTEM,
            "tools": TOOLS,
            "thinking": {"type": "adaptive"},
            "messages": self.messages,
        }
        headers = [
            ("content-type", "application/json"),
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
            *SESSION,
        ]
        for _ in range(3):
            try:
                answer = await client.post(
                    self.url + "/v1/messages", content=json.dumps(body), headers=headers
                )
            except httpx2.HTTPError:
                continue
            if answer.status_code == 200:
                break
        assert answer.status_code == 200, answer.text
        self.served_by.append(answer.headers.get("x-served-by", ""))
        content = answer.json()["content"]
        self.messages.append({"role": "assistant", "content": content})
        call = content[-1]["id"]
        self.acknowledged.append(call)
        listing = "".join(f"src/mod_{call}_{i}.py: def handler_{i}(): ...\n" for i in range(60))
        self.messages.append(result(call, f"Exit code: 0\n{listing}"))


async def squash(dsn: str) -> None:
    """The model's own squash of positions 2-3, as its frs tool makes it."""
    async with open_store(Settings(database=dsn)) as opened:
        env = Env(opened.store, Limits())
        thread = await find_thread(env, "claude-code", "cc-session-1")
        assert thread is not None
        await compress_ranges(
            env, [AskedRange(2, 3, "Listed the first two folders.")], session_id=thread.session.id
        )


async def run(dsn: str, folder: Path, instances: int) -> tuple[list[bytes], Host]:
    """The host's calls through `instances` gateways on `dsn` (behind haproxy when more than
    one); the bodies the upstream received, in order, and the host."""
    await anyio.Path(folder).mkdir()
    upstream = Upstream(Model())
    async with AsyncExitStack() as stack:
        up = await stack.enter_async_context(served(upstream))
        front = free_port()
        started: list[Gateway] = []
        for i in range(instances):
            started.append(
                await stack.enter_async_context(gateway(dsn, up, folder, f"gateway{i}", front))
            )
        url = f"http://127.0.0.1:{started[0].port}"
        if instances > 1:
            await stack.enter_async_context(
                haproxy([g.port for g in started], folder, front, health=None)
            )
            url = f"http://127.0.0.1:{front}"
        client = await stack.enter_async_context(httpx2.AsyncClient(timeout=60))
        host = Host(url)
        for n in range(1, CALLS + 1):
            await host.call(client)
            if n == SQUASH_AT:
                await squash(dsn)
        await settled(dsn)
        assert upstream.invalid == [], upstream.invalid
        return [seen.body for seen in upstream.seen], host


def each_once(dsn: str) -> list[tuple[str, int]]:
    """Keys stored more than once in the database's threads (none, when each message is)."""
    with SyncPg(dsn) as conn:
        rows = conn.execute(
            "select interface_message_id, count(*) from messages"
            " where interface_message_id is not null"
            " group by session_id, interface_message_id having count(*) > 1"
        ).fetchall()
    return [(str(r[0]), int(r[1])) for r in rows]


async def settled(dsn: str) -> None:
    """Wait until no call holds a conversation's turn: what each left behind is written."""
    with anyio.fail_after(30):
        while True:
            with SyncPg(dsn) as conn:
                row = conn.execute("select count(*) from gateway_turns").fetchone()
            if row == (0,):
                return
            await anyio.sleep(0.02)


def automatic_squashes(dsn: str) -> int:
    with SyncPg(dsn) as conn:
        row = conn.execute("select count(*) from squashes where automatic = 1").fetchone()
    assert row is not None
    return int(row[0])


class TestInstances:
    async def test_three_gateways_forward_what_one_alone_forwards(
        self, pg_cluster: Cluster, tmp_path: Path
    ) -> None:
        alone, dsn_alone = tmp_path / "alone", pg_cluster.create_database()
        three, dsn_three = tmp_path / "three", pg_cluster.create_database()
        expected, _ = await run(dsn_alone, alone, 1)
        got, host = await run(dsn_three, three, INSTANCES)
        # Consecutive calls went to different instances.
        assert len(set(host.served_by)) == INSTANCES, host.served_by
        pairs = zip(host.served_by, host.served_by[1:], strict=False)
        assert all(a != b for a, b in pairs), host.served_by
        # What made the bodies differ from the host's: the model's squash and a batch.
        assert automatic_squashes(dsn_three) >= 1
        assert automatic_squashes(dsn_three) == automatic_squashes(dsn_alone)
        flat = [body.decode() for body in got]
        assert any("Listed the first two folders." in text for text in flat)
        assert len(got) == len(expected) == CALLS
        for n, (one, many) in enumerate(zip(expected, got, strict=True), start=1):
            assert many == one, f"call {n} went upstream with other bytes through three gateways"
        assert each_once(dsn_three) == []

    async def test_a_killed_instance_loses_nothing_acknowledged(
        self, pg_cluster: Cluster, tmp_path: Path
    ) -> None:
        dsn = pg_cluster.create_database()
        upstream = Stalling(Upstream(Model()))
        async with AsyncExitStack() as stack:
            up = await stack.enter_async_context(served(upstream))
            front = free_port()
            started = [
                await stack.enter_async_context(gateway(dsn, up, tmp_path, f"gateway{i}", front))
                for i in range(INSTANCES)
            ]
            port = await stack.enter_async_context(
                haproxy([g.port for g in started], tmp_path, front, health=None)
            )
            client = await stack.enter_async_context(httpx2.AsyncClient(timeout=60))
            host = Host(f"http://127.0.0.1:{port}")
            for _ in range(6):
                await host.call(client)
            # The next call goes (round robin) to the instance after the last one: it dies
            # once the call is upstream, before the answer; the host asks again.
            victim = started[(_index(host.served_by[-1]) + 1) % INSTANCES]
            upstream.stall = True

            async def kill_when_upstream() -> None:
                await upstream.arrived.wait()
                victim.process.send_signal(signal.SIGKILL)
                await victim.process.wait()
                upstream.release.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_when_upstream)
                await host.call(client)
            assert victim.process.returncode == -signal.SIGKILL
            for _ in range(5):
                await host.call(client)
            await settled(dsn)  # the last answer is written after the host has it
        # Every answer the host had, and every result it sent, is in the thread, once.
        with SyncPg(dsn) as conn:
            contents = "\n".join(
                str(r[0]) for r in conn.execute("select content from messages").fetchall()
            )
            for call in host.acknowledged[:-1]:
                assert f"src/mod_{call}_0.py" in contents, f"the result of {call} was lost"
            answers = conn.execute(
                "select count(*) from messages where role = 'assistant' and kind = 'message'"
            )
            assert answers.fetchone() == (len(host.acknowledged),)
        assert each_once(dsn) == []


class Stalling:
    """The upstream, holding the first request that comes once `stall` is set until
    `release`, and then answering nothing (its gateway is gone by then)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.stall = False
        self.arrived = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.stall:
            self.stall = False
            self.arrived.set()
            await self.release.wait()
            return
        await self.upstream(scope, receive, send)


def _index(served_by: str) -> int:
    """The instance haproxy names `frsN` (1-based) as its index."""
    return int(served_by.removeprefix("frs")) - 1
