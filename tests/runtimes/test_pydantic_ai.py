"""FRSHistory (Pydantic AI's ProcessHistory over FRS) and its toolset, driven by FunctionModel.

Every assertion is on what the model received: two turns with tool calls, a squash by the model
through the capability's tools (and once through frs-mcp over stdio on the same file), and the
next request's messages.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from runtimes import FrsTools
from runtimes.pydantic_ai import INTERFACE, FRSHistory
from tests.calls import call_text

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"
LOG = "".join(f"tests/test_sync.py::case_{i} PASSED\n" for i in range(300)) + "FAILED 3 != 4\n"
Step = Callable[[list[ModelMessage]], ModelResponse]


class Script:
    """A FunctionModel's function: each request answered by the next step; every request's
    messages kept, as the model received them."""

    def __init__(self, *steps: Step | ModelResponse) -> None:
        self.steps = list(steps)
        self.received: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received.append(messages)
        step = self.steps.pop(0)
        return step(messages) if callable(step) else step


def agent_for(history: FRSHistory | None, script: Script) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(script),
        instructions="Fix the flaky test.",
        capabilities=[history] if history else [],
    )

    @agent.tool_plain
    def run_tests(pattern: str) -> str:
        """Run the test suite for a pattern."""
        return LOG

    return agent


def turns() -> list[ModelResponse]:
    """Turn 1: thinking with a signature, a tool call, an answer. Turn 2: an answer."""
    return [
        ModelResponse(
            [
                ThinkingPart("Run the suite first.", signature="sig-opaque-to-frs"),
                ToolCallPart("run_tests", {"pattern": "sync"}, tool_call_id="call_run"),
            ],
            provider_response_id="resp_1",
        ),
        ModelResponse([TextPart("test_sync fails: 3 != 4, a race in Syncer.flush.")]),
        ModelResponse([TextPart("Adding a lock to Syncer.flush.")]),
    ]


async def two_turns(agent: Agent[None, str], history: bool = True) -> list[ModelMessage]:
    first = await agent.run("Why does test_sync fail?", conversation_id="chat-1")
    second = await agent.run(
        "Fix it.", conversation_id="chat-1", message_history=first.all_messages()
    )
    return second.all_messages()


def wire(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """Messages as JSON, without what no model is sent (metadata, run ids, times)."""
    dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    for message in dumped:
        for key in ("metadata", "run_id", "timestamp", "conversation_id"):
            message.pop(key, None)
        for part in message["parts"]:
            part.pop("timestamp", None)
    return dumped


def text(messages: list[ModelMessage]) -> str:
    return json.dumps(wire(messages), ensure_ascii=False)


def paired(messages: list[ModelMessage]) -> bool:
    """Every tool return follows its call, and every call is answered."""
    made: list[str] = []
    answered: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                made.append(part.tool_call_id)
            elif isinstance(part, ToolReturnPart):
                if part.tool_call_id not in made:
                    return False
                answered.add(part.tool_call_id)
    return set(made) <= answered


def squash(name: str, args: dict[str, Any], call_id: str) -> ModelResponse:
    return ModelResponse([ToolCallPart(name, args, tool_call_id=call_id)])


class TestTheHistory:
    async def test_the_model_gets_what_pydantic_ai_alone_would_send(self, tmp_path: Path) -> None:
        plain = Script(*turns())
        await two_turns(agent_for(None, plain))
        frs = Script(*turns())
        history = FRSHistory(tmp_path / "frs.db")
        try:
            await two_turns(agent_for(history, frs))
        finally:
            await history.close()
        assert [wire(m) for m in frs.received] == [wire(m) for m in plain.received]
        thinking = frs.received[-1][1].parts[0]
        assert isinstance(thinking, ThinkingPart)
        assert thinking.signature == "sig-opaque-to-frs"

    async def test_a_thread_continues_without_message_history(self, tmp_path: Path) -> None:
        script = Script(*turns())
        history = FRSHistory(tmp_path / "frs.db")
        try:
            agent = agent_for(history, script)
            await agent.run("Why does test_sync fail?", conversation_id="chat-1")
            await agent.run("Fix it.", conversation_id="chat-1")
        finally:
            await history.close()
        last = text(script.received[-1])
        assert "Why does test_sync fail?" in last
        assert "a race in Syncer.flush." in last  # the first run's final answer
        assert last.count("Why does test_sync fail?") == 1

    async def test_a_refused_squash_comes_back_to_the_model_as_a_retry(
        self, tmp_path: Path
    ) -> None:
        script = Script(
            squash("frs_compress_range", {"start": 5, "end": 9, "summary": "x"}, "call_bad"),
            ModelResponse([TextPart("I will view the thread first.")]),
        )
        history = FRSHistory(tmp_path / "frs.db")
        try:
            await agent_for(history, script).run("Tidy up.", conversation_id="chat-1")
        finally:
            await history.close()
        (retry,) = script.received[-1][-1].parts
        assert isinstance(retry, ToolReturnPart)
        assert retry.outcome == "retried"  # Pydantic AI's ModelRetry, with our words
        assert "Range 5..9 is outside the thread" in retry.model_response_str()


class TestTheCapability:
    async def test_it_keeps_the_conversations_used_last_and_finds_a_dropped_one_again(
        self, tmp_path: Path
    ) -> None:
        history = FRSHistory(tmp_path / "frs.db", keep=1)
        try:
            first = history.conversation("a")
            sid = await first.frs_session_id()
            history.conversation("b")
            again = history.conversation("a")
            assert again is not first  # `keep=1`: "b" pushed "a" out
            assert await again.frs_session_id() == sid  # found again by get-or-create
        finally:
            await history.close()

    def test_its_tools_are_the_shared_operations_with_their_descriptions(self) -> None:
        history = FRSHistory("frs.db")
        tools = history.toolset.tools
        shared = FrsTools.__dict__
        assert list(tools) == [f.__name__ for f in FrsTools(history.conversation(None)).functions()]
        for name, tool in tools.items():
            assert tool.description is not None
            assert tool.description in (shared[name].__doc__ or "").replace("\n        ", "\n")


class TestASquashTakesEffectOnTheNextRequest:
    async def test_through_the_capabilitys_tools(self, database: Path | str) -> None:
        # On each backend: a SQLite file, and a postgresql:// URL.
        views: list[str] = []

        def after_view(messages: list[ModelMessage]) -> ModelResponse:
            (shown,) = messages[-1].parts
            assert isinstance(shown, ToolReturnPart)
            views.append(shown.model_response_str())
            args = {"start": 2, "end": 3, "summary": "Ran tests: test_sync fails 3 != 4."}
            return squash("frs_compress_range", args, "call_squash")

        script = Script(
            *turns(),
            squash("frs_view_thread", {}, "call_view"),
            after_view,
            ModelResponse([TextPart("Squashed the test run.")]),
        )
        history = FRSHistory(database)
        try:
            agent = agent_for(history, script)
            before_run = await two_turns(agent)
            await agent.run("Tidy up.", conversation_id="chat-1", message_history=before_run)
            alias = await FrsTools(history.conversation("chat-1")).get_alias("SQ.1")
        finally:
            await history.close()
        before, after = script.received[-2], script.received[-1]
        assert "[2] Assistant:" in views[0]
        assert "[3] Tool run_tests: " in views[0]
        assert "case_42 PASSED" in text(before)
        assert "case_42 PASSED" not in text(after)
        assert "sig-opaque-to-frs" not in text(after)  # the thinking went with its response
        summaries = [
            p.content
            for m in after
            if isinstance(m, ModelResponse)
            for p in m.parts
            if isinstance(p, TextPart) and "Summary of" in p.content
        ]
        assert len(summaries) == 1
        assert summaries[0].startswith("[Summary of 2 messages (SQ.1@")
        assert summaries[0].endswith("] Ran tests: test_sync fails 3 != 4.")
        assert paired(before)
        assert paired(after)
        # The prefix before the squashed stretch is byte-for-byte what the model saw before.
        assert json.dumps(wire(after[:1])) == json.dumps(wire(before[:1]))
        assert isinstance(after[0], ModelRequest)
        assert "case_42 PASSED" in alias
        assert "FAILED 3 != 4" in alias

    async def test_through_frs_mcp_over_stdio_on_the_same_file(self, tmp_path: Path) -> None:
        db = tmp_path / "frs.db"
        script = Script(*turns(), ModelResponse([TextPart("Lock added.")]))
        history = FRSHistory(db)
        try:
            agent = agent_for(history, script)
            messages = await two_turns(agent)
            first = script.received[-1]
            server = StdioServerParameters(command=FRS_MCP, args=["--db", str(db)])
            async with Client(server) as client:
                started = await call_text(
                    client,
                    "frs_session",
                    action="start",
                    interface=INTERFACE,
                    conversation="chat-1",
                )
                squashed = await call_text(
                    client,
                    "frs_compress_range",
                    **{"from": 2, "to": 3, "summary": "Tests: test_sync fails 3 != 4."},
                )
                await agent.run("Go on.", conversation_id="chat-1", message_history=messages)
                originals = await call_text(client, "get_alias", alias="SQ.1")
            sid = await history.conversation("chat-1").frs_session_id()
        finally:
            await history.close()
        after = script.received[-1]
        assert sid in started
        assert squashed.startswith("Squashed positions 2–3")
        assert "case_42 PASSED" in text(first)
        assert "case_42 PASSED" not in text(after)
        assert "] Tests: test_sync fails 3 != 4." in text(after)
        assert paired(after)
        assert json.dumps(wire(after[:1])) == json.dumps(wire(first[:1]))
        assert "case_42 PASSED" in originals


def assert_alternating(messages: list[ModelMessage]) -> None:
    """What Anthropic and Gemini take: a request (user turn) first, then responses and
    requests in turn."""
    kinds = [type(message).__name__ for message in messages]
    assert kinds, "no messages"
    assert kinds[0] == "ModelRequest", kinds
    assert all(
        kind == ("ModelRequest" if n % 2 == 0 else "ModelResponse") for n, kind in enumerate(kinds)
    ), kinds


class TestASquashThatOpensTheThread:
    async def test_is_sent_as_the_user_turn_merged_with_the_next_and_keeps_its_bytes(
        self, tmp_path: Path
    ) -> None:
        script = Script(
            ModelResponse([TextPart("Found it.")]),
            squash("frs_compress_range", {"start": 1, "end": 2, "summary": "Asked why."}, "c_sq"),
            ModelResponse([TextPart("Fixing.")]),
            ModelResponse([TextPart("Done.")]),
        )
        history = FRSHistory(tmp_path / "frs.db")
        try:
            agent = agent_for(history, script)
            for question in ("Why?", "Fix it.", "Thanks"):
                await agent.run(question, conversation_id="chat-1")
        finally:
            await history.close()
        after, following = script.received[2], script.received[3]

        assert isinstance(after[0], ModelRequest)
        prompts = [str(p.content) for p in after[0].parts if isinstance(p, UserPromptPart)]
        assert len(prompts) == len(after[0].parts)
        assert prompts[0].startswith("[Summary of 2 messages (SQ.1@")
        assert prompts[0].endswith("] Asked why.")
        assert prompts[1:] == ["Fix it."]
        assert "Why?" not in text(after)
        for received in script.received:
            assert_alternating(received)
            assert paired(received)
        assert json.dumps(wire(following[: len(after)])) == json.dumps(wire(after))
