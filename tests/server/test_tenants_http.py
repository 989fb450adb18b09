"""Two tenants on one server, over the wire (issue 13): bob can neither read nor change alice's
sessions through any tool, resource, prompt or export, and every answer he gets for her session
id is exactly the answer an id that does not exist gets. Two agents holding one token and one
client name each keep writing into the session they started.

A real `frs-mcp --tokens FILE` process on 127.0.0.1, spoken to over Streamable HTTP (both
protocol eras) and over SSE by the SDK's own clients.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Implementation, TextContent

from tests.clients.frs_process import FrsProcess, frs_http

pytestmark = pytest.mark.slow

ALICE = "alice-secret-0123456789"
BOB = "bob-secret-0123456789ab"
UNKNOWN = "0badc0ffee00"  # the shape of a session id (12 hex digits), no session's
Wire = Literal["streamable", "streamable-legacy", "sse"]
WIRES: tuple[Wire, ...] = ("streamable", "streamable-legacy", "sse")

#: Alice's words: none of them may reach bob, in any answer.
SECRETS = ("alice-title", "alice-goal", "alice-conversation", "alice-words", "alice-summary")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrsProcess]:
    """Both HTTP transports, tenants alice and bob."""
    folder = tmp_path_factory.mktemp("tenants")
    tokens = folder / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    tokens.chmod(0o600)
    with frs_http(folder / "frs.db", "--transport", "both-http", "--tokens", str(tokens)) as s:
        yield s


@asynccontextmanager
async def connect(
    server: FrsProcess,
    secret: str,
    wire: Wire,
    name: str = "agent",
    extra: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {secret}", **(extra or {})}
    info = Implementation(name=name, version="1")
    if wire == "sse":
        async with Client(sse_client(server.sse_url, headers=headers), client_info=info) as c:
            yield c
        return
    mode: Literal["auto", "legacy"] = "legacy" if wire == "streamable-legacy" else "auto"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(server.mcp_url, http_client=http), client_info=info, mode=mode
        ) as client,
    ):
        yield client


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return text(result)


@dataclass(frozen=True, slots=True)
class Alice:
    session_id: str
    conversation: str


async def alice_session(client: Client, tag: str) -> Alice:
    """A session of alice's with something behind every alias kind: messages, a squash, an
    inline source, a plan, an open focus layer."""
    conversation = f"alice-conversation-{tag}"
    started = await call(
        client,
        "frs_session",
        action="start",
        title=f"alice-title {tag}",
        goal="alice-goal",
        interface="telegram",
        conversation=conversation,
    )
    found = re.search(r"session (\S+) ", started)
    assert found, started
    sid = found[1]
    words = [{"role": "user", "content": f"alice-words {i} " + "detail " * 30} for i in range(6)]
    await call(client, "frs_record", session_id=sid, messages=words)
    await call(
        client,
        "frs_compress_range",
        session_id=sid,
        **{"from": 1, "to": 2},
        summary="alice-summary",
    )
    await call(
        client,
        "frs_source",
        session_id=sid,
        action="add",
        alias="H.notes",
        text="alice-words notes",
    )
    await call(client, "frs_plan", session_id=sid, steps=[{"text": "alice-words step"}])
    return Alice(sid, conversation)


#: Every tool and argument set that names a session: (label, tool, arguments).
TOOL_CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("session use", "frs_session", {"action": "use"}),
    ("session info", "frs_session", {"action": "info"}),
    ("record", "frs_record", {"messages": [{"role": "user", "content": "bob was here"}]}),
    ("view", "frs_view_thread", {}),
    ("view budget", "frs_view_thread", {"budget_tokens": 500}),
    ("compress range", "frs_compress_range", {"from": 3, "to": 4, "summary": "bob"}),
    ("compress last", "frs_compress_last", {"count": 1, "summary": "bob"}),
    ("alias message", "get_alias", {"alias": "M.3"}),
    ("alias squash", "get_alias", {"alias": "SQ.1"}),
    ("alias source", "get_alias", {"alias": "H.notes"}),
    ("restore", "frs_restore", {"alias": "SQ.1"}),
    ("plan", "frs_plan", {"steps": [{"text": "bob step"}]}),
    ("checkpoint", "frs_plan", {"checkpoint": "bob"}),
    ("source add", "frs_source", {"action": "add", "alias": "H.bob", "text": "bob"}),
    ("source list", "frs_source", {"action": "list"}),
    ("source remove", "frs_source", {"action": "remove", "alias": "H.notes"}),
    ("focus open", "frs_focus", {"action": "open", "goal": "bob"}),
    ("focus close", "frs_focus", {"action": "close", "summary": "bob"}),
)
RESOURCES = (
    "frs://sessions/{id}/thread",
    "frs://sessions/{id}/messages",
    "frs://sessions/{id}/messages/anthropic",
    "frs://sessions/{id}/aliases/M.3",
    "frs://sessions/{id}/aliases/SQ.1",
    "frs://sessions/{id}/aliases/H.notes",
    "frs://sessions/{id}/squashes",
)


async def answer_to_tool(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    return json.dumps(
        {"error": result.is_error, "text": text(result), "data": result.structured_content},
        sort_keys=True,
    )


async def answer_to_resource(client: Client, uri: str) -> str:
    try:
        read = await client.read_resource(uri, cache_mode="bypass")
    except MCPError as exc:
        return json.dumps({"code": exc.code, "message": exc.message, "data": exc.data})
    return read.model_dump_json()


async def answer_to_prompt(client: Client, session_id: str) -> str:
    got = await client.get_prompt("frs_distill", {"session_id": session_id})
    return got.model_dump_json()


async def everything_of(client: Client, sid: str) -> str:
    """All alice can see of her session: what bob must not have changed."""
    seen = [await call(client, "frs_view_thread", session_id=sid, show_thinking=True)]
    for uri in RESOURCES:
        seen.append(await answer_to_resource(client, uri.format(id=sid)))
    seen.append(await call(client, "frs_source", session_id=sid, action="list"))
    return "\n".join(seen)


def blind(answer: str, session_id: str) -> str:
    return answer.replace(session_id, "<id>")


def assert_nothing_of_alice(answer: str, alice: Alice, but: str = "") -> None:
    for secret in (*SECRETS, alice.session_id):
        if secret == but:
            continue
        assert secret not in answer, (secret, answer)


class TestBobCannotReachAlice:
    @pytest.mark.parametrize("wire", WIRES)
    async def test_every_tool_answers_alices_id_as_an_unknown_one_and_changes_nothing(
        self, server: FrsProcess, wire: Wire
    ) -> None:
        async with connect(server, ALICE, wire) as alice_client, connect(server, BOB, wire) as bob:
            alice = await alice_session(alice_client, wire)
            before = await everything_of(alice_client, alice.session_id)
            for label, tool, arguments in TOOL_CALLS:
                hers = await answer_to_tool(
                    bob, tool, {**arguments, "session_id": alice.session_id}
                )
                unknown = await answer_to_tool(bob, tool, {**arguments, "session_id": UNKNOWN})
                assert '"error": true' in unknown, (label, unknown)
                assert blind(hers, alice.session_id) == blind(unknown, UNKNOWN), label
                assert_nothing_of_alice(blind(hers, alice.session_id), alice)
            after = await everything_of(alice_client, alice.session_id)
        assert after == before

    @pytest.mark.parametrize("wire", WIRES)
    async def test_every_resource_and_the_prompt_answer_alices_id_as_an_unknown_one(
        self, server: FrsProcess, wire: Wire
    ) -> None:
        async with connect(server, ALICE, wire) as alice_client, connect(server, BOB, wire) as bob:
            alice = await alice_session(alice_client, f"resources {wire}")
            for uri in RESOURCES:
                hers = await answer_to_resource(bob, uri.format(id=alice.session_id))
                unknown = await answer_to_resource(bob, uri.format(id=UNKNOWN))
                assert '"code": -32602' in unknown, (uri, unknown)
                assert blind(hers, alice.session_id) == blind(unknown, UNKNOWN), uri
                assert_nothing_of_alice(blind(hers, alice.session_id), alice)
            hers = await answer_to_prompt(bob, alice.session_id)
            unknown = await answer_to_prompt(bob, UNKNOWN)
        assert blind(hers, alice.session_id) == blind(unknown, UNKNOWN)
        assert_nothing_of_alice(blind(hers, alice.session_id), alice)

    @pytest.mark.parametrize("wire", WIRES)
    async def test_lists_show_each_tenant_only_its_own_sessions_and_totals(
        self, server: FrsProcess, wire: Wire
    ) -> None:
        async with connect(server, ALICE, wire) as alice_client, connect(server, BOB, wire) as bob:
            alice = await alice_session(alice_client, f"lists {wire}")
            bobs = await call(bob, "frs_session", action="start", title=f"bob-title {wire}")
            bob_id = bobs.split()[2]
            listed = await call(bob, "frs_session", action="list", limit=200)
            info = await call(bob, "frs_session", action="info")
            page = json.loads(
                (await bob.read_resource("frs://sessions", cache_mode="bypass")).contents[0].text  # type: ignore[union-attr]
            )
            hers = json.loads(
                (await alice_client.read_resource("frs://sessions", cache_mode="bypass"))
                .contents[0]
                .text  # type: ignore[union-attr]
            )
        for answer in (listed, info, json.dumps(page)):
            assert_nothing_of_alice(answer, alice)
        assert bob_id in listed
        assert {s["id"] for s in page["sessions"]} <= set(re.findall(r"[0-9a-f]{12}", listed))
        assert all(s["title"].startswith("bob-title") for s in page["sessions"])
        assert page["total"] == len(page["sessions"])
        assert alice.session_id in {s["id"] for s in hers["sessions"]}
        assert not any(s["title"].startswith("bob-title") for s in hers["sessions"])
        assert hers["total"] == len(hers["sessions"])

    @pytest.mark.parametrize("wire", WIRES)
    async def test_get_or_create_with_alices_conversation_gives_bob_his_own_session(
        self, server: FrsProcess, wire: Wire
    ) -> None:
        async with connect(server, ALICE, wire) as alice_client, connect(server, BOB, wire) as bob:
            alice = await alice_session(alice_client, f"conversation {wire}")
            got = await bob.call_tool(
                "frs_session",
                {
                    "action": "start",
                    "title": "bob-title",
                    "interface": "telegram",
                    "conversation": alice.conversation,
                },
            )
            again = await call(
                bob,
                "frs_session",
                action="start",
                title="bob-title",
                interface="telegram",
                conversation=alice.conversation,
            )
            view = await call(bob, "frs_view_thread")
            hers = await call(alice_client, "frs_view_thread", session_id=alice.session_id)
        assert not got.is_error, text(got)
        assert_nothing_of_alice(
            text(got) + json.dumps(got.structured_content) + view, alice, but="alice-conversation"
        )
        assert text(got).split()[2] == again.split()[2]  # his own, found again
        assert "alice-words 3" in hers


async def twins_write(one: Client, two: Client, tag: str) -> tuple[list[str], list[str]]:
    """Each starts a session, then both record without session_id, turn about; what each
    one's view shows afterwards (title, entries)."""
    await call(one, "frs_session", action="start", title=f"twin one {tag}")
    await call(two, "frs_session", action="start", title=f"twin two {tag}")
    for turn in range(3):
        await call(one, "frs_record", messages=[{"role": "user", "content": f"one {turn}"}])
        await call(two, "frs_record", messages=[{"role": "user", "content": f"two {turn}"}])
    seen: list[list[str]] = []
    for client in (one, two):
        lines = (await call(client, "frs_view_thread")).splitlines()
        seen.append([lines[0], *(line for line in lines if line.startswith("["))])
    return seen[0], seen[1]


