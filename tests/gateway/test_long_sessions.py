"""Real hosts through `frs-mcp gateway` in long scripted sessions, with the autopilot on as
`frs-mcp gateway` runs it and the model passive (issue 29, "Done when"): Claude Code 2.1.332
(Messages, thinking on), Codex CLI 0.171.0 (Responses, reasoning items) and OpenCode 1.18.33
(Chat Completions). The scripted model thinks before each call (Claude Code's thinking blocks
are signed over what the model received and checked as the API checks them; Codex's reasoning
items carry encrypted content checked the same way), calls the host's own tools on real output
(`seq`, files the test writes), and makes each host compact once by the usage it reports.

What the model received is what is asserted: no request refused; the thinking kept coming back
(Claude Code strips all of it after a 400 about thinking, so a silent fallback would show);
every autopilot squash reached it within two calls, before the host's compaction and after;
recording went on after the compaction; and every original the model was not sent is one
`get_alias` away.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from frs import Env, sessions
from frs import pages as frs_pages
from frs.host_threads import SquashCalls, find_thread, squash_calls
from frs.model import Compaction, GatewayCall, SessionId, Squash
from frs.model import Scope as FrsScope
from server.gateway import anthropic_rules, chat, responses
from tests.gateway.test_claude_code import Tap, gateway_to
from tests.hosts import pinned
from tests.hosts.claude_code import ClaudeCode
from tests.hosts.codex import Codex
from tests.hosts.model import Exchange, ModelServer, Script, Seen, SideRule, ToolCall, Turn
from tests.hosts.model.script import DEFAULT_SIDE
from tests.hosts.opencode import OpenCode

pytestmark = [pytest.mark.slow, pytest.mark.hosts]

#: Lines of `seq` per call (~5 KB) and lines per data file read (~6 KB): enough for the
#: autopilot (it acts past 20,000 tokens sent, on batches that pay back within 4 calls).
LINES = 1_200
RECORDS = 250


def data_file(folder: Path, i: int) -> Path:
    path = folder / f"data_{i:03d}.txt"
    path.write_text("".join(f"record {i}.{k}: value {k * 7 % 13}\n" for k in range(RECORDS)))
    return path


@dataclass(frozen=True)
class Wire:
    """How a test reads one wire's requests: the path, the validator the gateway checks
    forwarded requests with, and each request's tool calls with their results' texts."""

    path: str
    problems: Callable[[Any], list[str]]
    calls: Callable[[Any], dict[str, str]]


def _anthropic_calls(body: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_use":
                out.setdefault(block["id"], "")
            elif block.get("type") == "tool_result":
                content = block.get("content")
                text = content if isinstance(content, str) else json.dumps(content)
                out[block["tool_use_id"]] = text
    return out


def _responses_calls(body: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in body["input"]:
        if item.get("type") == "function_call":
            out.setdefault(item["call_id"], "")
        elif item.get("type") == "function_call_output":
            out[item["call_id"]] = str(item.get("output"))
    return out


def _chat_calls(body: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for message in body["messages"]:
        for call in message.get("tool_calls") or ():
            out.setdefault(call["id"], "")
        if message.get("role") == "tool":
            out[message["tool_call_id"]] = str(message.get("content"))
    return out


ANTHROPIC = Wire("/v1/messages", anthropic_rules.problems, _anthropic_calls)
RESPONSES = Wire("/v1/responses", responses.WIRE.problems, _responses_calls)
CHAT = Wire("/v1/chat/completions", chat.WIRE.problems, _chat_calls)


@dataclass
class Session:
    """A finished host run through the gateway: what the host sent and the model received,
    request by request, and what the gateway stored of the conversation."""

    played: Script
    wire: Wire
    sent: list[Any]  # the host's request bodies, parsed, in order
    sent_bytes: int
    received: list[Exchange]  # the same requests as the model received them
    calls: list[GatewayCall]
    squashes: list[Squash]
    compactions: list[Compaction]
    pages: dict[int, str]  # per squash n: its originals, every page of its get_alias
    recorded: set[str]  # every call id the thread holds (live, or inside a squash)
    after: list[str]  # the texts of the live entries after the compaction's

    @property
    def timing(self) -> list[SquashCalls]:
        return squash_calls(self.calls, self.squashes)

    def figures(self) -> str:
        sent = sum(c.sent_tokens for c in self.calls)
        forwarded = sum(c.forwarded_tokens for c in self.calls)
        model_bytes = sum(len(e.body) for e in self.received)
        made = [(t.made, t.sent) for t in self.timing]
        at = [k for k, e in enumerate(self.received, start=1) if e.rule == "compaction"]
        return (
            f"{len(self.calls)} calls, compaction at request {at}, {len(self.squashes)} "
            f"squashes (made after call, first sent at call) {made}; tokens host-sent "
            f"{sent:,} forwarded {forwarded:,} ({forwarded / sent:.2f}); bytes "
            f"{self.sent_bytes:,} -> {model_bytes:,} ({model_bytes / self.sent_bytes:.2f})"
        )


async def gather(
    played: Script, tap: Tap, wire: Wire, interface: str, conversation: str
) -> Session:
    """What the run left: the requests, host-sent and received, paired in order (each host
    sends one at a time), and the gateway's thread of the conversation."""
    await tap.gateway.settled()
    env = tap.gateway.recorder.env
    raw = [body for path, body in tap.bodies if path.endswith(wire.path)]
    sent = [json.loads(body) for body in raw]
    received = [e for e in played.log if e.path.endswith(wire.path) and e.method == "POST"]
    assert len(sent) == len(received), (len(sent), len(received))
    thread = await find_thread(env, interface, conversation)
    assert thread is not None, f"the gateway recorded no {interface} session"
    session_id: SessionId = thread.session.id
    async with env.store.snapshot() as reader:
        calls = await reader.gateway_calls(session_id, 10_000)
        squashes = await reader.squashes(session_id)
        compactions = await reader.compactions(session_id)
    service = Env(env.store, scope=FrsScope(client="test"))
    pages = {s.n: await whole_alias(service, f"SQ.{s.n}", session_id) for s in squashes}
    entries = (await sessions.live_thread(service, session_id)).entries
    recorded = {c.id for e in entries for c in e.tool_calls}
    known = {i for body in sent for i in wire.calls(body)}
    recorded |= {i for i in known if any(i in page for page in pages.values())}
    after = [e.content for e in entries if compactions and e.ord > compactions[0].number]
    return Session(
        played,
        wire,
        sent,
        sum(map(len, raw)),
        received,
        calls,
        squashes,
        compactions,
        pages,
        recorded,
        after,
    )


