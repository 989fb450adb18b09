"""Real Codex CLI, headless (`codex exec`), over the Responses API through `frs-mcp gateway` to
the scripted model, with frs-mcp as its MCP server on the same database: the gateway records the
thread (no frs_record) under Codex's `session-id` header, the model's frs tools act on that
session with nothing typed (the id Codex puts in each tool call's `_meta` is the same), every
request before the squash reaches the model byte for byte, the squash the model makes is sent
instead of its originals from the next call on, and every request stays valid. The squash
covers the tool_search exchange that loaded the frs tools: that exchange is still sent (it is
where Codex defines its MCP tools), so the model still has get_alias and frs_restore and calls
them; frs_restore puts the originals back."""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from frs import Env, pages, sessions
from frs.host_threads import find_thread
from frs.model import Scope as FrsScope
from server.gateway.responses import WIRE
from tests.gateway.test_claude_code import gateway_to
from tests.hosts import codex, pinned
from tests.hosts.codex import Codex, call
from tests.hosts.model import ModelServer, Script, Seen, Turn

pytestmark = [pytest.mark.slow, pytest.mark.hosts]

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = "First look: the thread had only the task."


def mcp_table(database: Path) -> str:
    """frs-mcp on the gateway's database (this checkout's, as Codex starts it)."""
    return (
        "[mcp_servers.frs]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = ["-m", "server", "--db", {json.dumps(str(database))}]\n'
        f"env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}\n"
    )


def frs_tools(body: Any) -> set[str]:
    """The frs tools a request defines: those of the mcp__frs namespace in the outputs of
    its tool searches (Codex defines its deferred MCP tools nowhere else)."""
    return {
        tool["name"]
        for item in body["input"]
        if item.get("type") == "tool_search_output"
        for space in item.get("tools") or []
        if space.get("name") == codex.NAMESPACE
        for tool in space.get("tools") or []
    }


def defined(tool: str, step: Turn) -> Callable[[Seen], Turn]:
    """`step`, taken only when the request defines the frs tool it calls."""

    def checked(seen: Seen) -> Turn:
        assert tool in frs_tools(seen.body), frs_tools(seen.body)
        return step

    return checked


def script() -> Script:
    """Find the frs tools, look at the thread twice (the gateway recorded it: nothing typed),
    squash the tool search and the first look, read the originals back, restore them, end."""

    def look_again(seen: Seen) -> Turn:
        view = seen.result.text
        assert "Recorded by frs-mcp gateway" in view, view
        assert "Fix the flaky test" in view, view
        return Turn("Again.", (call("frs_view_thread", {}),))

    def squash(seen: Seen) -> Turn:
        view = seen.result.text
        # From the tool search's call (the assistant message before its result) to the first
        # look's result.
        search = int(re.findall(r"\[(\d+)\] Tool \S*tool_search", view)[0])
        result = int(re.findall(r"\[(\d+)\] Tool \S*frs_view_thread", view)[0])
        arguments = {"from": search - 1, "to": result, "summary": SUMMARY}
        return Turn("Squashing the first look.", (call("frs_compress_range", arguments),))

    return Script(
        [
            *codex.FIND_TOOLS,
            Turn("Looking at the thread.", (call("frs_view_thread", {}),)),
            look_again,
            squash,
            defined("get_alias", Turn("", (call("get_alias", {"alias": "SQ.1"}),))),
            defined("frs_restore", Turn("", (call("frs_restore", {"alias": "SQ.1"}),))),
            Turn("Done: the race is fixed."),
        ]
    )


