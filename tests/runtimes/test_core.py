"""runtimes.core: a runtime's conversation kept as one FRS session, through the core alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frs import Env, InvalidContent, InvalidRequest, Message, NewMessage, ToolCall, sessions
from frs.autopilot import Autopilot
from frs.cards import HEADER
from runtimes import Conversation, FrsTools, open_store, summary_text
from runtimes.core import Conversations, newest_recorded_id, unrecorded

CALL = (ToolCall("c1", "bash", '{"cmd": "pytest"}'),)


def turn() -> list[NewMessage]:
    return [
        NewMessage("user", "Why does test_sync fail?"),
        NewMessage("assistant", "", tool_calls=CALL, raw='{"type": "function_call"}'),
        NewMessage("tool", "FAILED test_sync " + "log line\n" * 200, tool_call_id="c1"),
        NewMessage("assistant", "A race in Syncer.flush."),
    ]


class TestConversation:
    async def test_it_is_one_session_per_interface_and_conversation_found_again(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "frs.db"
        async with Conversation(db, "agents", "c1") as first:
            await first.record(turn())
            sid = await first.frs_session_id()
        async with Conversation(db, "agents", "c1") as again, Conversation(db, "x", "c1") as other:
            assert await again.frs_session_id() == sid
            assert [m.number for m in await again.entries()] == [1, 2, 3, 4]
            assert await other.entries() == []
            assert await other.frs_session_id() != sid
        # The same session is what get-or-create finds through the use case (frs_session).
        async with open_store(db) as store:
            started = await sessions.start(Env(store), interface="agents", conversation="c1")
        assert (started.session.id, started.created) == (sid, False)

    async def test_entries_are_the_newest_in_thread_order_with_raw_items_as_given(
        self, tmp_path: Path
    ) -> None:
        async with Conversation(tmp_path / "frs.db", "agents", "c1") as conversation:
            await conversation.record(turn())
            newest = await conversation.entries(3)
            assert await conversation.entries(0) == []
        assert [m.number for m in newest] == [2, 3, 4]
        assert [m.raw for m in newest] == ['{"type": "function_call"}', None, None]

    async def test_a_raw_item_that_is_not_json_text_is_refused_and_nothing_recorded(
        self, tmp_path: Path
    ) -> None:
        async with Conversation(tmp_path / "frs.db", "agents", "c1") as conversation:
            for raw in ("[\x00]", "\x00[1]", "\x00[not json"):  # a folded form needs its hole
                with pytest.raises(InvalidContent, match=r"messages\[1\]\.raw holds a NUL"):
                    await conversation.record([turn()[0], NewMessage("user", "x", raw=raw)])
            assert await conversation.entries() == []

    async def test_removing_the_newest_entry_and_refusing_a_summary_there(
        self, tmp_path: Path
    ) -> None:
        async with Conversation(tmp_path / "frs.db", "agents", "c1") as conversation:
            await conversation.record(turn())
            removed = await conversation.remove_newest()
            assert removed is not None
            assert removed.content == "A race in Syncer.flush."
            assert [m.number for m in await conversation.entries()] == [1, 2, 3]
            await FrsTools(conversation).frs_compress_last(2, "ran pytest: FAILED test_sync")
            with pytest.raises(InvalidRequest, match=r"newest entry is a summary \(SQ\.1\)"):
                await conversation.remove_newest()
            assert len(await conversation.entries()) == 2

    async def test_clearing_sets_the_session_aside_whole_and_starts_a_new_one(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "frs.db"
        async with Conversation(db, "agents", "c1") as conversation:
            await conversation.record(turn())
            old = await conversation.frs_session_id()
            await conversation.clear()
            assert await conversation.entries() == []
            assert await conversation.frs_session_id() != old
        async with open_store(db) as store:
            kept = await sessions.live_thread(Env(store), old)
        assert kept.session.conversation is not None
        assert kept.session.conversation.startswith("c1 (set aside at ")
        assert len(kept.entries) == 4


class TestTools:
    async def test_a_squash_shows_as_its_summary_with_the_alias_and_get_alias_has_originals(
        self, tmp_path: Path
    ) -> None:
        async with Conversation(tmp_path / "frs.db", "agents", "c1") as conversation:
            tools = FrsTools(conversation)
            await conversation.record(turn())
            view = await tools.frs_view_thread()
            said = await tools.frs_compress_range(2, 3, "pytest: test_sync FAILED")
            entries = await conversation.entries()
            originals = await tools.get_alias("SQ.1")
            restored = await tools.frs_restore("SQ.1")
            after = await conversation.entries()
        assert "[3] Tool: " in view
        assert said.startswith("Squashed positions 2–3 (2 entries, 2 messages)")
        assert [m.kind for m in entries] == ["message", "summary", "message"]
        text = summary_text(entries[1])
        assert text.startswith("[Summary of 2 messages (SQ.1@")
        assert text.endswith("] pytest: test_sync FAILED")
        assert "FAILED test_sync log line" in originals
        assert restored.startswith("Restored SQ.1")
        assert [m.number for m in after] == [1, 2, 3, 4]

    async def test_a_bad_range_is_an_error_the_model_can_act_on_and_changes_nothing(
        self, tmp_path: Path
    ) -> None:
        async with Conversation(tmp_path / "frs.db", "agents", "c1") as conversation:
            await conversation.record(turn())
            with pytest.raises(InvalidRequest, match=r"positions 1\.\.4"):
                await FrsTools(conversation).frs_compress_range(3, 9, "x")
            assert len(await conversation.entries()) == 4


class TestConversations:
    async def test_one_store_serves_many_conversations_each_its_own_session(
        self, tmp_path: Path
    ) -> None:
        async with Conversations(tmp_path / "frs.db", "x", keep=1) as conversations:
            first, second = conversations.get("t1"), conversations.get("t2")
            await first.record(turn()[:1])
            await second.record(turn()[:1])
            assert await first.env() is await second.env()
            assert await first.frs_session_id() != await second.frs_session_id()
            # `keep=1` forgot t1; get-or-create finds its session again.
            again = conversations.get("t1")
            assert again is not first
            assert await again.frs_session_id() == await first.frs_session_id()


class TestUnrecorded:
    """The one rule LangChain's and ADK's adapters record a history's new items by."""

    def entries(self, *ids: str) -> list[Message]:
        return [
            Message(
                n, n, n, "user", "message", "x", "0" * 64, 1, True, None, interface_message_id=i
            )
            for n, i in enumerate(ids, start=1)
        ]

    def test_it_is_every_item_after_the_newest_recorded(self) -> None:
        assert unrecorded(["a", "b", "c", "d"], "b", self.entries("a", "b")) == [2, 3]

    def test_it_is_every_item_when_none_was_recorded(self) -> None:
        assert unrecorded(["a", "b"], None, []) == [0, 1]

    def test_a_history_without_the_newest_recorded_gives_the_items_no_live_entry_carries(
        self,
    ) -> None:
        # The framework rewrote its history: "b" is gone, "a" is stored, "x" and "y" are new.
        assert unrecorded(["a", "x", "y"], "b", self.entries("a", "b")) == [1, 2]