async def whole_alias(service: Env, alias: str, session_id: SessionId) -> str:
    """Every page of an alias's text, joined."""
    texts = []
    offset = 0
    while True:
        page = await frs_pages.get_alias(service, alias, offset, session_id=session_id)
        texts.append(page.text)
        if page.end >= page.size:
            return "".join(texts)
        offset = page.end


def check(session: Session, final: str) -> None:
    """What every long session must show (see the module docstring); `final`: the model's
    last answer, which ends the host's run."""
    played, wire = session.played, session.wire
    # No request was refused, every step was played; every request kept the wire's rules.
    played.check_done()
    assert [e.error for e in played.log if e.error] == []
    for exchange in session.received:
        assert wire.problems(json.loads(exchange.body)) == [], exchange.step
    # One compaction: the host asked for one summary, and the gateway recorded it once.
    assert [e.rule for e in played.log if e.kind == "side"].count("compaction") == 1
    assert len(session.compactions) == 1
    (compaction,) = session.compactions
    # The autopilot made its squashes, every one automatic, and each reached the model
    # within two calls; one made only after the last call has none left to reach it in.
    assert len(session.squashes) >= 3
    assert all(s.automatic for s in session.squashes)
    last = len(session.calls)
    timing = [t for t in session.timing if t.made < last]
    assert all(t.delay is not None and 1 <= t.delay <= 2 for t in timing), timing
    # Recording and squashes went on after the compaction: entries after it up to the last
    # answer, every call the host made recorded, and a squash made after it reached the model.
    assert session.after[-1:] == [final]
    sent_ids = {i for body in session.sent for i in wire.calls(body)}
    assert sent_ids <= session.recorded, sorted(sent_ids - session.recorded)[:5]
    later = [
        t
        for s, t in zip(session.squashes, session.timing, strict=True)
        if s.created_at > compaction.created_at and t.sent is not None
    ]
    assert later, "no squash made after the compaction reached the model"
    check_originals(session)


