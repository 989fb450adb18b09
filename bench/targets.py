"""The targets of issue 6, each judged met or not from the figures of one run."""

from __future__ import annotations

from typing import Any

from bench import latency as lat

LARGE = str(lat.SIZES[-1])
TIGHT = (lat.VIEW_LAST, lat.RANGE, lat.LAST, lat.ALIAS)  # ≤ 1.5× the floor
LOOSE = (lat.VIEW_USER, lat.VIEW_BUDGET, lat.RESTORE, lat.RECORD_1)  # ≤ 2× the floor


def _row(target: str, figure: str, met: bool | None, note: str = "") -> dict[str, Any]:
    return {"target": target, "figure": figure, "met": met, "note": note}


def _latency_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    primary = section.get("passes", {}).get("stdio legacy")
    if not primary:
        return [_row("latency targets", "latency not measured", None)]
    large = primary["sizes"].get(LARGE, {})
    floor = large.get("floor", {})
    rows = []
    for names, limit in ((TIGHT, 1.5), (LOOSE, 2.0)):
        for name in names:
            r = large.get("ratios", {}).get(name)
            if r is None:
                why = large.get("unavailable", {}).get(name) or large.get("errors", {}).get(name)
                rows.append(_row(f"{name} p50 ≤ {limit}× floor at 100k", why or "no data", None))
                continue
            p50 = large["ops"][name]["p50"]
            rows.append(
                _row(
                    f"{name} p50 ≤ {limit}× floor at 100k",
                    f"{r['floor']}× ({p50:.2f} ms vs {floor.get('op')} {floor.get('p50'):.2f} ms);"
                    f" {r['session_info']}× frs_session info",
                    r["floor"] <= limit,
                )
            )
    scaling = primary.get("scaling", {})
    for name in (*TIGHT, *LOOSE):
        s = scaling.get(name)
        if s is None:
            continue
        rows.append(
            _row(
                f"{name} scaling 100k/100 ≤ 1.2",
                f"{s['ratio']}× ({s['p50_large']:.2f} / {s['p50_small']:.2f} ms)",
                s["ratio"] <= 1.2,
            )
        )
    return rows


def _throughput_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    rows = section.get("rows", {})
    out = []
    for kind in ("corpus", "short"):
        row = rows.get(f"{kind} 1000")
        if not row or not row.get("msgs_per_s_p50"):
            continue
        chars = section.get("mean_message_chars", {}).get(kind)
        durable = section.get("durability", {})
        out.append(
            _row(
                f"frs_record batches of 1,000 ≥ 20,000 msg/s over stdio ({kind} messages,"
                f" mean {chars} chars)",
                f"{row['msgs_per_s_p50']:,} msg/s (p50 {row['p50_ms']:.1f} ms per call);"
                f" {durable.get('journal_mode')}, synchronous={durable.get('synchronous')}",
                row["msgs_per_s_p50"] >= 20_000,
            )
        )
    return out


def _peer_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    sdk = section.get("sqlite_session", {})
    ratios = sdk.get("ratios")
    if not ratios:
        return [_row("Python API vs SQLiteSession", sdk.get("unavailable", "not measured"), None)]
    items = f"{sdk['items']:,}"
    worst = sdk.get("worst_ratios", {})
    out = []
    for key, label, bar in (
        ("read last 50: FRSSession / SQLiteSession", "get_items(limit=50)", 1.5),
        ("load 1,000-item batch: FRSSession / SQLiteSession", "add_items of 1,000", 1.5),
    ):
        r = ratios.get(key)
        if key in ratios:
            out.append(
                _row(
                    f"FRSSession {label} at {items} items ≤ {bar}× SQLiteSession (p50)",
                    f"{r}× (p99 against p99: {worst.get(key)}×)",
                    r is not None and r <= bar,
                )
            )
    for key, label in (
        ("read last 50: frs API view / SQLiteSession", "read last 50 (frs view)"),
        ("append 1: frs API / SQLiteSession", "append 1 item"),
        ("load 1,000-item batch: frs API / SQLiteSession", "append a batch of 1,000"),
    ):
        r = ratios.get(key)
        out.append(
            _row(
                f"Python API {label} at {items} items ≤ 1.0× SQLiteSession",
                f"{r}×",
                r is not None and r <= 1.0,
            )
        )
    return out