class TestNewestRecordedId:
    async def test_it_is_the_newest_keyed_message_looking_inside_a_summary_at_the_end(
        self, tmp_path: Path
    ) -> None:
        keyed = [
            NewMessage("user", "q", interface_message_id="m1"),
            NewMessage("assistant", "a " * 50, interface_message_id="m2"),
            NewMessage("assistant", "b " * 50, interface_message_id="m3"),
            NewMessage("user", "typed through frs-mcp"),
        ]
        async with Conversation(tmp_path / "frs.db", "x", "c1") as conversation:
            assert await newest_recorded_id(conversation, []) is None
            await conversation.record(keyed)
            assert await newest_recorded_id(conversation, await conversation.entries()) == "m3"
            await FrsTools(conversation).frs_compress_range(2, 4, "a and b")
            entries = await conversation.entries()
            assert [e.kind for e in entries] == ["message", "summary"]
            assert await newest_recorded_id(conversation, entries) == "m3"


class TestAutopilot:
    """A runtime's conversation squashes on its own, as the gateway does, when asked."""

    @staticmethod
    def loop(calls: int) -> list[NewMessage]:
        messages = [NewMessage("user", "Find the race in src/sync.py.")]
        for i in range(calls):
            call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"grep -rn flush src/{i}"}))
            messages.append(NewMessage("assistant", f"Looking at {i}.", tool_calls=(call,)))
            listing = "".join(f"src/{i}/mod_{j}.py:12: def flush(): ...\n" for j in range(80))
            messages.append(NewMessage("tool", listing, tool_call_id=f"c{i}"))
        return messages

    async def test_a_recording_past_the_threshold_is_followed_by_a_batch_of_cards(
        self, tmp_path: Path
    ) -> None:
        settings = Autopilot(keep=2, after=4_000, payback=4)
        async with Conversation(tmp_path / "frs.db", "agents", "c1", autopilot=settings) as c:
            for message in self.loop(12):
                await c.record([message])
            env = await c.env()
            sid = await c.frs_session_id()
            async with env.store.snapshot() as reader:
                squashes = await reader.squashes(sid)
            entries = await c.entries()
        assert squashes
        assert all(s.automatic for s in squashes)
        cards = [e for e in entries if e.kind == "summary"]
        assert cards[0].content.startswith(HEADER)
        assert "grep -rn flush src/0" in cards[0].content  # the command, verbatim
        assert entries[0].content == "Find the race in src/sync.py."  # the task stays
        assert entries[-1].role == "tool"  # the newest exchanges stay whole
        assert "mod_79.py" in entries[-1].content

    async def test_without_an_autopilot_nothing_is_squashed(self, tmp_path: Path) -> None:
        async with Conversation(tmp_path / "frs.db", "agents", "c1") as c:
            await c.record(self.loop(12))
            assert all(e.kind == "message" for e in await c.entries())
