"""Per-tool latency against the protocol floor, at sessions of 100, 10,000 and 100,000 messages.

One server process per session size, all running at once; each round calls every operation once
on every server, in a shuffled order, so drift on a shared machine hits every figure alike and
each ratio (to the floor, or 100k to 100) compares samples taken side by side. Squashes are
undone by the restore that follows them, so the read operations always see the same thread;
recording, which grows threads, runs last and into spare sessions where there are any.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from bench.corpus import tool_arg
from bench.servers import (
    NOT_AVAILABLE,
    child_pid,
    free_port,
    http_server,
    memory_kib,
    offers_streamable_http,
    stdio_client,
    tool_properties,
)
from bench.stats import Samples, ratio
from bench.threads import STEP, TextPool, build_database

SIZES = (100, 10_000, 100_000)
SPARES = {100: 9, 10_000: 2, 100_000: 1}  # extra sessions of the same size, for recording
SUMMARY = "Bench squash: the steps ran, results checked, nothing left open."

FLOOR_OPS = ("ping", "tools/list", "frs_session info")
VIEW_DEFAULT = "frs_view_thread default (whole thread)"
VIEW_LAST = "frs_view_thread last=50"
VIEW_USER = 'frs_view_thread roles=["user"] last=5'
VIEW_BUDGET = "frs_view_thread budget_tokens=4000"
RANGE = "frs_compress_range (10 in the middle)"
LAST = "frs_compress_last (count=5)"
RESTORE = "frs_restore"
ALIAS = "get_alias (M.n in the middle)"
RECORD_1 = "frs_record (1 message)"
RECORD_1000 = "frs_record (1,000 messages)"
#: Operations that do not return the whole thread: these must stay flat as the thread grows.
BOUNDED = (VIEW_LAST, VIEW_USER, VIEW_BUDGET, RANGE, LAST, RESTORE, ALIAS, RECORD_1, RECORD_1000)
ORDER = (*FLOOR_OPS, VIEW_DEFAULT, *BOUNDED)

Op = Callable[[], Awaitable[None]]


class ToolFailed(Exception):
    pass


async def call(client: Client, tool: str, args: dict[str, Any]) -> CallToolResult:
    """Call a tool; an error result raises, so a broken operation is never timed as a success."""
    result = await client.call_tool(tool, args)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise ToolFailed(f"{tool} answered an error: {text[:300]}")
    return result


@dataclass(frozen=True, slots=True)
class Plan:
    rounds: int  # primary pass (stdio, legacy protocol)
    warmup: int
    batches: int  # frs_record of 1,000 messages, per size (frs_record of 1: once per round)
    full_view_every: dict[int, int]  # size -> a whole-thread view every N rounds (0: never)
    full_view_large: bool  # one whole-thread view at the largest size, after the rounds
    secondary_rounds: int  # stdio 2026-07-28 and Streamable HTTP passes (0: skip)


@dataclass
class Served:
    """One session size behind one server process, and what was measured on it."""

    size: int
    db: Path
    sessions: list[str]
    client: Client
    pid: int | None = None
    view_args: set[str] = field(default_factory=set)
    samples: dict[str, Samples] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    recorded: int = 0  # frs_record calls so far, to spread them over the spare sessions

    @property
    def main(self) -> str:
        return self.sessions[0]

    def record_target(self) -> str:
        """The session the next frs_record goes to: the spares in turn, else the main one."""
        targets = self.sessions[1:] or self.sessions
        self.recorded += 1
        return targets[(self.recorded - 1) % len(targets)]

    @property
    def middle(self) -> int:
        """First position of a 10-message window in the middle, at a step boundary."""
        return STEP * ((self.size // 2) // STEP) + 1

    def timed(self, name: str, tool: str, args: dict[str, Any]) -> Op:
        async def op() -> None:
            await self.samples.setdefault(name, Samples()).time(
                lambda: call(self.client, tool, args)
            )

        return op

    async def run(self, name: str, op: Op) -> None:
        """Run one measured operation; a failure is recorded once and the operation dropped."""
        if name in self.errors:
            return
        try:
            await op()
        except Exception as exc:  # reported in the results; the rest of the run goes on
            self.errors[name] = f"{type(exc).__name__}: {exc}"[:400]

    def ops(self, legacy: bool, record: dict[str, Any] | None = None) -> list[tuple[str, Op]]:
        """What one round calls on this server; with `record` (a message), frs_record of it."""
        client, sid, mid = self.client, self.main, self.middle

        async def record_one() -> None:
            args = {"messages": [record], "session_id": self.record_target()}
            await self.timed(RECORD_1, "frs_record", args)()

        async def ping() -> None:
            await self.samples.setdefault("ping", Samples()).time(client.send_ping)

        async def tools_list() -> None:
            await self.samples.setdefault("tools/list", Samples()).time(
                lambda: client.list_tools(cache_mode="bypass")
            )

        def squash_then_restore(name: str, tool: str, args: dict[str, Any]) -> Op:
            async def op() -> None:
                done = await self.samples.setdefault(name, Samples()).time(
                    lambda: call(client, tool, args)
                )
                alias = (done.structured_content or {})["alias"]
                await self.timed(RESTORE, "frs_restore", {"alias": alias, "session_id": sid})()

            return op

        ops: list[tuple[str, Op]] = [("ping", ping)] if legacy else []
        ops += [
            ("tools/list", tools_list),
            (
                "frs_session info",
                self.timed("frs_session info", "frs_session", {"session_id": sid}),
            ),
            (VIEW_LAST, self.timed(VIEW_LAST, "frs_view_thread", {"last": 50, "session_id": sid})),
            (
                VIEW_USER,
                self.timed(
                    VIEW_USER, "frs_view_thread", {"roles": ["user"], "last": 5, "session_id": sid}
                ),
            ),
            (ALIAS, self.timed(ALIAS, "get_alias", {"alias": f"M.{mid + 2}", "session_id": sid})),
            (
                RANGE,
                squash_then_restore(
                    RANGE,
                    "frs_compress_range",
                    {"from": mid, "to": mid + 9, "summary": SUMMARY, "session_id": sid},
                ),
            ),
            (
                LAST,
                squash_then_restore(
                    LAST, "frs_compress_last", {"count": 5, "summary": SUMMARY, "session_id": sid}
                ),
            ),
        ]
        if "budget_tokens" in self.view_args:
            args = {"budget_tokens": 4_000, "session_id": sid}
            ops.append((VIEW_BUDGET, self.timed(VIEW_BUDGET, "frs_view_thread", args)))
        if record:
            ops.append((RECORD_1, record_one))
        return ops

    def full_view(self) -> Op:
        return self.timed(VIEW_DEFAULT, "frs_view_thread", {"session_id": self.main})

    def result(self, legacy: bool) -> dict[str, Any]:
        """Summaries, the floor and ratios to it; read while the server still runs (peak RSS)."""
        ops = {n: self.samples[n].summary() for n in ORDER if n in self.samples}
        floors = {n: ops[n]["p50"] for n in FLOOR_OPS if ops.get(n, {}).get("n")}
        floor_op = min(floors, key=floors.__getitem__) if floors else None
        floor = floors.get(floor_op) if floor_op else None
        info = floors.get("frs_session info")
        unavailable = {}
        if "budget_tokens" not in self.view_args:
            unavailable[VIEW_BUDGET] = NOT_AVAILABLE
        if not legacy:
            unavailable["ping"] = "not in protocol 2026-07-28 (legacy 2025-11-25 mode only)"
        hwm = None
        if self.pid is not None:
            try:
                hwm = round(memory_kib(self.pid)["VmHWM"] / 1024, 1)
            except (OSError, KeyError):
                hwm = None
        return {
            "sessions": len(self.sessions),
            "floor": {"op": floor_op, "p50": floor, "candidates": floors},
            "ops": ops,
            "ratios": {
                n: {
                    "floor": ratio(s["p50"], floor),
                    "p99_floor": ratio(s["p99"], floor),
                    "session_info": ratio(s["p50"], info),
                }
                for n, s in ops.items()
                if s.get("n")
            },
            "errors": self.errors,
            "unavailable": unavailable,
            "vm_hwm_mib": hwm,
        }


async def _rounds(
    servers: list[Served],
    plan: Plan,
    rounds: int,
    legacy: bool,
    record: dict[str, Any] | None = None,
) -> None:
    rng = random.Random(6)
    per_server = [(s, s.ops(legacy, record)) for s in servers]
    for index in range(plan.warmup + rounds):
        order = [(s, name, op) for s, ops in per_server for name, op in ops]
        for s in servers:
            every = plan.full_view_every.get(s.size, 0)
            if every and index % every == 0:
                order.append((s, VIEW_DEFAULT, s.full_view()))
        rng.shuffle(order)
        for s, name, op in order:
            await s.run(name, op)
        if index == plan.warmup - 1:  # what the warm-up measured is dropped
            for s in servers:
                s.samples.clear()


async def _record_batches(servers: list[Served], pool: TextPool, plan: Plan) -> dict[str, Any]:
    """frs_record of 1,000 messages, after everything else (it grows threads by thousands):
    each batch goes to every size in turn, so the sizes share whatever load the machine has."""
    for i in range(plan.batches):
        payload = [tool_arg(m) for m in pool.messages(1_000, 10_000 + 200 * i, f"r{i}-")]
        for s in servers:
            args = {"messages": payload, "session_id": s.record_target()}
            await s.run(RECORD_1000, s.timed(RECORD_1000, "frs_record", args))
    growth: dict[str, Any] = {}
    for s in servers:
        spares = len(s.sessions) - 1 or 1
        singles = plan.rounds + plan.warmup
        growth[str(s.size)] = {
            "sessions_recorded_into": spares,
            "max_growth_per_session": -(-singles // spares) + -(-plan.batches // spares) * 1_000,
        }
    return growth


def scaling(sizes: dict[str, Any]) -> dict[str, Any]:
    """p50 at the largest size over p50 at the smallest, per bounded operation."""
    small, large = sizes.get(str(SIZES[0])), sizes.get(str(SIZES[-1]))
    if not small or not large:
        return {}
    out = {}
    for name in BOUNDED:
        a, b = small["ops"].get(name, {}), large["ops"].get(name, {})
        if a.get("n") and b.get("n"):
            out[name] = {
                "p50_small": a["p50"],
                "p50_large": b["p50"],
                "ratio": ratio(b["p50"], a["p50"]),
            }
    return out


async def build_databases(folder: Path, pool: TextPool) -> dict[int, dict[str, Any]]:
    """One database per size: the measured session plus its spares, through the Python API."""
    built: dict[int, dict[str, Any]] = {}
    for size in SIZES:
        db = folder / f"latency-{size}.db"
        start = time.perf_counter()
        sessions = await build_database(db, pool, size, sessions=1 + SPARES[size])
        built[size] = {
            "db": db,
            "sessions": [str(s) for s in sessions],
            "seconds": round(time.perf_counter() - start, 2),
        }
    return built


async def _open(
    stack: AsyncExitStack,
    built: dict[int, dict[str, Any]],
    connect: Callable[[int, Path], Client],
    pids: dict[int, int] | None = None,
) -> list[Served]:
    servers = []
    for size, info in built.items():
        client = await stack.enter_async_context(connect(size, info["db"]))
        served = Served(size, info["db"], list(info["sessions"]), client)
        served.view_args = tool_properties(await client.list_tools(), "frs_view_thread")
        served.pid = (pids or {}).get(size) or child_pid(str(info["db"]))
        servers.append(served)
    return servers


async def _primary(
    built: dict[int, dict[str, Any]],
    pool: TextPool,
    plan: Plan,
    log: Callable[[str], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """stdio in the legacy protocol (ping works there): the pass the targets are judged on.
    The other passes run while its servers idle, before recording grows the threads."""
    async with AsyncExitStack() as stack:
        servers = await _open(stack, built, lambda _, db: stdio_client(db, "legacy"))
        protocol = servers[0].client.protocol_version
        one = {"role": "user", "content": pool.user[len(pool.user) // 2][:600]}
        await _rounds(servers, plan, plan.rounds, True, record=one)
        log(f"latency: stdio legacy, {plan.rounds} rounds")
        large = servers[-1]
        if plan.full_view_large:
            await large.run(VIEW_DEFAULT, large.full_view())
            note = f"whole-thread view at {large.size:,}: one sample (it renders every entry)"
        else:
            note = f"whole-thread view at {large.size:,}: not measured in this mode"
        others = await _secondary(built, plan, log)
        growth = await _record_batches(servers, pool, plan)
        log("latency: recording batches")
        sizes = {str(s.size): s.result(True) for s in servers}
    primary = {
        "transport": "stdio",
        "mode": "legacy",
        "protocol": protocol,
        "rounds": plan.rounds,
        "warmup_rounds": plan.warmup,
        "full_view_every": {str(k): v for k, v in plan.full_view_every.items()},
        "record_reps": {"1": plan.rounds, "1000": plan.batches},
        "record_growth": growth,
        "notes": [note],
        "sizes": sizes,
        "scaling": scaling(sizes),
    }
    return primary, others


async def _pass(
    built: dict[int, dict[str, Any]],
    plan: Plan,
    connect: Callable[[int, Path], Client],
    legacy: bool,
    transport: str,
    pids: dict[int, int] | None = None,
) -> dict[str, Any]:
    secondary = Plan(
        rounds=plan.secondary_rounds,
        warmup=plan.warmup,
        batches=0,
        full_view_every={SIZES[0]: 1},
        full_view_large=False,
        secondary_rounds=0,
    )
    async with AsyncExitStack() as stack:
        servers = await _open(stack, built, connect, pids)
        protocol = servers[0].client.protocol_version
        await _rounds(servers, secondary, secondary.rounds, legacy)
        sizes = {str(s.size): s.result(legacy) for s in servers}
    return {
        "transport": transport,
        "mode": "legacy" if legacy else "auto",
        "protocol": protocol,
        "rounds": secondary.rounds,
        "warmup_rounds": secondary.warmup,
        "sizes": sizes,
        "scaling": scaling(sizes),
    }


async def _secondary(
    built: dict[int, dict[str, Any]], plan: Plan, log: Callable[[str], None]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if plan.secondary_rounds <= 0:
        return out
    out["stdio auto"] = await _pass(
        built, plan, lambda _, db: stdio_client(db, "auto"), False, "stdio"
    )
    log("latency: stdio 2026-07-28")
    if not offers_streamable_http():
        out["streamable-http"] = {"transport": "streamable-http", "unavailable": NOT_AVAILABLE}
        return out
    for legacy in (True, False):
        name = f"streamable-http {'legacy' if legacy else 'auto'}"
        try:
            with ExitStack() as processes:
                ports = {size: free_port() for size in built}
                pids = {
                    size: processes.enter_context(http_server(info["db"], ports[size])).pid
                    for size, info in built.items()
                }

                def connect(
                    size: int, _: Path, legacy: bool = legacy, ports: dict[int, int] = ports
                ) -> Client:
                    return Client(
                        f"http://127.0.0.1:{ports[size]}/mcp",
                        mode="legacy" if legacy else "auto",
                        read_timeout_seconds=600,
                    )

                out[name] = await _pass(built, plan, connect, legacy, "streamable-http", pids)
        except Exception as exc:  # a transport that fails to start is reported, not fatal
            out[name] = {"transport": "streamable-http", "error": f"{type(exc).__name__}: {exc}"}
        log(f"latency: {name}")
    return out


async def run(
    pool: TextPool,
    plan: Plan,
    built: dict[int, dict[str, Any]],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Every latency pass: stdio legacy (primary, with recording), stdio 2026-07-28, and
    Streamable HTTP in both protocols when this build offers it."""
    primary, others = await _primary(built, pool, plan, log)
    return {
        "sizes": list(SIZES),
        "spare_sessions": {str(k): v for k, v in SPARES.items()},
        "build_seconds": {str(s): i["seconds"] for s, i in built.items()},
        "passes": {"stdio legacy": primary, **others},
    }