def expected(which: str, tag: str) -> list[str]:
    return [f'Thread "twin {which} {tag}"', *(f"[{i + 1}] User: {which} {i}" for i in range(3))]


class TestTwoAgentsOneToken:
    @pytest.mark.parametrize("wire", ["streamable-legacy", "sse"])
    async def test_two_agents_of_one_name_each_keep_writing_into_the_session_they_started(
        self, server: FrsProcess, wire: Wire
    ) -> None:
        """Connections with an identity of their own (`Mcp-Session-Id`, the SSE stream's
        `session_id`) each keep their own choice (`frs.env.Chosen`)."""
        async with (
            connect(server, ALICE, wire, name="twin") as one,
            connect(server, ALICE, wire, name="twin") as two,
        ):
            seen = await twins_write(one, two, wire)
            started = await call(one, "frs_session", action="start", title="another")
        assert seen == (expected("one", wire), expected("two", wire))
        assert "session_id=" not in started  # its connection keeps its choice

    async def test_over_the_stateless_era_two_agents_of_two_names_keep_their_own_sessions(
        self, server: FrsProcess
    ) -> None:
        """2026-07-28 Streamable HTTP has no connection: each request stands alone, so the
        client's name (or the root it offers) is what tells two agents apart."""
        async with (
            connect(server, ALICE, "streamable", name="twin-a") as one,
            connect(server, ALICE, "streamable", name="twin-b") as two,
        ):
            seen = await twins_write(one, two, "stateless")
        assert seen == (expected("one", "stateless"), expected("two", "stateless"))

    async def test_a_made_up_mcp_session_id_on_stateless_calls_is_no_connection(
        self, server: FrsProcess
    ) -> None:
        """The SDK ignores `Mcp-Session-Id` on a 2026-07-28 request, so the server does too: a
        made-up id takes no place in the table of connections' choices (a flood of them once
        flushed another tenant's agents' choices, `frs.env.Chosen`). The call with it shares
        its scope's current session exactly as a call without it does."""
        made_up = {"mcp-session-id": "f" * 32}
        async with connect(server, ALICE, "streamable", "twin-made-up", made_up) as faker:
            await call(faker, "frs_session", action="start", title="chosen under a made-up id")
            async with connect(server, ALICE, "streamable", name="twin-made-up") as plain:
                await call(plain, "frs_session", action="start", title="the scope's current")
            recorded = [{"role": "user", "content": "where does this go"}]
            await call(faker, "frs_record", messages=recorded)
            view = await call(faker, "frs_view_thread")
        assert view.splitlines()[0] == 'Thread "the scope\'s current"'
        assert "[1] User: where does this go" in view

    async def test_over_the_stateless_era_start_and_use_say_to_pass_session_id(
        self, server: FrsProcess
    ) -> None:
        async with connect(server, ALICE, "streamable", name="twin") as one:
            started = await call(one, "frs_session", action="start", title="stateless")
            sid = started.split()[2]
            used = await call(one, "frs_session", action="use", session_id=sid)
        for answer in (started, used):
            assert "every client in scope alice/twin shares this current session" in answer
            assert f'Pass session_id="{sid}" on each call' in answer


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LEGACY = {"mcp-protocol-version": "2025-11-25"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
HEX32 = re.compile(r"[0-9a-f]{32}")


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if secret else {}


async def open_mcp_session(http: httpx2.AsyncClient, server: FrsProcess, secret: str) -> str:
    opened = await http.post(server.mcp_url, json=INITIALIZE, headers={**POST, **auth(secret)})
    assert opened.status_code == 200, opened.text
    sid = opened.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**POST, **LEGACY, **auth(secret), "mcp-session-id": sid}
    assert (await http.post(server.mcp_url, json=done, headers=headers)).status_code == 202
    return str(sid)


