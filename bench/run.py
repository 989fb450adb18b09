"""`python -m bench`: run the benchmark suite, write BENCHMARKS.md and bench/results.json.

Sections (all by default, or `--only a,b`): plans, memory, latency, throughput, tokens, session,
cache, peers, web, postgres, hostile, search, caps, gateway, gateway-replay,
gateway-sessions, startup.
A section not run keeps its figures from the existing JSON, so the report stays whole.
`--quick` is a smoke run (few repetitions, 10k peer items) that writes under .cache/ instead.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from bench import (
    cache,
    caps,
    gateway,
    gateway_replay,
    gateway_sessions,
    hostile,
    latency,
    machine,
    memory,
    peers,
    plans,
    postgres,
    report,
    search,
    session,
    startup,
    throughput,
    tokens,
    web,
)
from bench.corpus import REPO, corpus_dir, load_corpus
from bench.targets import judge
from bench.threads import TextPool
from bench.tokenizer import PINNED_SHA256, verified
from bench.tokenizer import load as load_tokenizer

SECTIONS = (
    "plans",
    "memory",
    "latency",
    "throughput",
    "tokens",
    "session",
    "cache",
    "peers",
    "web",
    "postgres",
    "hostile",
    "search",
    "caps",
    "gateway",
    "gateway-replay",
    "gateway-sessions",
    "startup",
)
FULL = {
    "latency": latency.Plan(
        rounds=200,
        warmup=10,
        batches=9,
        full_view_every={100: 1, 10_000: 10},
        full_view_large=True,
        secondary_rounds=40,
    ),
    "throughput_rounds": 20,
    "peer_items": 100_000,
    "peer_rounds": 200,
    "thinking_calls": 300,
    "cache_trials": 30,
    "web_rounds": 50,
    "postgres": {"size": 100_000, "rounds": 60, "load_calls": 60},
    "hostile": (8, 100),  # normal clients, calls each
    "search": {"megabytes": 10, "rounds": 5, "thread": 100_000, "record": 20_000},
    "gateway_calls": 30,
    "startup_runs": 15,
}
QUICK = {
    "latency": latency.Plan(
        rounds=12,
        warmup=2,
        batches=2,
        full_view_every={100: 1, 10_000: 6},
        full_view_large=False,
        secondary_rounds=4,
    ),
    "throughput_rounds": 2,
    "peer_items": 10_000,
    "peer_rounds": 15,
    "thinking_calls": 30,
    "cache_trials": 3,
    "web_rounds": 5,
    "postgres": {"size": 10_000, "rounds": 4, "load_calls": 8},
    "hostile": (4, 20),
    "search": {"megabytes": 1, "rounds": 2, "thread": 10_000, "record": 2_000},
    "gateway_calls": 6,
    "startup_runs": 3,
}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


async def measure(
    sections: Sequence[str], settings: dict[str, Any], folder: Path
) -> dict[str, Any]:
    corpus = load_corpus()
    pool = TextPool.from_corpus(corpus)
    out: dict[str, Any] = {}
    started = time.perf_counter()

    needs_threads = {"plans", "memory", "latency"} & set(sections)
    built: dict[int, dict[str, Any]] = {}
    if needs_threads:
        built = await latency.build_databases(folder, pool)
        log("threads built: " + ", ".join(f"{s:,} in {i['seconds']} s" for s, i in built.items()))
    large_size = latency.SIZES[-1]

    def stamp(name: str, value: dict[str, Any], since: float) -> None:
        value["seconds"] = round(time.perf_counter() - since, 1)
        out[name] = value

    if "plans" in sections:
        t = time.perf_counter()
        large = built[large_size]
        stamp("plans", await plans.run(large["db"], large["sessions"][0], large_size, log), t)
    if "memory" in sections:
        t = time.perf_counter()
        large = built[large_size]
        biggest = max(corpus_dir().glob("*.jsonl"), key=lambda p: p.stat().st_size)
        transcript = next(tr for tr in corpus if tr.name == biggest.stem)
        stamp(
            "memory",
            await memory.run(
                folder, large["db"], large["sessions"][0], large_size, transcript, biggest, log
            ),
            t,
        )
    if "latency" in sections:
        t = time.perf_counter()
        stamp("latency", await latency.run(pool, settings["latency"], built, log), t)
    if "throughput" in sections:
        t = time.perf_counter()
        stamp(
            "throughput", await throughput.run(folder, pool, settings["throughput_rounds"], log), t
        )
    if "tokens" in sections:
        t = time.perf_counter()
        checks = [verified(encoding) for encoding in PINNED_SHA256]
        stamp("tokens", await tokens.run(folder, corpus, load_tokenizer(), log, checks), t)
    if "session" in sections:
        t = time.perf_counter()
        encodings = [verified(encoding) for encoding in PINNED_SHA256]
        stamp("session", await session.run(folder, corpus, encodings, log), t)
    if "cache" in sections:
        t = time.perf_counter()
        stamp("cache", await cache.run(folder, pool, settings["cache_trials"]), t)
    if "peers" in sections:
        t = time.perf_counter()
        items, rounds = settings["peer_items"], settings["peer_rounds"]
        stamp(
            "peers",
            {
                "sqlite_session": await peers.sqlite_session(folder, pool, items, rounds, log),
                "sequential_thinking": await peers.sequential_thinking(
                    folder, settings["thinking_calls"], log
                ),
            },
            t,
        )
    if "web" in sections:
        t = time.perf_counter()
        stamp("web", await web.run(folder, pool, settings["web_rounds"], log), t)
    if "postgres" in sections:
        t = time.perf_counter()
        stamp("postgres", await postgres.run(folder, pool, settings["postgres"], log), t)
    if "hostile" in sections:
        t = time.perf_counter()
        clients, calls = settings["hostile"]
        stamp("hostile", await hostile.run(folder, clients, calls, log), t)
    if "search" in sections:
        t = time.perf_counter()
        stamp("search", await search.run(folder, pool, settings["search"], log), t)
    if "caps" in sections:
        t = time.perf_counter()
        stamp("caps", await caps.run(folder, log), t)
    if "gateway" in sections:
        t = time.perf_counter()
        stamp("gateway", await gateway.run(settings["gateway_calls"], log), t)
    if "gateway-replay" in sections:
        t = time.perf_counter()
        replayed = await gateway_replay.run(folder, corpus, verified("o200k_base"), log)
        stamp("gateway-replay", replayed, t)
    if "gateway-sessions" in sections:
        t = time.perf_counter()
        sessions = await gateway_sessions.run(folder, corpus, verified("o200k_base"), log)
        stamp("gateway-sessions", sessions, t)
    if "startup" in sections:
        t = time.perf_counter()
        runs = settings["startup_runs"]
        stamp("startup", await anyio.to_thread.run_sync(startup.run, folder, runs, log), t)
    log(f"measured in {time.perf_counter() - started:.0f} s")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smoke run: few repetitions")
    p.add_argument("--only", help=f"comma-separated sections of {', '.join(SECTIONS)}")
    p.add_argument("--out", type=Path, help="report path (default BENCHMARKS.md)")
    p.add_argument("--json", type=Path, help="raw figures path (default bench/results.json)")
    p.add_argument("--workdir", type=Path, help="where the databases go (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the databases after the run")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite the report from the JSON, measure nothing",
    )
    args = p.parse_args(argv)
    quick_dir = REPO / ".cache" / "bench-quick"
    out_md = args.out or (quick_dir / "BENCHMARKS.md" if args.quick else REPO / "BENCHMARKS.md")
    out_json = args.json or (
        quick_dir / "results.json" if args.quick else REPO / "bench" / "results.json"
    )
    previous: dict[str, Any] = json.loads(out_json.read_text()) if out_json.exists() else {}
    if args.report_only:
        out_md.write_text(report.render(previous))
        log(f"wrote {out_md}")
        return 0
    sections = tuple(s.strip() for s in args.only.split(",")) if args.only else SECTIONS
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        p.error(
            f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}"
        )
    # ping is how the legacy protocol's floor is measured; the SDK warns that 2026-07-28 dropped it.
    warnings.filterwarnings("ignore", message="ping is removed")
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="frs-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    load_before = machine.load_average()
    try:
        measured = anyio.run(measure, sections, QUICK if args.quick else FULL, folder)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(folder, ignore_errors=True)
    results = {key: value for key, value in previous.items() if key in SECTIONS}
    results.update(measured)
    results["machine"] = machine.describe()
    results["run"] = {
        "quick": args.quick,
        "sections": list(sections),
        "load_average_before": load_before,
        "load_average_after": machine.load_average(),
    }
    results["targets"] = judge(results)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(report.render(results))
    log(f"wrote {out_md} and {out_json}")
    return 0
