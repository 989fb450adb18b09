"""The hooks (`frs-mcp hook`) on the corpus: what the first request after a host's compaction
holds, with the host's summary alone and with the digest added; and what a hook costs its host
in time.

`python -m bench.hooks [--budget N] [--runs N]` prints two tables.

What the first request holds. Each long transcript (more than twice the budget: `bench.digest`)
is compacted at its end as Claude Code compacts: the first request after it holds the host's
summary, then the newest round verbatim (the last assistant message with the tool results that
answer it). The share of the session's facts that request holds is measured as `bench.digest`
measures a digest (paths the session worked on, each distinct command's first line, every error
line still open; `bench.digest.known`, `bench.digest.held`), for:

- `tail`: the kept round alone (what the request holds of the facts if the summary holds none);
- `summary`: a stand-in for the host's summary, then the round. No model runs here, so the
  summary is the session's own words, which a summary mostly retells: the user's messages and
  the assistant's text, without its tool calls or their output, the newest kept, cut to 3,400
  estimated tokens (the two real Claude Code summaries measured for issue 31 were 3,200 to
  3,600 tokens, and held 22-36% of the paths, 5-25% of the commands and none of the error
  lines: this stand-in, which keeps every word the session said in that room, is generous);
- `+digest`: the same with the hook's answer added (`frs.hooks.compaction_context` at the
  budget, as Codex, Gemini CLI and OpenCode get it);
- `+digest (CC)`: the same with the answer Claude Code gets: it shows 9,900 characters of one
  hook's answer as they are, so the digest comes in two parts, one hook each
  (`frs.hooks.fitted_parts`); `CC, 1 hook`: what one hook alone could give it;
- `digest`: the hook's answer alone (the target: at 4,000 tokens, 0.9 of the paths and of the
  commands, every open error).

What a hook costs. `frs-mcp hook claude-code Stop` run as Claude Code runs it (a process, the
hook's JSON on stdin, a SQLite file) on a made-up transcript of N rounds (a call, its 3 KB
result, Claude Code's bookkeeping lines including a 20 KB attachment a round): the first run
records the whole transcript, the next finds nothing new; and `SessionStart` after a compaction
(records, waits for the transcript to stop growing, answers with the digest's first part, as
the first of the README's two hooks does). Median wall time of `--runs` runs, each on a fresh
copy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.corpus import Transcript
from bench.digest import BUDGET, Held, held, known, long_transcripts
from frs.hooks import Recorded, compaction_context, fitted_parts
from frs.model import LANES, Message, Session, SessionId
from frs.text import estimate_tokens, message_body
from server.cli.hooks.claude_code import MAX_CHARS
from server.cli.hooks.config import CLAUDE_CODE_PARTS

REPO = Path(__file__).resolve().parents[1]
SUMMARY_TOKENS = 3_400  # the size of the real Claude Code summaries measured for issue 31
ROUNDS = (50, 500, 2_000)  # rounds of the made-up transcripts the hook is timed on


@dataclass(frozen=True, slots=True)
class Compacted:
    """What the first request after a modelled compaction holds, by what it is made of."""

    name: str
    tokens: int  # the session's estimated tokens
    digest_tokens: int
    claude_tokens: int  # the digest in Claude Code's parts
    tail: Held
    summary: Held
    with_digest: Held
    with_claude: Held
    with_one_hook: Held  # Claude Code's, had it one hook
    digest: Held
    counts: tuple[int, int, int]  # the session's paths, commands, open errors


def kept_round(thread: Sequence[Message]) -> list[Message]:
    """The newest round as Claude Code keeps it: the last assistant message and the tool
    results after it."""
    last = max((i for i, m in enumerate(thread) if m.role == "assistant"), default=len(thread))
    return list(thread[last:])


def summary_stand_in(thread: Sequence[Message], tokens: int = SUMMARY_TOKENS) -> str:
    """The session's own words, newest kept, in at most `tokens` estimated tokens."""
    said = [m.content for m in thread if m.role in ("user", "assistant") and m.content.strip()]
    kept: list[str] = []
    room = tokens
    for text in reversed(said):
        cost = estimate_tokens(text + "\n")
        if cost > room:
            break
        kept.append(text)
        room -= cost
    return "\n".join(reversed(kept))


def recorded(transcript: Transcript, thread: Sequence[Message]) -> Recorded:
    """The transcript as the hook reads it back from its session."""
    session = Session(
        id=SessionId("0123456789ab"),
        title=transcript.name,
        goal="",
        numbering="position",
        revision=1,
        created_at="",
        updated_at="",
        live_count=len(thread),
        live_tokens=sum(m.tokens for m in thread),
        lanes=dict.fromkeys(LANES, 0),
    )
    return Recorded(session, tuple(thread))


def compacted(transcript: Transcript, budget: int) -> Compacted:
    thread = transcript.thread()
    facts = known(thread)
    tail = "\n".join(message_body(m.content, m.tool_calls) for m in kept_round(thread))
    summary = summary_stand_in(thread)
    found = recorded(transcript, thread)
    digest = compaction_context(found, budget)
    claude = "\n".join(fitted_parts(found, budget, MAX_CHARS, CLAUDE_CODE_PARTS))
    one_hook = "\n".join(fitted_parts(found, budget, MAX_CHARS))
    return Compacted(
        name=transcript.name,
        tokens=sum(m.tokens for m in thread),
        digest_tokens=estimate_tokens(digest),
        claude_tokens=estimate_tokens(claude),
        tail=held(facts, tail),
        summary=held(facts, f"{summary}\n{tail}"),
        with_digest=held(facts, f"{summary}\n{digest}\n{tail}"),
        with_claude=held(facts, f"{summary}\n{claude}\n{tail}"),
        with_one_hook=held(facts, f"{summary}\n{one_hook}\n{tail}"),
        digest=held(facts, digest),
        counts=(len(facts.paths), len(facts.commands), len(facts.errors)),
    )