def as_seen(response: httpx2.Response, body: str | None = None) -> tuple[int, str]:
    return response.status_code, response.text if body is None else body


class TestMcpSessionsBoundToTheirTenant:
    @pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
    async def test_another_tenants_mcp_session_id_is_answered_as_an_unknown_one(
        self, server: FrsProcess, method: str
    ) -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            hers = await open_mcp_session(http, server, ALICE)

            async def bob_sends(sid: str) -> tuple[int, str]:
                headers = {**POST, **LEGACY, **auth(BOB), "mcp-session-id": sid}
                body = PING if method == "POST" else None
                request = http.stream(method, server.mcp_url, json=body, headers=headers)
                async with request as response:
                    if response.status_code == 200 and method == "GET":
                        return 200, "a stream of her session"  # read no further: it never ends
                    return as_seen(response, (await response.aread()).decode())

            with_hers = await bob_sends(hers)
            with_unknown = await bob_sends("0" * 32)
            still_hers = await http.post(
                server.mcp_url,
                json=PING,
                headers={**POST, **LEGACY, **auth(ALICE), "mcp-session-id": hers},
            )
        assert with_hers[0] == 404
        assert with_hers == with_unknown
        assert still_hers.status_code == 200, still_hers.text  # a DELETE by bob ended nothing
        assert hers not in server.stderr

    async def test_a_post_to_another_tenants_sse_stream_is_answered_as_for_an_unknown_one(
        self, server: FrsProcess
    ) -> None:
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            http.stream("GET", server.sse_url, headers=auth(ALICE)) as stream,
        ):
            lines = stream.aiter_lines()
            endpoint = ""
            async for line in lines:
                if line.startswith("data: "):
                    endpoint = server.base + line.removeprefix("data: ").strip()
                    break
            sid = endpoint.rsplit("=", 1)[1]
            unknown = endpoint.replace(sid, "0" * 32)
            with_hers = await http.post(endpoint, json=PING, headers=auth(BOB))
            with_unknown = await http.post(unknown, json=PING, headers=auth(BOB))
            own = await http.post(endpoint, json={**PING, "id": 3}, headers=auth(ALICE))
            answers = []
            with anyio.fail_after(10):
                async for line in lines:
                    if line.startswith("data: "):
                        answers.append(json.loads(line.removeprefix("data: ")))
                        break
        assert with_hers.status_code == 404
        assert as_seen(with_hers) == as_seen(with_unknown)
        assert own.status_code == 202
        assert [a["id"] for a in answers] == [3]  # bob's ping never reached her stream
        assert sid not in server.stderr