def _token_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    totals = section.get("totals", {})
    out = []
    if "view" in totals and "raw_json" in totals:
        r = totals["view"]["tokens"] / totals["raw_json"]["tokens"]
        out.append(
            _row(
                "default view ≤ 0.6× raw chat-format tokens (corpus total)",
                f"{r:.3f}× ({totals['view']['tokens']:,} / {totals['raw_json']['tokens']:,}"
                f" {section.get('tokenizer')} tokens)",
                r <= 0.6,
            )
        )
    budgets = [k for k in totals if k.startswith("budget ")]
    if not budgets:
        out.append(_row("budget_tokens view never over its budget", "not available", None))
    views = len(section.get("rows", []))
    for key in budgets:
        budget = key.split()[1]
        for encoding, bpe in totals[key].get("bpe", {}).items():
            out.append(
                _row(
                    f"budget_tokens={int(budget):,}: no view over its budget in {encoding}",
                    f"{bpe['over']} of {views} over; the largest is {bpe['largest_share']:.0%}"
                    " of the budget",
                    bpe["over"] == 0,
                )
            )
            out.append(
                _row(
                    f"budget_tokens={int(budget):,}: estimate's mean overshoot of {encoding} ≤ 15%",
                    f"{bpe['mean_overshoot']:.1%} (largest {bpe['max_overshoot']:.1%})",
                    bpe["mean_overshoot"] <= 0.15,
                )
            )
    return out


def _cache_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The kept prefix after 1 and 10 appends, per thread size and view (DESIGN §5)."""
    out = []
    for size, figures in section.items():
        if not isinstance(figures, dict) or "views" not in figures:
            continue
        for view, kept in figures["views"].items():
            for after, goal in (("after_1", 0.90), ("after_10", 0.75)):
                out.append(
                    _row(
                        f"kept prefix {after.replace('_', ' ')} append(s) ≥ {goal:.0%}:"
                        f" {view}, {int(size):,} messages",
                        f"{kept[after]:.1%} median of {figures['trials']}"
                        f" (lowest {kept[after + '_min']:.1%})",
                        kept[after] >= goal,
                    )
                )
    return out


def _memory_rows(section: dict[str, Any], latency: dict[str, Any]) -> list[dict[str, Any]]:
    steps = section.get("serving", {}).get("steps", [])
    out = []
    if steps:
        peak = steps[-1]["vm_hwm_mib"]
        out.append(
            _row(
                "server RSS ≤ 150 MB with a 100,000-message session (view, squash, restore)",
                f"{peak} MiB peak (VmHWM)",
                peak <= 150,
            )
        )
    primary = latency.get("passes", {}).get("stdio legacy", {})
    hwm = primary.get("sizes", {}).get(LARGE, {}).get("vm_hwm_mib")
    if hwm is not None:
        out.append(
            _row(
                "server RSS ≤ 150 MB, 100k session, after the latency run incl. full views",
                f"{hwm} MiB peak (VmHWM)",
                hwm <= 150,
                "informational: the whole-thread view renders every entry in memory",
            )
        )
    return out


def judge(results: dict[str, Any]) -> list[dict[str, Any]]:
    latency = results.get("latency", {})
    return [
        *_latency_rows(latency),
        *_throughput_rows(results.get("throughput", {})),
        *_peer_rows(results.get("peers", {})),
        *_token_rows(results.get("tokens", {})),
        *_cache_rows(results.get("cache", {})),
        *_memory_rows(results.get("memory", {}), latency),
    ]
