"""A conversation belongs to its caller: a tenant's, or (without the gateway's tokens) an API
key's. Whatever headers or first message another caller sends, it is never matched into that
thread: it is sent none of its squashes, and writes none of its own into it. The host's MCP
server still finds the owner's thread by the host's id, with nothing typed."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import httpx2

from frs import Env, sessions, squashes
from frs.errors import SessionNotFound
from frs.host_threads import find_thread
from frs.model import Conversation, Scope, Session
from frs.owners import digest
from server.web.command import viewer_app
from tests.gateway.conversation import SESSION, TASK, body
from tests.gateway.harness import Rig, rig

ALICE = "alice-secret-0123456789"
BOB = "bob-secret-abcdefghijk"
TENANTS = {ALICE: "alice", BOB: "bob"}
SUMMARY = "Ran the test twenty times: a race in Syncer.flush."
CC = "claude-code"


def as_tenant(token: str) -> list[tuple[str, str]]:
    return [("x-frs-token", token)]


def with_key(key: str) -> list[tuple[str, str]]:
    return [("x-api-key", key)]


def client_env(r: Rig, scope: Scope) -> Env:
    """The MCP server of a caller, on the gateway's database."""
    return Env(r.gateway.recorder.env.store, scope=scope)


async def thread_of(r: Rig, tenant: str, conversation: str) -> Session | None:
    """The session the gateway keeps a conversation's thread in, for a tenant."""
    env = r.gateway.recorders.of(tenant).env
    found = await find_thread(env, CC, conversation)
    return found.session if found is not None else None


async def replay(r: Rig, upto: list[int], headers: list[tuple[str, str]], **extra: Any) -> None:
    for n in upto:
        answer = await r.post(body(TASK[:n], **extra), headers)
        assert answer.status_code == 200


def exactly(r: Rig, sent: bytes) -> bool:
    """Whether the upstream's newest request is `sent`, byte for byte."""
    return r.upstream.seen[-1].sha256 == hashlib.sha256(sent).hexdigest()


class TestTenants:
    async def test_two_tenants_never_see_each_others_threads_squashes_or_writes(
        self, tmp_path: Path
    ) -> None:
        async with rig(tmp_path) as r:
            r.gateway.tenants = dict(TENANTS)
            await replay(r, [1, 3, 5], SESSION + as_tenant(ALICE))
            alice = await thread_of(r, "alice", "cc-session-1")
            assert alice is not None
            # Stored under alice: her MCP server sees it, the local tenant's does not.
            assert await thread_of(r, "local", "cc-session-1") is None
            hers = client_env(r, Scope(tenant="alice", client=CC))
            await squashes.compress_range(hers, 2, 5, SUMMARY, session_id=alice.id)
            await replay(r, [7], SESSION + as_tenant(ALICE))
            assert SUMMARY in r.upstream.seen[-1].body.decode()
            before = (await sessions.live_thread(hers, alice.id)).entries

            # bob sends her header and her very messages: his own thread, her summary never.
            for n in (1, 5, 7):
                await r.post(body(TASK[:n]), SESSION + as_tenant(BOB))
                assert exactly(r, body(TASK[:n]))
            bob = await thread_of(r, "bob", "cc-session-1")
            assert bob is not None
            assert bob.id != alice.id
            assert (await sessions.live_thread(hers, alice.id)).entries == before
            # Each tenant's MCP server sees its own session only.
            his = client_env(r, Scope(tenant="bob", client=CC))
            assert [s.id for s in (await sessions.page(his)).sessions] == [bob.id]
            assert [s.id for s in (await sessions.page(hers)).sessions] == [alice.id]
            try:
                await sessions.live_thread(his, alice.id)
            except SessionNotFound:
                pass
            else:
                raise AssertionError("bob read alice's thread")

    async def test_a_tenants_viewer_shows_its_gateway_threads_and_no_others(
        self, tmp_path: Path
    ) -> None:
        async with rig(tmp_path) as r:
            r.gateway.tenants = dict(TENANTS)
            await replay(r, [1], SESSION + as_tenant(ALICE))
            alice = await thread_of(r, "alice", "cc-session-1")
            assert alice is not None
            app = viewer_app(r.gateway.recorder.env.store, "127.0.0.1", 8766, TENANTS, ())
            async with httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8766"
            ) as http:
                hers = await http.get(
                    f"/s/{alice.id}", headers={"Authorization": f"Bearer {ALICE}"}
                )
                his = await http.get(f"/s/{alice.id}", headers={"Authorization": f"Bearer {BOB}"})
        assert hers.status_code == 200
        assert "fails one run in five" in hers.text
        assert his.status_code == 404
        assert "fails one run in five" not in his.text