class TestSessionIdsAreNotLogged:
    async def test_no_mcp_or_sse_session_id_reaches_the_log_even_at_debug(
        self, tmp_path: Path
    ) -> None:
        args = ("--transport", "both-http", "--log-level", "DEBUG")
        with frs_http(tmp_path / "frs.db", *args) as debug:
            async with httpx2.AsyncClient(timeout=30) as http:
                sid = await open_mcp_session(http, debug, "")
                await http.post(
                    debug.mcp_url, json=PING, headers={**POST, **LEGACY, "mcp-session-id": sid}
                )
                await http.delete(debug.mcp_url, headers={**LEGACY, "mcp-session-id": sid})
                await http.post(
                    debug.mcp_url, json=PING, headers={**POST, **LEGACY, "mcp-session-id": sid}
                )
                async with http.stream("GET", debug.sse_url) as stream:
                    async for line in stream.aiter_lines():
                        if line.startswith("data: "):
                            endpoint = debug.base + line.removeprefix("data: ").strip()
                            break
                    await http.post(endpoint, json=PING)
            logged = debug.stderr
        assert "session" in logged.lower()  # the SDK's lines are there, their ids are not
        assert sid not in logged
        assert not HEX32.search(logged), logged
        assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-", logged), logged


class TestFrsSessionIdsAreNotLogged:
    async def test_a_failed_tool_or_resource_logs_neither_the_id_nor_the_error_text(
        self, server: FrsProcess
    ) -> None:
        """The SDK logs a failed tool's error text and a failed resource's URI at INFO; both
        held the session id asked for."""
        asked = "5e55101d0bad"
        async with connect(server, BOB, "streamable-legacy") as bob:
            failed = await bob.call_tool("frs_view_thread", {"session_id": asked})
            with pytest.raises(MCPError):
                await bob.read_resource(f"frs://sessions/{asked}/thread")
        assert failed.is_error
        assert asked in text(failed)  # the client is told which id was not found
        assert "Tool 'frs_view_thread' failed; the client was told why" in server.stderr
        assert "Resource 'frs://sessions/<session id>/thread' failed" in server.stderr
        assert asked not in server.stderr


