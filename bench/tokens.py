"""Tokens on the corpus: the raw chat request against the views frs renders of the same thread.

Each transcript is recorded through the Python API into its own session. Against the tokens of
the OpenAI chat-format JSON request that would carry its messages we count: the default view,
the `merge_runs` and `budget_tokens` views where this build has them, and the default view after
a scripted distillation that squashes every completed run (all runs but the last, which is still
the one being worked on) into a fixed-rule summary: the run's first user line and its last
assistant line, each cut to 150 characters. No model is involved, so every figure reproduces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.corpus import Line, Transcript
from bench.servers import NOT_AVAILABLE
from bench.tokenizer import Tokenizer
from frs import Env, FrsError, SessionId, ViewOptions, recording, sessions, squashes, viewing
from frs.text import estimate_tokens
from storage import SqliteStore, open_database

BUDGETS = (1_000, 4_000, 20_000)
LINE_CHARS = 150


def view_fields() -> set[str]:
    """What `ViewOptions` offers in this build (budget_tokens and merge_runs came later)."""
    return {f.name for f in dataclasses.fields(ViewOptions)}


def view_options(**changes: Any) -> ViewOptions:
    """`ViewOptions` with options this build may not have, named at run time."""
    return dataclasses.replace(ViewOptions(), **changes)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def _cut(text: str) -> str:
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def fixed_summary(lines: list[Line]) -> str:
    """The run's first user line and last assistant line, each cut to 150 characters."""
    asked = next((_first_line(m.content) for m in lines if m.role == "user" and m.content), "")
    answered = next(
        (_last_line(m.content) for m in reversed(lines) if m.role == "assistant" and m.content),
        "",
    )
    return f"Run: {_cut(asked) or '(no user text)'} → {_cut(answered) or '(no assistant text)'}"


def runs(transcript: Transcript) -> list[tuple[int, int, list[Line]]]:
    """Each run as (first number, last number, its messages); numbers are 1-based, as recorded.
    A run id seen again after another run started is kept with its first stretch only."""
    out: list[tuple[int, int, list[Line]]] = []
    seen: set[str] = set()
    for number, line in enumerate(transcript.lines, start=1):
        if line.run_id is None:
            continue
        if out and line.run_id == out[-1][2][0].run_id and number == out[-1][1] + 1:
            first, _, members = out[-1]
            out[-1] = (first, number, [*members, line])
        elif line.run_id not in seen:
            seen.add(line.run_id)
            out.append((number, number, [line]))
    return out


async def _distill(env: Env, sid: SessionId, transcript: Transcript) -> dict[str, Any]:
    squashed, kept, refused = 0, 0, []
    completed = runs(transcript)[:-1]
    for first, last, members in completed:
        try:
            await squashes.compress_range(
                env, first, last, fixed_summary(members), numbering="absolute", session_id=sid
            )
            squashed += 1
        except FrsError as exc:
            kept += 1
            refused.append(f"{first}–{last}: {type(exc).__name__}")
    return {"completed_runs": len(completed), "squashed": squashed, "kept": kept, "why": refused}


def _bpe_totals(views: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """Per BPE encoding: views over the budget in real tokens, and how far the estimate lies
    above the real count on average (its overshoot: a view that much smaller than it could be)."""
    out: dict[str, Any] = {}
    for name in views[0].get("bpe", {}) if views else ():
        real = [view["bpe"][name] for view in views]
        overshoot = [view["est"] / count - 1 for view, count in zip(views, real, strict=True)]
        out[name] = {
            "over": sum(count > budget for count in real),
            "largest_share": round(max(real) / budget, 3),
            "mean_overshoot": round(sum(overshoot) / len(overshoot), 3),
            "max_overshoot": round(max(overshoot), 3),
        }
    return out


async def run(
    folder: Path,
    corpus: list[Transcript],
    tokenizer: Tokenizer,
    log: Callable[[str], None],
    checks: Sequence[Tokenizer] = (),
) -> dict[str, Any]:
    """`checks`: more BPE tokenizers every budgeted view is counted in (o200k_base and
    cl100k_base), so a budget is checked in real tokens, not only in the estimator's."""
    fields = view_fields()
    has_merge = "merge_runs" in fields
    has_budget = "budget_tokens" in fields

    def both(text: str) -> dict[str, int]:
        return {"tokens": tokenizer.count(text), "est": estimate_tokens(text)}

    rows = []
    async with open_database(folder / "tokens.db") as db:
        env = Env(SqliteStore(db))
        for transcript in corpus:
            session = (await sessions.start(env, title=transcript.name)).session
            sid = session.id
            await recording.record(env, [line.to_new() for line in transcript.lines], sid)
            row: dict[str, Any] = {
                "transcript": transcript.name,
                "messages": len(transcript.lines),
                "runs": len(runs(transcript)),
                "raw_json": both(transcript.chat_request()),
                "raw_text": both(
                    "\n".join(
                        "\n".join([line.content, *(c.name + c.arguments for c in line.tool_calls)])
                        for line in transcript.lines
                    )
                ),
                "view": both(await viewing.view(env, ViewOptions(), sid)),
            }
            if has_merge:
                row["merge_runs"] = both(
                    await viewing.view(env, view_options(merge_runs=True), sid)
                )
            if has_budget:
                row["budget"] = {}
                for budget in BUDGETS:
                    options = view_options(budget_tokens=budget)
                    text = await viewing.view(env, options, sid)
                    counted: dict[str, Any] = both(text)
                    counted["over"] = counted["est"] > budget
                    counted["bpe"] = {check.name: check.count(text) for check in checks}
                    row["budget"][str(budget)] = counted
            row["distill"] = await _distill(env, sid, transcript)
            row["distilled"] = both(await viewing.view(env, ViewOptions(), sid))
            rows.append(row)
    log("tokens: done")
    totals: dict[str, Any] = {}
    for key in ("raw_json", "raw_text", "view", "merge_runs", "distilled"):
        if all(key in r for r in rows):
            totals[key] = {unit: sum(r[key][unit] for r in rows) for unit in ("tokens", "est")}
    if has_budget:
        for budget in BUDGETS:
            key = f"budget {budget}"
            totals[key] = {
                unit: sum(r["budget"][str(budget)][unit] for r in rows)
                for unit in ("tokens", "est")
            }
            totals[key]["over"] = sum(r["budget"][str(budget)]["over"] for r in rows)
            totals[key]["bpe"] = _bpe_totals([r["budget"][str(budget)] for r in rows], budget)
    return {
        "tokenizer": tokenizer.name,
        "tokenizer_note": tokenizer.note,
        "budgets": list(BUDGETS),
        "unavailable": {
            **({} if has_merge else {"merge_runs": NOT_AVAILABLE}),
            **({} if has_budget else {"budget_tokens": NOT_AVAILABLE}),
        },
        "distillation_rule": (
            "every completed run (all but the last) squashed with frs_compress_range into "
            f"'Run: <first user line> → <last assistant line>', each line cut to {LINE_CHARS} chars"
        ),
        "rows": rows,
        "totals": totals,
    }
