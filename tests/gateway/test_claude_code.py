"""Real Claude Code, headless, through `frs-mcp gateway` to the scripted model, with frs-mcp as
its MCP server on the same database: the gateway records the thread (no frs_record) and the
model's frs tools act on it with nothing typed (Claude Code's session id names both), every
request before the squash reaches the model byte for byte, the squash the model makes is sent
instead of its originals from the next call on, and every request stays valid."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from frs import Env, pages, sessions
from frs.host_threads import find_thread
from frs.model import Scope as FrsScope
from server.gateway.anthropic_rules import problems
from server.gateway.command import open_gateway
from server.gateway.proxy import Gateway, Upstreams
from server.settings import Settings
from tests.gateway.harness import served
from tests.hosts import pinned
from tests.hosts.claude_code import ClaudeCode
from tests.hosts.model import ModelServer, Script, Seen, Turn

pytestmark = [pytest.mark.slow, pytest.mark.hosts]

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Tap:
    """The gateway, with every request body the host sent it kept."""

    gateway: Gateway
    bodies: list[tuple[str, bytes]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks: list[bytes] = []

        async def tapped() -> Message:
            message = await receive()
            if message["type"] != "http.request":
                return message  # the gateway listens for a hang-up once it has the body
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.bodies.append((scope["path"], b"".join(chunks)))
            return message

        await self.gateway(scope, tapped, send)


@asynccontextmanager
async def gateway_to(model: ModelServer, database: Path) -> AsyncIterator[tuple[str, Tap]]:
    settings = Settings(database=str(database))
    upstreams = Upstreams(anthropic=model.url, openai=model.url)
    async with open_gateway(settings, upstreams) as gateway:
        tap = Tap(gateway)
        async with served(tap) as url:
            yield url, tap


def script() -> Script:
    """The model looks at its thread twice (the gateway recorded it: nothing typed, no
    session id), squashes its first look, reads the originals back, and ends."""

    def look_again(seen: Seen) -> Turn:
        view = seen.result.text
        assert "Recorded by frs-mcp gateway" in view, view
        assert "Fix the flaky test" in view, view
        return Turn.call("mcp__frs__frs_view_thread", "Again.")

    def squash(seen: Seen) -> Turn:
        view = seen.result.text
        assert "[3] Tool mcp__frs__frs_view_thread" in view, view
        return Turn.call(
            "mcp__frs__frs_compress_range",
            "Squashing the first look.",
            **{"from": 2, "to": 3},
            summary="First look: the thread had only the task.",
        )

    return Script(
        [
            Turn.call("mcp__frs__frs_view_thread", "Looking at the thread."),
            look_again,
            squash,
            Turn.call("mcp__frs__get_alias", "", alias="SQ.1"),
            Turn("Done: the race is fixed."),
        ]
    )


async def run_claude(
    url: str, database: Path, home: Path, prompt: str, *extra: str
) -> dict[str, Any]:
    """`claude -p` by the host tests' driver (in a worker thread: the gateway serves on this
    event loop), with frs-mcp on `database` as its only MCP server."""
    frs = {"command": sys.executable, "args": ["-m", "server", "--db", str(database)]}
    entry = {**frs, "env": {"PYTHONPATH": str(ROOT)}}
    claude = ClaudeCode(pinned.install(), home, home / "work")
    mcp = json.dumps({"mcpServers": {"frs": entry}})
    done = await anyio.to_thread.run_sync(
        lambda: claude.run(url, prompt, *extra, mcp=mcp, tool_search=False)
    )
    assert done.returncode == 0, done.describe()
    return done.result


async def test_claude_code_through_the_gateway_records_and_sends_the_squash(tmp_path):
    database = tmp_path / "frs.db"
    home = tmp_path / "home"
    home.mkdir()
    with ModelServer() as model:
        played = model.play(script())
        async with gateway_to(model, database) as (url, tap):
            answer = await run_claude(url, database, home, "Fix the flaky test in test_sync.py.")
            await tap.gateway.settled()
            env = tap.gateway.recorder.env
            conversations = {
                e.header("x-claude-code-session-id") for e in played.log if e.kind == "step"
            }
            assert len(conversations) == 1
            (conversation,) = conversations
            assert conversation
            thread = await find_thread(env, "claude-code", conversation)
            assert thread is not None, "the gateway recorded no session"
            service = Env(env.store, scope=FrsScope(client="test"))
            originals = await pages.get_alias(service, "SQ.1", session_id=thread.session.id)
            entries = (await sessions.live_thread(service, thread.session.id)).entries
    played.check_done()
    assert answer.get("result") == "Done: the race is fixed."
    steps = played.steps_seen()
    host = [body for path, body in tap.bodies if path == "/v1/messages"]
    # Every request the model received keeps the API's rules.
    for exchange in played.log:
        if exchange.path == "/v1/messages":
            assert problems(json.loads(exchange.body)) == []
    # Before the squash, every request reached the model exactly as Claude Code sent it.
    for exchange in steps[:3]:
        assert exchange.body in host
    # After it, the squashed call and its result are not sent; the summary is.
    after = [json.loads(e.body)["messages"] for e in steps[3:]]
    first_call = next(
        m["content"][-1]["id"]
        for m in json.loads(steps[1].body)["messages"]
        if m["role"] == "assistant"
    )
    for messages in after:
        sent = json.dumps(messages)
        assert first_call not in _call_ids(messages)
        assert "First look: the thread had only the task." in sent
        assert "FRS squash SQ.1@" in sent
    # Consecutive requests repeat their messages unchanged (the cache marker aside).
    earlier, later = after
    assert _plain(later[: len(earlier) - 1]) == _plain(earlier[:-1])
    # The thread was recorded with no frs_record, and get_alias returns the originals.
    assert all(
        "frs_record" not in json.dumps(m.tool_calls and m.tool_calls[0].name) for m in entries
    )
    assert entries[0].role == "user"
    assert "Fix the flaky test" in entries[0].content
    assert entries[1].kind == "summary"
    # The last answer came from the stream (no request followed it); none was recorded twice.
    assert entries[-1].content == "Done: the race is fixed."
    calls = [call.id for entry in entries for call in entry.tool_calls]
    assert len(calls) == len(set(calls)) == 3  # the first call is inside the squash
    assert "mcp__frs__frs_view_thread" in originals.text
    # The model's own get_alias, with nothing typed, read them back too.
    assert "Looking at the thread." in played.seen_at(4).result.text


def _call_ids(messages: list[dict[str, Any]]) -> set[str]:
    """The ids of every call and result block sent."""
    return {
        str(block.get("id") or block.get("tool_use_id"))
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") in ("tool_use", "tool_result")
    }


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps(messages))
    for message in out:
        if isinstance(message["content"], list):
            for block in message["content"]:
                block.pop("cache_control", None)
    return out


async def test_a_resumed_conversation_is_sent_its_squash_from_its_first_call(tmp_path):
    database = tmp_path / "frs.db"
    home = tmp_path / "home"
    home.mkdir()
    steps = [*script().steps, Turn("Resumed: nothing is left to do.")]
    with ModelServer() as model:
        played = model.play(Script(steps))
        async with gateway_to(model, database) as (url, tap):
            first = await run_claude(url, database, home, "Fix the flaky test in test_sync.py.")
            await tap.gateway.settled()
            again = await run_claude(
                url, database, home, "Anything left?", "--resume", str(first["session_id"])
            )
            await tap.gateway.settled()
    played.check_done()
    assert again.get("result") == "Resumed: nothing is left to do."
    resumed = played.steps_seen()[5]
    assert resumed.header("x-claude-code-session-id") == first["session_id"]
    messages = json.loads(resumed.body)["messages"]
    assert problems(json.loads(resumed.body)) == []
    sent = json.dumps(messages)
    assert "First look: the thread had only the task." in sent
    assert "Anything left?" in sent
    first_call = next(
        m["content"][-1]["id"]
        for m in json.loads(played.steps_seen()[1].body)["messages"]
        if m["role"] == "assistant"
    )
    assert first_call not in _call_ids(messages)
