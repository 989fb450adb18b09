"""runtimes.langchain: a LangChain v1 agent whose model reads its FRS-distilled thread.

The model is LangChain's own `GenericFakeChatModel`, taught to accept tools and to keep every
input it received: the assertions are on what the model was sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from runtimes import Conversation
from runtimes.langchain import FRSMiddleware
from tests.runtimes.examples import example
from tests.runtimes.offline import offline, squash_over_stdio

pytestmark = pytest.mark.usefixtures("offline")
__all__ = ["offline"]

LOG = "".join(f"tests/test_sync.py::test_sync run {n} FAILED: 3 != 4\n" for n in range(60))


class ScriptedChatModel(GenericFakeChatModel):
    """`GenericFakeChatModel` that takes tools (it calls them only as scripted) and keeps a
    copy of every message list it is called with."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.received.append([message.model_copy(deep=True) for message in messages])
        return super()._generate(messages, *args, **kwargs)


@tool
def run_tests(cmd: str) -> str:
    """Run the test suite."""
    return LOG


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def dumped(messages: Sequence[BaseMessage]) -> list[str]:
    """Each message as the bytes a serialisation of the request would carry."""
    return [json.dumps(message_to_dict(message), sort_keys=True) for message in messages]


def assert_paired(messages: Sequence[BaseMessage]) -> None:
    """Every tool result right after the call it answers, and every call answered."""
    waiting: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in waiting, (message.tool_call_id, waiting)
            waiting.remove(message.tool_call_id)
            continue
        assert not waiting, f"calls {waiting} not answered before {message!r}"
        if isinstance(message, AIMessage):
            waiting = [str(call["id"]) for call in message.tool_calls]
    assert not waiting


def text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(message.content) for message in messages)


