"""FRSSession and the FRS tools in the OpenAI Agents SDK, driven by the SDK's own ScriptedModel.

Every assertion is on what the model received (`ScriptedModel.calls`): two turns with tool
calls, a squash by the model through the adapter's tools (and once through frs-mcp over stdio
on the same file), and the next call's input.
"""

from __future__ import annotations

import json
import shutil
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from mcp import Client, StdioServerParameters
from openai.types.responses import ResponseReasoningItem

from frs.autopilot import Autopilot
from frs.cards import HEADER
from runtimes.openai_agents import INTERFACE, FRSSession, frs_tools
from tests.calls import call_text

FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"
LOG = "".join(f"tests/test_sync.py::case_{i} PASSED\n" for i in range(300)) + "FAILED 3 != 4\n"
REASONING = ResponseReasoningItem(
    id="rs_1", type="reasoning", summary=[], encrypted_content="gAAAAB-opaque-to-frs"
)


@function_tool
def run_tests(pattern: str) -> str:
    """Run the test suite for a pattern.

    Args:
        pattern: The -k pattern.
    """
    return LOG


def agent_for(session: FRSSession, model: ScriptedModel) -> Agent[Any]:
    return Agent(
        name="fixer",
        instructions="Fix the flaky test.",
        model=model,
        tools=[run_tests, *frs_tools(session)],
    )


def config(session: FRSSession) -> RunConfig:
    return RunConfig(call_model_input_filter=session.model_input, tracing_disabled=True)


def seen(call: ModelCall) -> list[dict[str, Any]]:
    """The input items a model call received, as plain JSON values."""
    return [json.loads(json.dumps(item, default=str)) for item in call.input]


def plain(items: Any) -> list[dict[str, Any]]:
    """Session items as plain dicts, for indexing by key."""
    return [dict(item) for item in items]


def texts(items: list[dict[str, Any]]) -> str:
    return json.dumps(items, ensure_ascii=False)


def calls_paired(items: list[dict[str, Any]]) -> bool:
    """Every function_call_output comes after its function_call, and every call is answered."""
    made: list[str] = []
    for item in items:
        if item.get("type") == "function_call":
            made.append(item["call_id"])
        elif item.get("type") == "function_call_output" and item["call_id"] not in made:
            return False
    answered = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    return set(made) <= answered


def squash_step(name: str, arguments: dict[str, Any], call_id: str) -> list[Any]:
    return [function_call(name, arguments, call_id=call_id)]


async def two_turns(session: FRSSession, model: ScriptedModel) -> None:
    """Turn 1: reasoning, a tool call and its long result, an answer. Turn 2: a question."""
    model.extend(
        [
            [REASONING, function_call("run_tests", {"pattern": "sync"}, call_id="call_run")],
            [assistant_message("test_sync fails: 3 != 4, a race in Syncer.flush.", item_id="m1")],
            [assistant_message("Adding a lock to Syncer.flush.", item_id="m2")],
        ]
    )
    agent = agent_for(session, model)
    await Runner.run(agent, "Why does test_sync fail?", session=session, run_config=config(session))
    await Runner.run(agent, "Fix it.", session=session, run_config=config(session))