def check_originals(session: Session) -> None:
    """Every call the model was not sent is in the originals of a squash: each squash's
    get_alias holds the calls it replaced when it was first sent, their results whole."""
    wire = session.wire
    host = [wire.calls(body) for body in session.sent]
    model = [wire.calls(json.loads(e.body)) for e in session.received]
    ids = set().union(*host)
    replaced: set[str] = set()
    for mine, theirs in zip(host, model, strict=True):
        replaced |= set(mine) - set(theirs)
    assert replaced, "the model was sent every call: nothing was squashed"
    covered: set[str] = set()
    for squash in session.squashes:
        page = unfolded(session.pages, squash.n)
        held = {i for i in ids if i in page}
        marker = f"FRS squash SQ.{squash.n}@"
        first = next((k for k, e in enumerate(session.received) if marker.encode() in e.body), None)
        if first is None:
            continue  # made after the last call
        assert held, f"SQ.{squash.n}: its originals name no call"
        # The calls it holds were sent by the host and replaced in what the model got.
        assert held <= set(host[first]), squash.n
        assert not held & set(model[first]), squash.n
        for i in held:
            output = host[first][i].rstrip().splitlines()
            assert output, (squash.n, i)
            assert output[-1].strip() in page, (squash.n, i)
        covered |= held
    assert replaced <= covered, sorted(replaced - covered)[:5]


def unfolded(pages: dict[int, str], n: int) -> str:
    """Squash n's originals as get_alias returns them and, for a roll-up of the autopilot's
    cards (whose originals are the cards), the originals each card's alias returns: every
    original is one get_alias away from the alias that names it."""
    page = pages[n]
    nested = {int(k) for k in re.findall(r'get_alias\("SQ\.(\d+)"\)', page)} - {n}
    return page + "".join(unfolded(pages, k) for k in sorted(nested) if k < n and k in pages)


def side(*rules: SideRule) -> tuple[SideRule, ...]:
    """The host's own compaction request first (it may offer no tools), then the defaults."""
    return (*rules, *DEFAULT_SIDE)


# -- Claude Code -------------------------------------------------------------------------------

CLAUDE_STEPS = 160
CLAUDE_COMPACTS_AFTER = 100  # the step whose answer reports the usage that compacts
#: Claude Code compacts past 67,000 tokens with a 100,000-token window (recon on 2.1.332).
CLAUDE_WINDOW = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}
CLAUDE_SUMMARY = "Counted with seq and read the data files, one a call; go on the same way."


