"""The host's own compaction is part of the conversation: the gateway recognises the same
conversation continuing after the host replaced its history with a summary, records the
compaction as an entry of the thread (the host's summary as its text; positions go on), and
keeps recording and rewriting after it. The requests are shaped as the pinned hosts send them
(Claude Code 2.1.332, Codex CLI 0.171.0, OpenCode 1.18.33): the host's request for a summary
is not recorded, nor is the summary it gets back as an answer."""

from __future__ import annotations

import json
from typing import Any

from frs import AskedRange, ViewOptions, squashes, viewing
from frs import sessions as frs_sessions
from frs.model import Compaction
from frs.replies import squashed
from frs.wire.compactions import SEALED
from tests.gateway import openai_conversation as oc
from tests.gateway.conversation import SESSION, SYSTEM, TOOLS, result, user
from tests.gateway.harness import Reply, Rig, Seen, rig
from tests.gateway.test_squashes import client_env, session_of
from tests.gateway.test_thinking import Model
from tests.hosts.model import binding

#: What Claude Code 2.1.332 adds to its last user message to ask for the summary.
ASK = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, or ANY "
    "other tool.\n\nYour task is to create a detailed summary of the conversation so far, "
    "paying close attention to the user's explicit requests and your previous actions."
)
CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
)


class Summariser(Model):
    """The model of tests.gateway.test_thinking, which answers a request for a summary with
    one (text only, as the host asked)."""

    def __call__(self, seen: Seen) -> Reply:
        payload = seen.json()
        last = json.dumps(payload["messages"][-1])
        if "CRITICAL: Respond with TEXT ONLY." not in last:
            return super().__call__(seen)
        checked = binding.check(payload, seen.headers)
        content = [
            binding.answer_thinking(payload, checked, "Summing up."),
            {"type": "text", "text": "<summary>Listed the files; a race in flush.</summary>"},
        ]
        message = {"id": "msg_sum", "type": "message", "role": "assistant", "content": content}
        return Reply(chunks=(json.dumps({**message, "stop_reason": "end_turn"}).encode(),))


class ClaudeCode:
    """A Claude Code conversation in a tool loop that compacts as Claude Code does: it asks
    for a summary of all but its last round, then sends the summary, that round as it was,
    and goes on."""

    def __init__(self, r: Rig) -> None:
        self.r = r
        self.messages: list[dict[str, Any]] = [user("Find the race.")]

    def payload(self, messages: list[dict[str, Any]]) -> bytes:
        body = {
            "model": "claude-test",
            "max_tokens": 1000,
            "system": SYSTEM,
            "tools": TOOLS,
            "thinking": {"type": "adaptive", "display": "omitted"},
            "messages": messages,
        }
        return json.dumps(body).encode()

    async def call(self) -> None:
        answer = await self.r.post(self.payload(self.messages), SESSION)
        assert answer.status_code == 200, answer.text
        content = answer.json()["content"]
        self.messages.append({"role": "assistant", "content": content})
        self.messages.append(result(content[-1]["id"], f"output of {content[-1]['id']}\n" * 150))

    async def compact(self) -> str:
        """The host's compaction; the summary it got."""
        asked = json.loads(json.dumps(self.messages[:-2]))
        asked[-1]["content"].append({"type": "text", "text": ASK})
        answer = await self.r.post(self.payload(asked), SESSION)
        assert answer.status_code == 200, answer.text
        said = str(answer.json()["content"][-1]["text"])
        summary = said.removeprefix("<summary>").removesuffix("</summary>")
        kept = self.messages[-2:]
        self.messages = [{"role": "user", "content": CONTINUED + summary}, *kept]
        return summary


class TestClaudeCode:
    async def test_recording_and_squashes_go_on_after_the_hosts_compaction(self, tmp_path):
        async with rig(tmp_path, Summariser()) as r:
            host = ClaudeCode(r)
            for _ in range(4):
                await host.call()
            session = await session_of(r)
            assert session.live_count == 8  # the last answer came from the stream
            summary = await host.compact()
            # The ask and the summary it got are not the conversation's.
            assert (await session_of(r)).live_count == 8
            await host.call()
            await host.call()
            env = r.gateway.recorder.env
            async with env.store.snapshot() as reader:
                compactions = await reader.compactions(session.id)
            # The summary is the newest entry when the host first sent it, after the result of
            # the round the host kept (positions 8-9), which is sent from then on.
            (compaction,) = compactions
            assert compaction == Compaction(10, 8, compaction.created_at, compaction.first_key)
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert [e.number for e in entries] == list(range(1, 14))
            assert entries[9].content == CONTINUED + summary
            assert entries[9].role == "user"
            view = await viewing.view(client_env(r), ViewOptions(), session.id)
            assert "[10] Host compaction: This session is being continued" in view
            assert "CRITICAL" not in json.dumps([e.content for e in entries])
            assert "Summing up" not in json.dumps([e.content for e in entries])
            # A squash of what the host sends now goes out in place of its originals.
            await squashes.compress_range(client_env(r), 11, 12, "Listed 5.", session_id=session.id)
            await host.call()
            sent = r.upstream.seen[-1].json()
            flat = json.dumps(sent["messages"])
            assert "Listed 5." in flat
            assert "toolu_005" not in flat
            assert sent["messages"][0]["content"].startswith(CONTINUED)  # the host's, as sent
            assert r.upstream.dropped[len(r.upstream.seen) - 1]  # thinking after it dropped
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert entries[-1].tool_calls[0].id == "toolu_007"

    async def test_a_squash_says_when_it_reaches_the_model_or_that_it_never_will(self, tmp_path):
        async with rig(tmp_path, Summariser()) as r:
            host = ClaudeCode(r)
            for _ in range(4):
                await host.call()
            session = await session_of(r)
            (early,) = await squashes.compress_ranges(
                client_env(r), [AskedRange(2, 3, "Listed 1.")], session_id=session.id
            )
            assert early.reach == "next"
            assert "from the model's next call" in squashed(early)
            assert "fewer in every call" in squashed(early)
            await host.compact()
            await host.call()
            # Positions 4-5 are a round the host summarised away: no longer sent.
            (gone,) = await squashes.compress_ranges(
                client_env(r), [AskedRange(3, 4, "Listed 2.")], session_id=session.id
            )
            assert gone.reach == "gone"
            reply = squashed(gone)
            assert "The model is no longer sent these messages" in reply
            assert "saved" not in reply

    async def test_the_compaction_request_is_sent_the_squashes_too(self, tmp_path):
        async with rig(tmp_path, Summariser()) as r:
            host = ClaudeCode(r)
            for _ in range(4):
                await host.call()
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 5, "Listed 1 and 2.", session_id=session.id
            )
            await host.compact()
            asked = json.dumps(r.upstream.seen[-1].json()["messages"])
            assert "Listed 1 and 2." in asked
            assert "toolu_001" not in asked
            assert "CRITICAL: Respond with TEXT ONLY." in asked