class TestResponseCacheHints:
    """2026-07-28 lets a client (or a gateway serving many users) cache list and read results
    for `ttlMs`, shared across users when `cacheScope` is public. Every tenant's lists and
    reads differ, so none may be served to another tenant from a cache, even a shared one
    that trusts the server's public marks."""

    async def test_a_shared_cache_never_serves_one_tenants_results_to_another(
        self, server: FrsProcess
    ) -> None:
        store = InMemoryResponseCacheStore()

        @asynccontextmanager
        async def cached(secret: str, partition: str) -> AsyncIterator[Client]:
            config = CacheConfig(
                store=store, partition=partition, target_id=server.mcp_url, share_public=True
            )
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as h,
                Client(streamable_http_client(server.mcp_url, http_client=h), cache=config) as c,
            ):
                yield c

        async with cached(ALICE, "alice") as alice_client:
            alice = await alice_session(alice_client, "cache")
            read = await alice_client.read_resource("frs://sessions")
            listed = await alice_client.list_resources()
            templates = await alice_client.list_resource_templates()
            tools = await alice_client.list_tools()
            prompts = await alice_client.list_prompts()
            alice_thread = f"frs://sessions/{alice.session_id}/thread"
            await alice_client.read_resource(alice_thread)
        async with cached(BOB, "bob") as bob:
            seen = await bob.read_resource("frs://sessions")
            thread = await answer_to_resource(bob, alice_thread)
            bob_listed = await bob.list_resources()
        for result in (read, listed, templates, tools, prompts):
            assert result.cache_scope == "private" or result.ttl_ms == 0, result
        # bob's own sessions may carry a conversation key he copied from alice (see above)
        assert_nothing_of_alice(seen.model_dump_json(), alice, but="alice-conversation")
        assert_nothing_of_alice(bob_listed.model_dump_json(), alice, but="alice-conversation")
        assert alice.conversation not in seen.model_dump_json()
        assert '"code": -32602' in thread