class TestTheSession:
    async def test_items_come_back_exactly_as_given_with_reasoning_and_ids(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedModel()
        async with FRSSession("chat-1", tmp_path / "frs.db") as session:
            await two_turns(session, model)
            items = plain(await session.get_items())
            last_two = plain(await session.get_items(limit=2))
        reference = SQLiteSession("chat-1")  # the SDK's own session, fed the same turns
        await two_turns_on(reference)
        want = plain(await reference.get_items())
        reference.close()
        assert [i.get("type", "message") for i in items] == [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
            "message",
            "message",
        ]
        assert items == want  # what the SDK's own session would hand back, item for item
        assert items[1]["encrypted_content"] == "gAAAAB-opaque-to-frs"
        assert items[1]["id"] == "rs_1"
        assert last_two == items[-2:]

    async def test_pop_item_takes_the_newest_back_and_clear_starts_over(
        self, database: Path | str
    ) -> None:
        model = ScriptedModel()
        async with FRSSession("chat-1", database) as session:
            await two_turns(session, model)
            before = await session.get_items()
            popped = await session.pop_item()
            assert popped == before[-1]
            assert await session.get_items() == before[:-1]
            await session.add_items([popped])
            assert await session.get_items() == before
            await session.clear_session()
            assert await session.get_items() == []
            assert await session.pop_item() is None


async def two_turns_on(session: Any) -> None:
    model = ScriptedModel(
        [
            [REASONING, function_call("run_tests", {"pattern": "sync"}, call_id="call_run")],
            [assistant_message("test_sync fails: 3 != 4, a race in Syncer.flush.", item_id="m1")],
            [assistant_message("Adding a lock to Syncer.flush.", item_id="m2")],
        ]
    )
    agent = Agent(name="fixer", instructions="Fix the flaky test.", model=model, tools=[run_tests])
    run_config = RunConfig(tracing_disabled=True)
    await Runner.run(agent, "Why does test_sync fail?", session=session, run_config=run_config)
    await Runner.run(agent, "Fix it.", session=session, run_config=run_config)


class TestASquashTakesEffectOnTheNextCall:
    async def test_through_the_adapters_tools(self, database: Path | str) -> None:
        # On each backend: a SQLite file, and a postgresql:// URL.
        model = ScriptedModel()
        async with FRSSession("chat-1", database) as session:
            await two_turns(session, model)
            views: list[str] = []

            def read_view(call: ModelCall) -> list[Any]:
                views.append(seen(call)[-1]["output"])
                return squash_step(
                    "frs_compress_range",
                    {"start": 2, "end": 3, "summary": "Ran tests: test_sync fails 3 != 4."},
                    "call_squash",
                )

            model.extend(
                [
                    squash_step("frs_view_thread", {}, "call_view"),
                    ModelStep.respond(read_view),
                    [assistant_message("Squashed the test run.", item_id="m3")],
                ]
            )
            agent = agent_for(session, model)
            await Runner.run(agent, "Tidy up.", session=session, run_config=config(session))
            before, after = seen(model.calls[-2]), seen(model.calls[-1])
            originals = await frs_tools_text(session, "get_alias", {"alias": "SQ.1"})
        assert "[2] Assistant:" in views[0]
        assert "[3] Tool: " in views[0]
        assert "case_42 PASSED" in texts(before)
        assert "case_42 PASSED" not in texts(after)
        assert "gAAAAB-opaque-to-frs" not in texts(after)  # its reasoning went with the call
        summary = [i for i in after if "Summary of" in str(i.get("content"))]
        assert len(summary) == 1
        assert str(summary[0]["content"]).startswith("[Summary of 2 messages (SQ.1@")
        assert str(summary[0]["content"]).endswith("] Ran tests: test_sync fails 3 != 4.")
        assert calls_paired(before)
        assert calls_paired(after)
        # The prefix before the squashed stretch is byte-for-byte what the model saw before.
        assert json.dumps(after[:1]) == json.dumps(before[:1])
        assert after[0] == {"content": "Why does test_sync fail?", "role": "user"}
        # And the tail: the squash call and its result, then nothing else new.
        assert [i.get("call_id") for i in after[-2:]] == ["call_squash", "call_squash"]
        assert "case_42 PASSED" in originals
        assert "FAILED 3 != 4" in originals

    async def test_through_frs_mcp_over_stdio_on_the_same_file(self, tmp_path: Path) -> None:
        db = tmp_path / "frs.db"
        model = ScriptedModel()
        async with FRSSession("chat-1", db) as session:
            await two_turns(session, model)
            first = seen(model.calls[-1])
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
                model.extend([[assistant_message("Lock added.", item_id="m4")]])
                agent = agent_for(session, model)
                await Runner.run(agent, "Go on.", session=session, run_config=config(session))
                after = seen(model.calls[-1])
                originals = await call_text(client, "get_alias", alias="SQ.1")
        assert str(await session_id_of(session)) in started
        assert squashed.startswith("Squashed positions 2–3")
        assert "case_42 PASSED" in texts(first)
        assert "case_42 PASSED" not in texts(after)
        assert "] Tests: test_sync fails 3 != 4." in texts(after)
        assert calls_paired(after)
        assert json.dumps(after[:1]) == json.dumps(first[:1])
        assert "case_42 PASSED" in originals


async def session_id_of(session: FRSSession) -> str:
    return str(await session.conversation.frs_session_id())


async def frs_tools_text(session: FRSSession, name: str, arguments: dict[str, Any]) -> str:
    """Call one of the adapter's function tools the way the SDK does."""
    from agents.tool_context import ToolContext

    (tool,) = [t for t in frs_tools(session) if t.name == name]
    context = ToolContext(
        context=None, tool_name=name, tool_call_id="direct", tool_arguments=json.dumps(arguments)
    )
    result = await tool.on_invoke_tool(context, json.dumps(arguments))
    return str(result)


# run_sync keeps one loop per thread but shuts its async generators down after every run, so
# Python notes (ResourceWarning, silent by default) each async context manager entered in a
# later run; they still run and close as written.
@pytest.mark.filterwarnings("ignore:asynchronous generator:ResourceWarning")
def test_run_sync_twice_continues_the_thread(tmp_path: Path) -> None:
    session = FRSSession("chat-1", tmp_path / "frs.db")
    model = ScriptedModel([[assistant_message("one")], [assistant_message("two")]])
    agent = Agent(name="a", model=model)
    config = RunConfig(tracing_disabled=True, call_model_input_filter=session.model_input)
    assert Runner.run_sync(agent, "hi", session=session, run_config=config).final_output == "one"
    second = Runner.run_sync(agent, "again", session=session, run_config=config)
    assert second.final_output == "two"
    assert [item.get("content") for item in plain(model.calls[-1].input)][::2] == ["hi", "again"]


def assert_anthropic_turns(items: list[dict[str, Any]]) -> None:
    """What Anthropic takes once the items are turns: the first a user message, and no two
    user messages nor two assistant messages in a row (calls and results pair as turns)."""
    turns = [i for i in items if i.get("role") not in ("system", "developer")]
    assert turns, "no items"
    assert turns[0].get("role") == "user", turns[:1]
    for before, item in pairwise(turns):
        roles = (before.get("role"), item.get("role"))
        assert roles not in (("user", "user"), ("assistant", "assistant")), (before, item)


class TestASquashThatOpensTheThread:
    async def test_is_sent_as_the_user_turn_merged_with_the_next_and_keeps_its_bytes(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedModel()
        model.extend(
            [
                [assistant_message("Found it.", item_id="m1")],
                squash_step(
                    "frs_compress_range", {"start": 1, "end": 2, "summary": "Asked why."}, "c_sq"
                ),
                [assistant_message("Fixing.", item_id="m2")],
                [assistant_message("Done.", item_id="m3")],
            ]
        )
        async with FRSSession("chat-1", tmp_path / "frs.db") as session:
            agent = agent_for(session, model)
            for question in ("Why?", "Fix it.", "Thanks"):
                await Runner.run(agent, question, session=session, run_config=config(session))
        after, following = seen(model.calls[2]), seen(model.calls[3])

        opening = after[0]
        assert opening["role"] == "user"
        first, second = opening["content"]
        assert first["text"].startswith("[Summary of 2 messages (SQ.1@")
        assert first["text"].endswith("] Asked why.")
        assert second["text"] == "Fix it."
        assert "Why?" not in texts(after)
        for call in model.calls:
            assert_anthropic_turns(seen(call))
            assert calls_paired(seen(call))
        assert json.dumps(following[: len(after)]) == json.dumps(after)


class TestAutopilot:
    async def test_the_model_gets_fact_cards_when_it_squashes_nothing(self, tmp_path: Path) -> None:
        model = ScriptedModel()
        steps: list[Any] = [
            [function_call("run_tests", {"pattern": f"case_{i}"}, call_id=f"call_{i}")]
            for i in range(8)
        ]
        model.extend([*steps, [assistant_message("It is the race.", item_id="m9")]])
        settings = Autopilot(keep=2, after=5_000, payback=4)
        async with FRSSession("chat-auto", tmp_path / "frs.db", autopilot=settings) as session:
            agent = agent_for(session, model)
            await Runner.run(agent, "Find the flake.", session=session, run_config=config(session))
        last = texts(seen(model.calls[-1]))
        assert HEADER in last
        cards = next(i for i in seen(model.calls[-1]) if HEADER in str(i.get("content")))
        assert "run_tests pattern:case_0 → M.3 error" in str(cards["content"])
        assert 2 <= last.count("case_42 PASSED") < 8  # the newest results whole, not the rest
        assert calls_paired(seen(model.calls[-1]))