async def test_codex_through_the_gateway_records_and_sends_the_squash(tmp_path: Path) -> None:
    database = tmp_path / "frs.db"
    host = Codex(pinned.install(), tmp_path / "home", tmp_path / "project")
    with ModelServer() as model:
        played = model.play(script())
        async with gateway_to(model, database) as (url, tap):
            run = await anyio.to_thread.run_sync(
                lambda: host.run(url, "Fix the flaky test in test_sync.py.", mcp_table(database))
            )
            assert run.returncode == 0, run.describe() + "\n" + played.describe()
            await tap.gateway.settled()
            env = tap.gateway.recorder.env
            steps = played.steps_seen()
            conversations = {e.header("session-id") for e in steps}
            assert len(conversations) == 1, conversations
            (conversation,) = conversations
            # One id names the conversation everywhere: the session-id header the gateway
            # keys by, thread-id, the turn metadata the MCP server keys by (`_meta`), and
            # the thread `codex exec resume` continues.
            assert conversation == run.thread_id
            for exchange in steps:
                assert exchange.header("thread-id") == conversation
                metadata = json.loads(exchange.header("x-codex-turn-metadata") or "{}")
                assert metadata["session_id"] == conversation
            thread = await find_thread(env, "codex", conversation)
            assert thread is not None, "the gateway recorded no session under the session-id"
            service = Env(env.store, scope=FrsScope(client="test"))
            originals = await pages.get_alias(service, "SQ.1", session_id=thread.session.id)
            entries = (await sessions.live_thread(service, thread.session.id)).entries
    played.check_done()
    host_bodies = [body for path, body in tap.bodies if path.endswith("/responses")]
    # Every request the model received keeps the Responses API's rules.
    for exchange in played.log:
        if exchange.path.endswith("/responses") and exchange.method == "POST":
            assert WIRE.problems(json.loads(exchange.body)) == [], exchange.step
    # Up to the squash (step 3 makes it), every request reached the model exactly as Codex
    # sent it; from the next one on, the squash is sent, until frs_restore (step 5 calls it).
    squash_step, restore_step = 3, 5
    for exchange in steps[: squash_step + 1]:
        assert exchange.body in host_bodies, exchange.step
    first_items = json.loads(steps[2].body)["input"]
    first_view = next(i["call_id"] for i in first_items if i.get("type") == "function_call")
    search = next(i for i in first_items if i.get("type") == "tool_search_output")
    carrying = steps[squash_step + 1 : restore_step + 1]
    after = [json.loads(e.body) for e in carrying]
    assert len(after) == 2, "no request after the squash"
    for payload in after:
        sent = json.dumps(payload["input"])
        # The first look (its call and output) is not sent; the summary is. (get_alias's
        # page, the last output, quotes the originals: ids on items only.)
        assert first_view not in {item.get("call_id") for item in payload["input"]}
        assert SUMMARY in sent
        assert "FRS squash SQ.1@" in sent
        # The tool search the squash covers is still sent, as Codex sent it, where it was:
        # the frs tools stay defined.
        assert search in payload["input"]
        assert payload["input"][payload["input"].index(search) - 1]["type"] == "tool_search_call"
        assert {"get_alias", "frs_restore", "frs_view_thread"} <= frs_tools(payload)
    # Every field but input as Codex sent it; consecutive requests repeat their items.
    for exchange, payload in zip(carrying, after, strict=True):
        original = json.loads(next(b for b in host_bodies if _same_turn(b, exchange.body)))
        assert {k: v for k, v in payload.items() if k != "input"} == {
            k: v for k, v in original.items() if k != "input"
        }
        # The developer messages (Codex's instructions) and the user's words are untouched.
        assert payload["input"][:4] == original["input"][:4]
    for earlier, later in itertools.pairwise(after):
        assert later["input"][: len(earlier["input"])] == earlier["input"]
    # ... byte for byte: up to the end of the summary (the first change), the bytes match.
    for one, two in itertools.pairwise(carrying):
        end = one.body.index(SUMMARY.encode()) + len(SUMMARY)
        assert two.body[:end] == one.body[:end]
    # After frs_restore the originals are sent again, as Codex sent them.
    restored = steps[restore_step + 1]
    assert restored.body in host_bodies
    assert first_view in {i.get("call_id") for i in json.loads(restored.body)["input"]}
    # The thread was recorded with no frs_record, and get_alias returns the originals.
    assert not any(c.name.endswith("frs_record") for e in entries for c in e.tool_calls)
    # Each answer was recorded once (from the stream; the next request repeats it).
    calls = [c.id for e in entries for c in e.tool_calls]
    # tool_search, view, view, compress, get_alias, restore: all back after the restore.
    assert len(calls) == len(set(calls)) == 6, calls
    assert [e.tool_call_id for e in entries if e.role == "tool"] == calls
    assert entries[0].role == "user"
    assert "Fix the flaky test" in " ".join(e.content for e in entries[:3])
    assert "frs_view_thread" in originals.text
    assert "Looking at the thread." in originals.text
    assert "tool_search" in originals.text
    # The model's own get_alias, with nothing typed, read them back too.
    assert "Looking at the thread." in played.seen_at(squash_step + 2).result.text


def _same_turn(host_body: bytes, forwarded: bytes) -> bool:
    """Whether Codex's request and the forwarded one are the same call (same last item)."""
    mine: list[Any] = json.loads(host_body)["input"]
    theirs: list[Any] = json.loads(forwarded)["input"]
    return bool(mine[-1] == theirs[-1])