def claude_script(workspace: Path) -> Script:
    """Claude Code's Bash running `seq` and its Read of the test's files, turn about, now and
    then both at once or a command that fails, each after a thought; one answer reports a
    usage past the compaction threshold."""

    def step(i: int) -> Turn:
        usage = 95_000 if i == CLAUDE_COMPACTS_AFTER else 30_000
        count = {"command": f"seq {i} {i + LINES}", "description": f"Count from {i}"}
        read = {"file_path": str(data_file(workspace, i))}
        if i % 13 == 6:
            missing = {"command": f"cat missing_{i}.txt", "description": "Read a missing file"}
            calls: tuple[ToolCall, ...] = (ToolCall("Bash", missing),)
        elif i % 9 == 4:
            calls = (ToolCall("Bash", count), ToolCall("Read", read))
        else:
            calls = (ToolCall("Read", read),) if i % 2 else (ToolCall("Bash", count),)
        thought = f"Step {i}: " + " and ".join(call.name for call in calls) + " next."
        return Turn(f"Step {i}.", calls, thinking=thought, input_tokens=usage)

    def asks(seen: Seen) -> bool:
        return seen.last_user_text.lstrip().startswith("CRITICAL: Respond with TEXT ONLY.")

    def summary(seen: Seen) -> Turn:
        return Turn(f"<summary>{CLAUDE_SUMMARY}</summary>", thinking="Sum it up.")

    steps = [step(i) for i in range(CLAUDE_STEPS)]
    done = Turn("Done: counted and read.", thinking="All done.", input_tokens=30_000)
    return Script([*steps, done], side=side(SideRule("compaction", asks, summary)))


async def test_a_long_claude_code_session(tmp_path: Path) -> None:
    database = tmp_path / "frs.db"
    home = tmp_path / "home"
    claude = ClaudeCode(pinned.install(), home, home / "work")
    claude.workspace.mkdir(parents=True)
    with ModelServer() as model:
        played = model.play(claude_script(claude.workspace))
        async with gateway_to(model, database) as (url, tap):
            run = await anyio.to_thread.run_sync(
                lambda: claude.run(
                    url,
                    "Count and read the data files.",
                    "--allowedTools",
                    "Bash,Read",
                    mcp=json.dumps({"mcpServers": {}}),
                    tool_search=False,
                    env=CLAUDE_WINDOW,
                    timeout=600,
                )
            )
            assert run.returncode == 0, run.describe() + "\n" + played.describe()[-3000:]
            (conversation,) = {e.header("x-claude-code-session-id") for e in played.log}
            assert conversation
            session = await gather(played, tap, ANTHROPIC, "claude-code", conversation)
    print(f"Claude Code: {session.figures()}")
    assert run.result.get("result") == "Done: counted and read."
    assert len(session.calls) >= 150
    check(session, "Done: counted and read.")
    # The compaction: its request as the notes say (tools offered, the same session), its
    # summary sent from then on as the first message.
    (asked,) = [e for e in played.log if e.rule == "compaction"]
    assert asked.seen is not None
    assert asked.seen.tools
    # The session held what real ones hold: calls made at once, and failed commands.
    results = [
        [b for b in m["content"] if b.get("type") == "tool_result"]
        for body in session.sent
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
    ]
    assert any(len(found) == 2 for found in results)
    assert any(b.get("is_error") for found in results for b in found)
    continued = [b for b in session.sent if _opens_with_summary(b)]
    assert continued
    assert CLAUDE_SUMMARY in json.dumps(continued[-1]["messages"][0])
    check_thinking(session)


def _opens_with_summary(body: Any) -> bool:
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else json.dumps(first)
    return "This session is being continued from a previous conversation" in text


def check_thinking(session: Session) -> None:
    """Claude Code never fell back to stripping its thinking (it does after any 400 about
    thinking: every assistant message it sends keeps its thinking block, the text omitted as
    Claude Code asks, the signature whole), and the thinking the model wrote kept reaching
    it: in every request that changes nothing before the open loop, the previous answer's
    thinking arrives and holds. A request that first sends a squash, or the first after the
    compaction, changes the prefix of the thinking kept after it: the API drops that, as the
    gateway asks it to."""
    for body in session.sent:
        for message in body["messages"]:
            if message["role"] == "assistant":
                first = message["content"][0]
                assert first["type"] == "thinking", message
                assert first["signature"], message  # kept though its text was omitted
    held = 0
    markers: set[str] = set()
    compacted = False
    for exchange in session.received:
        body = json.loads(exchange.body)
        now = set(re.findall(r"FRS squash (SQ\.\d+)@", json.dumps(body["messages"])))
        opens = _opens_with_summary(body)
        changed = bool(now - markers) or (opens and not compacted)
        markers, compacted = markers | now, compacted or opens
        thinking = [
            (i, j)
            for i, message in enumerate(body["messages"])
            if isinstance(message["content"], list)
            for j, block in enumerate(message["content"])
            if block.get("type") == "thinking"
        ]
        answers = [i for i, m in enumerate(body["messages"]) if m["role"] == "assistant"]
        if exchange.kind != "step" or not answers or changed:
            continue
        previous = (answers[-1], 0)
        assert previous in thinking, exchange.step
        assert previous not in exchange.dropped, exchange.step
        held += 1
    # Most requests change nothing before the open loop, and carry the previous thought.
    assert held > len(session.received) / 2


