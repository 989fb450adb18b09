"""Real OpenCode, headless (`opencode run`), over Chat Completions (an OpenAI-compatible provider
whose baseURL is the gateway) through `frs-mcp gateway` to the scripted model: the gateway
records the conversation under OpenCode's `x-session-affinity` header (its session id) with no
frs_record, every request before a squash reaches the model byte for byte, and after one the
squashed call and its result are not sent, the summary is, every request stays valid.

OpenCode tells the MCP servers it starts nothing of its conversation (tests/hosts/opencode.py),
so the model's own frs tools act on the project's session, not the gateway's; the squash here is
made on the gateway's session directly, as a call naming its `session_id` would."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from frs import Env, pages, squashes
from frs import sessions as frs_sessions
from frs.host_threads import find_thread
from frs.model import Scope
from server.gateway.chat import WIRE
from server.mcp.deps import open_deps
from server.settings import Settings
from tests.gateway.test_claude_code import gateway_to
from tests.hosts import pinned
from tests.hosts.model import ModelServer, Script, Seen, Turn
from tests.hosts.opencode import OpenCode, name

pytestmark = [pytest.mark.slow, pytest.mark.hosts]

SUMMARY = "First look at the thread: nothing recorded yet."


def squash_first_call(database: Path) -> None:
    """Squash the first tool call and its result of the one OpenCode conversation the gateway
    recorded (run on the scripted model's thread, with an event loop of its own)."""

    async def squash() -> None:
        async with open_deps(Settings(database=str(database))) as deps:
            service = Env(deps.env.store, scope=Scope(client="test"))
            listed = (await frs_sessions.page(service)).sessions
            [session] = [s for s in listed if s.interface == "opencode"]
            entries = (await frs_sessions.live_thread(service, session.id)).entries
            call = next(e for e in entries if e.tool_calls)
            result = next(e for e in entries if e.answers == call.number)
            await squashes.compress_range(
                service, call.number or 0, result.number or 0, SUMMARY, "absolute", session.id
            )

    asyncio.run(squash())


def script(database: Path) -> Script:
    def then_squash(seen: Seen) -> Turn:
        squash_first_call(database)
        return Turn.call(name("frs_view_thread"), "After the squash.")

    return Script(
        [
            Turn.call(name("frs_view_thread"), "Looking at the thread."),
            Turn.call(name("frs_view_thread"), "Again."),
            then_squash,
            Turn.call(name("frs_view_thread"), "Once more."),
            Turn("Done: the race is fixed."),
        ]
    )


async def test_opencode_through_the_gateway_records_and_sends_the_squash(tmp_path: Path) -> None:
    database = tmp_path / "frs.db"
    host = OpenCode(pinned.install(), tmp_path / "home", tmp_path / "project")
    with ModelServer() as model:
        played = model.play(script(database))
        async with gateway_to(model, database) as (url, tap):
            run = await anyio.to_thread.run_sync(
                lambda: host.run(url, "Fix the flaky test in test_sync.py.")
            )
            assert run.returncode == 0, run.describe() + "\n" + played.describe()
            await tap.gateway.settled()
            env = tap.gateway.recorder.env
            steps = played.steps_seen()
            sessions = {e["sessionID"] for e in run.events}
            assert len(sessions) == 1, sessions
            (conversation,) = sessions
            assert {e.header("x-session-affinity") for e in steps} == {conversation}
            thread = await find_thread(env, "opencode", conversation)
            assert thread is not None, "the gateway recorded no session under the session id"
            service = Env(env.store, scope=Scope(client="test"))
            originals = await pages.get_alias(service, "SQ.1", session_id=thread.session.id)
            entries = (await frs_sessions.live_thread(service, thread.session.id)).entries
    played.check_done()
    host_bodies = [body for path, body in tap.bodies if path.endswith("/chat/completions")]
    for exchange in played.log:
        if exchange.path.endswith("/chat/completions"):
            assert WIRE.problems(json.loads(exchange.body)) == [], exchange.step
    # Up to the squash (made while step 2 is answered), OpenCode's bytes exactly.
    for exchange in steps[:3]:
        assert exchange.body in host_bodies, exchange.step
    first_call = _call_ids(json.loads(steps[1].body)["messages"])[0]
    after = json.loads(steps[3].body)
    assert first_call not in _call_ids(after["messages"])
    assert SUMMARY in json.dumps(after["messages"])
    assert "FRS squash SQ.1@" in json.dumps(after["messages"])
    original = json.loads(host_bodies[-1])
    assert {k: v for k, v in after.items() if k != "messages"} == {
        k: v for k, v in original.items() if k != "messages"
    }
    assert after["messages"][0] == original["messages"][0]  # the system prompt
    # Recorded with no frs_record; get_alias returns the originals.
    assert [e.role for e in entries][:1] == ["user"]
    assert any(e.kind == "summary" for e in entries)
    assert not any(c.name.endswith("frs_record") for e in entries for c in e.tool_calls)
    assert "Looking at the thread." in originals.text
    # Consecutive requests repeat their bytes up to the end of the summary and beyond.
    for one, two in itertools.pairwise(steps[3:]):
        end = one.body.index(SUMMARY.encode()) + len(SUMMARY)
        assert two.body[:end] == one.body[:end]
        earlier, later = json.loads(one.body)["messages"], json.loads(two.body)["messages"]
        assert later[: len(earlier)] == earlier


def _call_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [
        str(call["id"])
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
    ]