class TestSquashThroughTheTools:
    async def test_the_next_call_gets_the_summary_keeps_the_prefix_and_get_alias_the_originals(
        self, database: Path | str
    ) -> None:
        model = ScriptedChatModel(
            messages=iter(
                [
                    call("run_tests", "call_run", cmd="pytest"),
                    call(
                        "frs_compress_range",
                        "call_squash",
                        start=2,
                        end=3,
                        summary="pytest: test_sync fails 3 != 4 in every run; race in flush.",
                    ),
                    "The race is in Syncer.flush.",
                    call("get_alias", "call_alias", alias="SQ.1"),
                    "Fixed.",
                ]
            )
        )
        async with FRSMiddleware(database) as frs:
            agent = create_agent(model, tools=[run_tests], middleware=[frs])
            first = await agent.ainvoke({"messages": [HumanMessage("Why?")]}, config("t1"))
            second = await agent.ainvoke(
                {"messages": [*first["messages"], HumanMessage("Fix it")]}, config("t1")
            )
        before, after, next_turn, alias = model.received[1:]

        assert LOG in text(before)
        # The squash takes effect on the very next call: the log is gone, the summary is there,
        # with its alias, where the squashed stretch was; the prefix is byte-identical.
        assert "FAILED" not in text(after)
        assert isinstance(after[1], AIMessage)
        assert str(after[1].content).startswith("[Summary of 2 messages (SQ.1@")
        assert "race in flush" in str(after[1].content)
        assert dumped(after[:1]) == dumped(before[:1])
        # The messages the model gets are the recorded ones, ids and all (the state's own).
        state = first["messages"]
        assert [m.id for m in after[2:]] == [m.id for m in state[3:5]]
        assert dumped(after[2:]) == dumped(state[3:5])
        # A call without a squash keeps the whole of the last input as its prefix.
        assert dumped(next_turn[: len(after)]) == dumped(after)
        for received in model.received:
            assert_paired(received)
        # get_alias gives the originals back; the graph state kept them all along.
        assert isinstance(alias[-1], ToolMessage)
        assert "test_sync run 59 FAILED" in str(alias[-1].content)
        assert "run_tests" in str(alias[-1].content)
        assert LOG in text(second["messages"])
        assert [type(m).__name__ for m in second["messages"]][:3] == [
            "HumanMessage",
            "AIMessage",
            "ToolMessage",
        ]

    async def test_a_range_that_splits_a_call_from_its_result_is_refused_to_the_model(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedChatModel(
            messages=iter(
                [
                    call("run_tests", "call_run", cmd="pytest"),
                    call("frs_compress_range", "call_squash", start=2, end=2, summary="ran"),
                    "ok",
                ]
            )
        )
        async with FRSMiddleware(tmp_path / "frs.db") as frs:
            agent = create_agent(model, tools=[run_tests], middleware=[frs])
            await agent.ainvoke({"messages": [HumanMessage("Why?")]}, config("t1"))
        refusal = model.received[-1][-1]
        assert isinstance(refusal, ToolMessage)
        assert refusal.status == "error"
        assert "together is 2..3" in str(refusal.content), refusal.content
        assert LOG in text(model.received[-1])


class TestSquashThroughFrsMcp:
    async def test_frs_mcp_on_the_same_database_finds_the_thread_and_its_squash_is_sent_next(
        self, database: Path | str
    ) -> None:
        model = ScriptedChatModel(
            messages=iter([call("run_tests", "call_run", cmd="pytest"), "Found it.", "Sure."])
        )
        async with FRSMiddleware(database) as frs:
            agent = create_agent(model, tools=[run_tests], middleware=[frs])
            first = await agent.ainvoke({"messages": [HumanMessage("Why?")]}, config("t-9"))
            view = await squash_over_stdio(
                database, "langchain", "t-9", 2, 3, "pytest failed: flush"
            )
            await agent.ainvoke(
                {"messages": [*first["messages"], HumanMessage("Thanks")]}, config("t-9")
            )
        before, after = model.received[1], model.received[2]

        assert "[2] Summary of 2 messages (SQ.1@" in view
        assert "[3] Assistant: Found it." in view  # the run's answer was recorded at its end
        assert LOG in text(before)
        assert "FAILED" not in text(after)
        assert str(after[1].content).startswith("[Summary of 2 messages (SQ.1@")
        assert dumped(after[:1]) == dumped(before[:1])
        assert [m.content for m in after[2:]] == ["Found it.", "Thanks"]
        assert_paired(after)


class TestRecording:
    async def test_the_thread_is_recorded_once_across_runs_and_a_restart(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "frs.db"
        saver = InMemorySaver()
        model = ScriptedChatModel(
            messages=iter([call("run_tests", "call_run", cmd="pytest"), "Found it.", "Sure."])
        )
        async with FRSMiddleware(db) as frs:
            agent = create_agent(model, tools=[run_tests], middleware=[frs], checkpointer=saver)
            await agent.ainvoke({"messages": [HumanMessage("Why?")]}, config("t1"))
        # The newest entries squashed, then a new process (a new middleware) on the same file.
        await squash_over_stdio(db, "langchain", "t1", 2, 4, "ran pytest; found it")
        async with FRSMiddleware(db) as frs:
            agent = create_agent(model, tools=[run_tests], middleware=[frs], checkpointer=saver)
            done = await agent.ainvoke({"messages": [HumanMessage("Thanks")]}, config("t1"))

        async with Conversation(db, "langchain", "t1") as conversation:
            entries = await conversation.entries()
        state = done["messages"]
        assert len(state) == 6
        assert [e.kind for e in entries] == ["message", "summary", "message", "message"]
        assert [e.interface_message_id for e in entries] == [
            state[0].id,
            None,
            state[4].id,
            state[5].id,
        ]
        received = model.received[-1]
        assert [m.id for m in received] == [state[0].id, "frs-SQ.1", state[4].id]

    async def test_a_run_without_a_thread_id_is_refused_with_what_to_pass(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedChatModel(messages=iter(["hi"]))
        async with FRSMiddleware(tmp_path / "frs.db") as frs:
            agent = create_agent(model, middleware=[frs])
            with pytest.raises(ValueError, match="thread_id"):
                await agent.ainvoke({"messages": [HumanMessage("Hi")]})
        assert model.received == []

    async def test_a_synchronous_run_is_refused_by_langchain_saying_to_use_ainvoke(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedChatModel(messages=iter(["hi"]))
        async with FRSMiddleware(tmp_path / "frs.db") as frs:
            agent = create_agent(model, middleware=[frs])
            with pytest.raises(NotImplementedError, match="ainvoke"):
                agent.invoke({"messages": [HumanMessage("Hi")]}, config("t1"))
        assert model.received == []


class TestReadme:
    async def test_the_example_runs_as_written_and_its_model_squashes_its_thread(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.chdir(tmp_path)
        main = example("LangChain v1")["main"]
        model = ScriptedChatModel(
            messages=iter(
                [
                    call("frs_view_thread", "call_view"),
                    call("frs_compress_range", "call_squash", start=2, end=3, summary="Viewed."),
                    "A race in Syncer.flush.",
                    "Fixed: a lock in flush.",
                ]
            )
        )
        await main(model)
        assert capsys.readouterr().out == "A race in Syncer.flush.\nFixed: a lock in flush.\n"
        assert "[1] User: Why does test_sync fail?" in text(model.received[1])
        assert "[Summary of 2 messages (SQ.1@" in text(model.received[2])
        assert "[1] User:" not in text(model.received[2])
        # No checkpointer: the second run's state is its question, the model gets the thread.
        second = model.received[3]
        assert [m.content for m in second[:2]] == [
            "Fix the flaky test.",
            "Why does test_sync fail?",
        ]
        assert str(second[2].content).startswith("[Summary of 2 messages (SQ.1@")
        assert [m.content for m in second[-2:]] == ["A race in Syncer.flush.", "Fix it."]
        assert_paired(second)
        assert (tmp_path / "frs.db").is_file()


def assert_anthropic_turns(messages: Sequence[BaseMessage]) -> None:
    """What Anthropic's API takes (through langchain-anthropic): system messages first, then a
    user message, and no two assistant nor two human messages in a row."""
    turns = [m for m in messages if m.type != "system"]
    assert turns, "no messages"
    assert isinstance(turns[0], HumanMessage), [m.type for m in turns]
    for before, message in pairwise(turns):
        assert not (isinstance(before, AIMessage) and isinstance(message, AIMessage)), turns
        assert not (isinstance(before, HumanMessage) and isinstance(message, HumanMessage)), turns


class TestASquashThatOpensTheThread:
    async def test_is_sent_as_the_user_turn_merged_with_the_next_and_keeps_its_bytes(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedChatModel(
            messages=iter(
                [
                    "Found it.",
                    call("frs_compress_range", "call_squash", start=1, end=2, summary="Asked why."),
                    "Fixing.",
                    "Done.",
                ]
            )
        )
        async with FRSMiddleware(tmp_path / "frs.db") as frs:
            agent = create_agent(model, tools=[run_tests], middleware=[frs])
            first = await agent.ainvoke({"messages": [HumanMessage("Why?")]}, config("t1"))
            second = await agent.ainvoke(
                {"messages": [*first["messages"], HumanMessage("Fix it")]}, config("t1")
            )
            await agent.ainvoke(
                {"messages": [*second["messages"], HumanMessage("Thanks")]}, config("t1")
            )
        after, following = model.received[2], model.received[3]

        opening = after[0]
        assert isinstance(opening, HumanMessage)
        assert str(opening.content).count("[Summary of 2 messages (SQ.1@") == 1
        assert "Asked why." in str(opening.content)
        assert "Fix it" in str(opening.content)
        assert "Why?" not in text(after)
        for received in model.received:
            assert_anthropic_turns(received)
            assert_paired(received)
        assert dumped(following[: len(after)]) == dumped(after)