# -- Codex CLI ---------------------------------------------------------------------------------

CODEX_STEPS = 80
CODEX_COMPACTS_AFTER = 30
CODEX_LIMIT = "model_auto_compact_token_limit = 100000"


def codex_script() -> Script:
    """Codex's exec_command running `seq`, now and then two at once or a command that
    fails, each call after reasoning; one answer reports a usage past
    `model_auto_compact_token_limit`."""

    def step(i: int) -> Turn:
        usage = 150_000 if i == CODEX_COMPACTS_AFTER else 3_000
        count = ToolCall("exec_command", {"cmd": f"seq {i} {i + LINES}"})
        if i % 13 == 6:
            calls: tuple[ToolCall, ...] = (ToolCall("exec_command", {"cmd": f"cat x_{i}.txt"}),)
        elif i % 9 == 4:
            calls = (count, ToolCall("exec_command", {"cmd": f"seq {-i} {LINES - i}"}))
        else:
            calls = (count,)
        return Turn("", calls, thinking=f"Step {i}: count again.", input_tokens=usage)

    def asks(seen: Seen) -> bool:
        return seen.last_user_text.startswith("You are performing a CONTEXT CHECKPOINT")

    def summary(seen: Seen) -> Turn:
        return Turn("Counted with seq, one range a call; go on the same way.", thinking="Sum up.")

    steps = [step(i) for i in range(CODEX_STEPS)]
    done = Turn("Done: counted.", thinking="All done.")
    return Script([*steps, done], side=side(SideRule("compaction", asks, summary)))


async def test_a_long_codex_session(tmp_path: Path) -> None:
    database = tmp_path / "frs.db"
    host = Codex(pinned.install(), tmp_path / "home", tmp_path / "project")
    with ModelServer() as model:
        played = model.play(codex_script())
        async with gateway_to(model, database) as (url, tap):
            run = await anyio.to_thread.run_sync(
                lambda: host.run(url, "Count.", "", settings=CODEX_LIMIT, timeout=600)
            )
            assert run.returncode == 0, run.describe() + "\n" + played.describe()[-3000:]
            session = await gather(played, tap, RESPONSES, "codex", run.thread_id)
    print(f"Codex: {session.figures()}")
    check(session, "Done: counted.")
    # Its own summarising request: no tools, the checkpoint ask last; then the summary.
    (asked,) = [e for e in played.log if e.rule == "compaction"]
    assert asked.seen is not None
    assert not asked.seen.tools
    # Calls made at once, and failed commands.
    items = [item for body in session.sent for item in body["input"]]
    kinds = [item.get("type") for item in items]
    assert ("function_call", "function_call") in set(itertools.pairwise(kinds))
    assert any("Process exited with code 1" in str(item.get("output")) for item in items)
    bridge = "Another language model started to solve this problem"
    assert any(bridge in json.dumps(body["input"]) for body in session.sent)
    check_reasoning(session)