def coverage(budget: int = BUDGET) -> list[str]:
    columns = ("tail", "summary", "+digest", "+digest (CC)", "CC, 1 hook", "digest")
    lines = [
        f"{'transcript':32} {'tokens':>7} {'digest':>6} {'CC':>5} {'facts':>12}  "
        + "  ".join(f"{c:>14}" for c in columns)
    ]
    for transcript in long_transcripts(budget):
        got = compacted(transcript, budget)
        shares = (
            got.tail,
            got.summary,
            got.with_digest,
            got.with_claude,
            got.with_one_hook,
            got.digest,
        )
        counts = "/".join(str(n) for n in got.counts)
        lines.append(
            f"{got.name:32} {got.tokens:>7,} {got.digest_tokens:>6,} {got.claude_tokens:>5,}"
            f" {counts:>12}  " + "  ".join(f"{_shares(s):>14}" for s in shares)
        )
    lines.append(
        "\nEach cell: the share of the session's paths, commands and open error lines the "
        "first request after the compaction holds (facts: their counts). tail: the kept round; "
        f"summary: a stand-in for the host's summary ({SUMMARY_TOKENS:,} tokens of the "
        f"session's own words) and the round; +digest: and the hook's digest at {budget:,} "
        f"tokens; +digest (CC): and the digest as Claude Code gets it, in parts of at most "
        f"{MAX_CHARS:,} characters, one hook each ({CLAUDE_CODE_PARTS}); CC, 1 hook: had it one "
        "hook; digest: the digest alone. digest, CC: the digests' estimated tokens."
    )
    return lines


def _shares(got: Held) -> str:
    return f"{got.paths:.2f} {got.commands:.2f} {got.errors:.2f}"


def made_up(home: Path, rounds: int) -> dict[str, object]:
    """A Claude Code transcript of `rounds` rounds under `home`; the Stop hook's input."""
    from tests.server.hooks.transcripts import ClaudeTranscript, text, tool_use

    cc = ClaudeTranscript(home, "0f0f0f0f-1111-2222-3333-444444444444")
    cc.prompt("Refactor the parser")
    for n in range(rounds):
        cc.bookkeeping()
        cc.lines.append(json.dumps({"type": "attachment", "attachment": {"text": "x" * 20_000}}))
        cc.answer(
            f"msg_{n}",
            text(f"Reading src/module_{n}.py."),
            tool_use(f"toolu_{n}", "Bash", command=f"cat src/module_{n}.py"),
        )
        cc.result(f"toolu_{n}", "\n".join(f"def f{n}_{i}(): return {i}" for i in range(120)))
    cc.write()
    return cc.hook("Stop")


def _hook(home: Path, event: str, given: dict[str, object], *flags: str) -> float:
    env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "server.entry", "hook", "claude-code", event, *flags],
        input=json.dumps(given).encode(),
        capture_output=True,
        env={**env, "HOME": str(home)},
        cwd=REPO,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"frs-mcp hook {event}: {done.stderr.decode()}")
    return took


def timing(runs: int) -> list[str]:
    lines = [f"{'rounds':>7} {'transcript':>11} {'first Stop':>10} {'next Stop':>9} {'compact':>8}"]
    with tempfile.TemporaryDirectory() as folder:
        for rounds in ROUNDS:
            source = Path(folder) / f"made-{rounds}"
            stop = made_up(source, rounds)
            size = Path(str(stop["transcript_path"])).stat().st_size
            first, again, compact = [], [], []
            for run in range(runs):
                home = Path(folder) / f"run-{rounds}-{run}"
                shutil.copytree(source, home)
                given = {
                    **stop,
                    "transcript_path": str(stop["transcript_path"]).replace(str(source), str(home)),
                }
                first.append(_hook(home, "Stop", given))
                again.append(_hook(home, "Stop", given))
                start = {**given, "hook_event_name": "SessionStart", "source": "compact"}
                compact.append(_hook(home, "SessionStart", start, "--part", "1/2"))
                shutil.rmtree(home)
            lines.append(
                f"{rounds:>7,} {size / 1e6:>9.1f}MB {statistics.median(first):>9.2f}s"
                f" {statistics.median(again):>8.2f}s {statistics.median(compact):>7.2f}s"
            )
    lines.append(
        f"\nMedian wall time of {runs} runs of `frs-mcp hook claude-code EVENT` (a process: "
        "start-up, reading, recording or the digest). first Stop: records the whole transcript; "
        "next Stop: nothing new; compact: SessionStart after a compaction, the first of the "
        "README's two hooks (records nothing new, waits 0.25 s for the transcript to stop "
        "growing, answers with the digest's first part)."
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hooks", description=__doc__)
    parser.add_argument("--budget", type=int, default=BUDGET, help="the digest's budget")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each hook")
    args = parser.parse_args(argv)
    print("\n".join(coverage(args.budget)))
    print()
    print("\n".join(timing(args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