class TestCodex:
    ASK = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary."
    BRIDGE = (
        "Another language model started to solve this problem and produced a summary of its "
        "thinking process. Here is the summary:\nFound the race in flush."
    )

    async def replay(self, r: Rig, items: list[dict[str, Any]], **extra: Any) -> None:
        answer = await r.post(oc.body(items, **extra), oc.SESSION, "/v1/responses")
        assert answer.status_code == 200

    async def test_codex_compacting_by_its_own_summary(self, tmp_path):
        task = oc.TASK[:8]
        async with rig(tmp_path) as r:
            await self.replay(r, task)
            (session,) = (await frs_sessions.page(client_env(r))).sessions
            before = session.live_count
            # Its own summarising request: no tools, the ask as the last user message.
            await self.replay(r, [*task, oc.user(self.ASK)], tools=[])
            assert [s.live_count for s in (await frs_sessions.page(client_env(r))).sessions] == [
                before
            ]
            # After: its instructions, the earlier user messages, the summary; then on.
            after = [oc.TASK[0], oc.TASK[1], oc.user(self.BRIDGE)]
            more = [oc.reasoning("r9"), oc.call("call_9", "pytest"), oc.output("call_9", "ok")]
            await self.replay(r, [*after, *more])
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            # Codex keeps its earlier user messages before the summary: one user message here.
            assert entries[before].content.endswith(self.BRIDGE)
            assert entries[-1].tool_call_id == "call_9"
            async with r.gateway.recorder.env.store.snapshot() as reader:
                (compaction,) = await reader.compactions(session.id)
            assert compaction.number == before + 1
            assert compaction.sent_from == before + 1
            assert self.ASK not in json.dumps([e.content for e in entries])

    async def test_an_encrypted_compaction_item_is_an_entry_of_its_own(self, tmp_path):
        task = oc.TASK[:8]
        item = {"type": "compaction", "encrypted_content": "gAAA-summary=="}
        async with rig(tmp_path) as r:
            await self.replay(r, task)
            (session,) = (await frs_sessions.page(client_env(r))).sessions
            await self.replay(r, [*task, {"type": "compaction_trigger"}])
            more = [oc.reasoning("r9"), oc.call("call_9", "pytest"), oc.output("call_9", "ok")]
            await self.replay(r, [oc.TASK[0], oc.TASK[1], item, *more])
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert SEALED in [e.content for e in entries]
            assert entries[-1].tool_call_id == "call_9"


class TestOpenCode:
    async def test_opencode_compacting(self, tmp_path):
        ask = [
            {"role": "system", "content": "You are a context summarization agent. Summarise."},
            {"role": "user", "content": "Here is the conversation so far: ..."},
        ]
        async with rig(tmp_path) as r:
            await r.post(oc.chat_body(oc.CHAT_TASK[:9]), [], "/v1/chat/completions")
            sessions = (await frs_sessions.page(client_env(r))).sessions
            before = sessions[0].live_count
            body = json.dumps({"model": "gpt-test", "messages": ask}).encode()
            await r.post(body, [], "/v1/chat/completions")
            assert [s.live_count for s in (await frs_sessions.page(client_env(r))).sessions] == [
                before
            ]
            summary = oc.chat_said("## Objective\nFix the race in flush.")
            after = [oc.chat_user("What did we do so far?"), summary, oc.chat_user("Continue.")]
            headers = [("x-session-affinity", "ses_1")]
            # OpenCode names its conversation in a header: same header, before and after.
            await r.post(oc.chat_body(oc.CHAT_TASK[:9]), headers, "/v1/chat/completions")
            await r.post(oc.chat_body(after), headers, "/v1/chat/completions")
            sessions = (await frs_sessions.page(client_env(r))).sessions
            session = next(s for s in sessions if s.conversation == "ses_1")
            entries = (await frs_sessions.live_thread(client_env(r), session.id)).entries
            assert entries[9].content == "## Objective\nFix the race in flush."
            assert entries[-1].content == "Continue."