def check_reasoning(session: Session) -> None:
    """Codex sent every reasoning item back, and the model got each one it had not been
    squashed with: every call the model received comes after its answer's reasoning item
    (the scripted model refuses one sent without its call, or changed)."""
    for body in session.sent:
        assert _reasoned(body["input"]) == _calls(body["input"])
    reasoned = 0
    for exchange in session.received:
        items = json.loads(exchange.body)["input"]
        assert _reasoned(items) == _calls(items), exchange.step
        reasoned += _reasoned(items)
    assert reasoned > len(session.received)


def _calls(items: list[Any]) -> int:
    return sum(1 for item in items if item.get("type") == "function_call")


def _reasoned(items: list[Any]) -> int:
    """The calls that come after a reasoning item, past the answer's calls before them."""
    found = 0
    for k, item in enumerate(items):
        if item.get("type") != "function_call":
            continue
        before = k - 1
        while before >= 0 and items[before].get("type") == "function_call":
            before -= 1
        found += before >= 0 and items[before].get("type") == "reasoning"
    return found


# -- OpenCode ----------------------------------------------------------------------------------

OPENCODE_STEPS = 80
OPENCODE_COMPACTS_AFTER = 30
#: OpenCode compacts once a step's usage passes the model's context less its output.
OPENCODE_LIMIT = {"context": 50_000, "output": 4_000}


def opencode_script(workspace: Path) -> Script:
    """OpenCode's bash running `seq` and its read of the test's files, turn about, now and then
    both at once or a command that fails; one answer reports prompt tokens past the model's
    limit. (Chat Completions carries no reasoning.)"""

    def step(i: int) -> Turn:
        usage = 48_000 if i == OPENCODE_COMPACTS_AFTER else 3_000
        read = ToolCall("read", {"filePath": str(data_file(workspace, i))})
        count = {"command": f"seq {i} {i + LINES}", "description": f"Count from {i}"}
        if i % 13 == 6:
            missing = {"command": f"cat missing_{i}.txt", "description": "Read a missing file"}
            calls: tuple[ToolCall, ...] = (ToolCall("bash", missing),)
        elif i % 9 == 4:
            calls = (ToolCall("bash", count), read)
        else:
            calls = (read,) if i % 2 else (ToolCall("bash", count),)
        return Turn("", calls, input_tokens=usage)

    def asks(seen: Seen) -> bool:
        return not seen.tools and "You are a context summarization agent" in seen.system

    def summary(seen: Seen) -> Turn:
        return Turn("## Objective\nCount and read.\n## Work State\nHalf done; go on.")

    steps = [step(i) for i in range(OPENCODE_STEPS)]
    return Script(
        [*steps, Turn("Done: counted and read.")], side=side(SideRule("compaction", asks, summary))
    )


async def test_a_long_opencode_session(tmp_path: Path) -> None:
    database = tmp_path / "frs.db"
    host = OpenCode(pinned.install(), tmp_path / "home", tmp_path / "project")
    host.workspace.mkdir(parents=True)
    no_mcp = {"$schema": "https://opencode.ai/config.json"}
    with ModelServer() as model:
        played = model.play(opencode_script(host.workspace))
        async with gateway_to(model, database) as (url, tap):
            run = await anyio.to_thread.run_sync(
                lambda: host.run(url, "Count and read.", no_mcp, OPENCODE_LIMIT, timeout=600)
            )
            assert run.returncode == 0, run.describe() + "\n" + played.describe()[-3000:]
            (conversation,) = {e["sessionID"] for e in run.events}
            session = await gather(played, tap, CHAT, "opencode", conversation)
    print(f"OpenCode: {session.figures()}")
    check(session, "Done: counted and read.")
    messages = [m for body in session.sent for m in body["messages"]]
    assert any(len(m.get("tool_calls") or ()) == 2 for m in messages)
    assert any("No such file" in str(m.get("content")) for m in messages if m["role"] == "tool")
    # Its summarising request (no tools), then the summary answering its question.
    asked = "What did we do so far?"
    assert any(asked in json.dumps(body["messages"][:3]) for body in session.sent)