class TestKeysWithoutTokens:
    async def test_two_keys_naming_one_conversation_keep_two_threads(self, tmp_path: Path) -> None:
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5], SESSION + with_key("sk-alice"))
            alice = await thread_of(r, "local", "cc-session-1")
            assert alice is not None
            mcp = client_env(r, Scope(client=CC).in_conversation(Conversation(CC, "cc-session-1")))
            await squashes.compress_range(mcp, 2, 5, SUMMARY, session_id=alice.id)
            await replay(r, [7], SESSION + with_key("sk-alice"))
            assert SUMMARY in r.upstream.seen[-1].body.decode()
            before = (await sessions.live_thread(mcp, alice.id)).entries

            for n in (1, 5, 7):
                await r.post(body(TASK[:n]), SESSION + with_key("sk-bob"))
                assert exactly(r, body(TASK[:n]))
            # bob's thread is his own, kept beside hers under his key's digest.
            bob = await thread_of(r, "local", f"cc-session-1#{digest('x-api-key', 'sk-bob')}")
            assert bob is not None
            assert bob.live_count == 7
            assert (await sessions.live_thread(mcp, alice.id)).entries == before
            # The host's MCP server finds the owner's thread by the host's id, nothing typed.
            assert (await sessions.live_thread(mcp)).session.id == alice.id
            # And alice goes on as before: her squash is still sent.
            await replay(r, [9], SESSION + with_key("sk-alice"))
            assert SUMMARY in r.upstream.seen[-1].body.decode()

    async def test_a_session_the_mcp_server_made_first_goes_to_the_first_key(
        self, tmp_path: Path
    ) -> None:
        async with rig(tmp_path) as r:
            scope = Scope(client=CC).in_conversation(Conversation(CC, "cc-session-1"))
            made = await sessions.ensure(client_env(r, scope))
            await replay(r, [1, 3], SESSION + with_key("sk-alice"))
            await replay(r, [1, 3], SESSION + with_key("sk-bob"))
            alice = await thread_of(r, "local", "cc-session-1")
            assert alice is not None
            assert alice.id == made.id
            assert alice.live_count == 3
            bob = await thread_of(r, "local", f"cc-session-1#{digest('x-api-key', 'sk-bob')}")
            assert bob is not None
            assert bob.id != made.id

    async def test_two_keys_without_a_header_never_share_a_thread(self, tmp_path: Path) -> None:
        async with rig(tmp_path) as r:
            await replay(r, [1, 3, 5], with_key("sk-alice"))
            listed = (await sessions.page(client_env(r, Scope(client="test")))).sessions
            assert len(listed) == 1
            alice = listed[0]
            await squashes.compress_range(
                client_env(r, Scope(client="test")), 2, 5, SUMMARY, session_id=alice.id
            )
            await replay(r, [7], with_key("sk-alice"))
            assert SUMMARY in r.upstream.seen[-1].body.decode()
            before = alice.live_count

            for n in (1, 5, 7):  # the same first message, the same system prompt, another key
                await r.post(body(TASK[:n]), with_key("sk-bob"))
                assert exactly(r, body(TASK[:n]))
            listed = (await sessions.page(client_env(r, Scope(client="test")))).sessions
            assert len(listed) == 2
            kept = {s.id: s for s in listed}
            assert kept[alice.id].recorded == alice.recorded + 2  # only alice's own call 7
            assert kept[alice.id].live_count == before - 3 + 2

    async def test_one_key_with_two_system_prompts_keeps_two_threads(self, tmp_path: Path) -> None:
        other = [{"type": "text", "text": "You review code; you never edit it."}]
        async with rig(tmp_path) as r:
            await replay(r, [1, 3], with_key("sk-alice"))
            await replay(r, [1, 3], with_key("sk-alice"), system=other)
            listed = (await sessions.page(client_env(r, Scope(client="test")))).sessions
            assert [s.live_count for s in listed] == [3, 3]
            keys = {s.conversation for s in listed}
            assert len(keys) == 2
            assert all(key is not None and "~" in key for key in keys)

    async def test_two_keys_starting_one_conversation_at_once_get_one_owner(
        self, tmp_path: Path
    ) -> None:
        async with rig(tmp_path) as r:
            async with anyio.create_task_group() as tg:
                for key in ("sk-alice", "sk-bob"):
                    tg.start_soon(replay, r, [3], SESSION + with_key(key))
            owner = await thread_of(r, "local", "cc-session-1")
            others = [
                await thread_of(r, "local", f"cc-session-1#{digest('x-api-key', key)}")
                for key in ("sk-alice", "sk-bob")
            ]
            assert owner is not None
            assert [other is None for other in others].count(True) == 1  # the owner's
            (second,) = [other for other in others if other is not None]
            assert {owner.live_count, second.live_count} == {3}
            assert owner.id != second.id
