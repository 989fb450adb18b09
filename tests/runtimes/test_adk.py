"""runtimes.adk: a Google ADK agent whose model reads its FRS-distilled thread.

The model is a stub `BaseLlm` that answers from a script and keeps a copy of every
`LlmRequest` it is given: the assertions are on what the model was sent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types
from pydantic import Field

from runtimes import Conversation
from runtimes.adk import FRSModelCallback
from tests.runtimes.examples import example
from tests.runtimes.offline import offline, squash_over_stdio

pytestmark = pytest.mark.usefixtures("offline")
__all__ = ["offline"]

LOG = "".join(f"tests/test_sync.py::test_sync run {n} FAILED: 3 != 4\n" for n in range(60))


class ScriptedLlm(BaseLlm):
    """A model that answers with the next content of its script and keeps every request."""

    model: str = "scripted"
    script: list[types.Content] = Field(default_factory=list)
    received: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.received.append(llm_request.model_copy(deep=True))
        yield LlmResponse(content=self.script.pop(0))


def run_tests(cmd: str) -> str:
    """Run the test suite."""
    return LOG


def call(name: str, signature: bytes, call_id: str | None = None, **args: object) -> types.Content:
    """A model turn calling one tool, with a thought signature the model must get back."""
    function_call = types.FunctionCall(id=call_id, name=name, args=args)
    part = types.Part(function_call=function_call, thought_signature=signature)
    return types.Content(role="model", parts=[part])


def says(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def dumped(contents: Sequence[types.Content]) -> list[str]:
    """Each content as the bytes a serialisation of the request would carry."""
    return [content.model_dump_json(exclude_none=True) for content in contents]


def text(contents: Sequence[types.Content]) -> str:
    return "\n".join(dumped(contents))


def assert_paired(contents: Sequence[types.Content]) -> None:
    """Every model turn's calls answered, by name and id, by the content right after it."""
    waiting: list[tuple[str | None, str | None]] = []
    for content in contents:
        parts = content.parts or []
        answers = [
            (p.function_response.name, p.function_response.id) for p in parts if p.function_response
        ]
        assert sorted(answers, key=str) == sorted(waiting, key=str), (answers, waiting)
        waiting = [(p.function_call.name, p.function_call.id) for p in parts if p.function_call]
    assert not waiting


class Agent:
    """An `LlmAgent` with FRS on a scripted model, run by ADK's in-memory runner."""

    def __init__(
        self,
        frs: FRSModelCallback,
        model: ScriptedLlm,
        sessions: InMemorySessionService | None = None,
    ) -> None:
        agent = LlmAgent(
            name="coder",
            model=model,
            tools=[FunctionTool(run_tests), *frs.tools],
            before_model_callback=frs,
            after_model_callback=frs.after_model,
        )
        self.sessions = sessions or InMemorySessionService()
        self.runner = Runner(agent=agent, app_name="frs-test", session_service=self.sessions)

    async def start(self) -> str:
        return (await self.sessions.create_session(app_name="frs-test", user_id="u")).id

    async def ask(self, session_id: str, question: str) -> None:
        message = types.Content(role="user", parts=[types.Part(text=question)])
        async for _ in self.runner.run_async(
            user_id="u", session_id=session_id, new_message=message
        ):
            pass

    async def events_text(self, session_id: str) -> str:
        session = await self.sessions.get_session(
            app_name="frs-test", user_id="u", session_id=session_id
        )
        assert session is not None
        return "\n".join(e.content.model_dump_json() for e in session.events if e.content)


class TestSquashThroughTheTools:
    async def test_the_next_call_gets_the_summary_keeps_the_prefix_and_get_alias_the_originals(
        self, database: Path | str
    ) -> None:
        summary = "pytest: test_sync fails 3 != 4 in every run; race in flush."
        model = ScriptedLlm(
            script=[
                call("run_tests", b"sig-run", cmd="pytest"),
                call("frs_compress_range", b"sig-squash", start=2, end=3, summary=summary),
                says("The race is in Syncer.flush."),
                call("get_alias", b"sig-alias", alias="SQ.1"),
                says("Fixed."),
            ]
        )
        async with FRSModelCallback(database) as frs:
            agent = Agent(frs, model)
            session = await agent.start()
            await agent.ask(session, "Why?")
            await agent.ask(session, "Fix it")
            events = await agent.events_text(session)
        before, after, next_turn, alias = (r.contents for r in model.received[1:])

        assert "test_sync run 59 FAILED" in text(before)
        # The squash takes effect on the very next call: the log is gone, the summary is there
        # (a model turn naming its alias) where the stretch was; the prefix is byte-identical.
        assert "FAILED" not in text(after)
        assert after[1].role == "model"
        assert after[1].parts is not None
        assert (after[1].parts[0].text or "").startswith("[Summary of 2 messages (SQ.1@")
        assert summary in (after[1].parts[0].text or "")
        assert dumped(after[:1]) == dumped(before[:1])
        # The model turn after it is the content ADK built, thought signatures and all, with
        # the summary as its first part: Gemini's turns alternate.
        assert [part.thought_signature for part in after[1].parts] == [None, b"sig-squash"]
        assert_gemini_turns(after)
        # A call without a squash keeps the whole of the last input as its prefix.
        assert dumped(next_turn[: len(after)]) == dumped(after)
        for request in model.received:
            assert_paired(request.contents)
        # get_alias gives the originals back; the ADK session's events kept them all along.
        assert alias[-1].parts is not None
        response = alias[-1].parts[0].function_response
        assert response is not None
        assert "test_sync run 59 FAILED" in str(response.response)
        assert "run_tests" in str(response.response)
        assert "test_sync run 59 FAILED" in events

    async def test_call_ids_the_model_gave_are_sent_back_and_keep_the_pairs(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedLlm(
            script=[
                call("run_tests", b"sig-run", "call_run", cmd="pytest"),
                call(
                    "frs_compress_range", b"sig-squash", "call_squash", start=2, end=2, summary="x"
                ),
                says("ok"),
            ]
        )
        async with FRSModelCallback(tmp_path / "frs.db") as frs:
            agent = Agent(frs, model)
            await agent.ask(await agent.start(), "Why?")
        last = model.received[-1].contents
        assert [p.function_call.id for c in last for p in c.parts or [] if p.function_call] == [
            "call_run",
            "call_squash",
        ]
        assert_paired(last)
        # Position 2 alone would split the call from its result: FRS refuses, to the model.
        assert last[-1].parts is not None
        refusal = last[-1].parts[0].function_response
        assert refusal is not None
        assert refusal.response is not None
        assert "together is 2..3" in str(refusal.response.get("error")), refusal.response
        assert "test_sync run 59 FAILED" in text(last)

    async def test_calls_without_ids_are_paired_by_position_in_frs(self, tmp_path: Path) -> None:
        model = ScriptedLlm(
            script=[
                call("run_tests", b"sig-run", cmd="pytest"),
                call("frs_compress_range", b"sig-squash", start=2, end=2, summary="x"),
                says("ok"),
            ]
        )
        async with FRSModelCallback(tmp_path / "frs.db") as frs:
            agent = Agent(frs, model)
            await agent.ask(await agent.start(), "Why?")
        last = model.received[-1].contents
        assert last[-1].parts is not None
        refusal = last[-1].parts[0].function_response
        assert refusal is not None
        assert refusal.response is not None
        assert "together is 2..3" in str(refusal.response.get("error")), refusal.response

    async def test_parallel_calls_answered_in_one_content_are_sent_once_and_squash_together(
        self, tmp_path: Path
    ) -> None:
        both = types.Content(
            role="model",
            parts=[
                types.Part(function_call=types.FunctionCall(name="run_tests", args={"cmd": "a"})),
                types.Part(function_call=types.FunctionCall(name="run_tests", args={"cmd": "b"})),
            ],
        )
        model = ScriptedLlm(
            script=[
                both,
                call("frs_compress_range", b"sig-squash", start=2, end=4, summary="ran a and b"),
                says("ok"),
            ]
        )
        db = tmp_path / "frs.db"
        async with FRSModelCallback(db) as frs:
            agent = Agent(frs, model)
            session = await agent.start()
            await agent.ask(session, "Why?")
            async with Conversation(frs.conversations.store, "adk", session) as conversation:
                entries = await conversation.entries()
        before, after = model.received[1].contents, model.received[2].contents

        # The two results came in one content: FRS holds a result for each call (positions 3
        # and 4, which squash with their call), and the model is sent that content once.
        assert [e.lane for e in entries] == ["user", "summary", "assistant", "tool", "assistant"]
        assert len(before) == 3
        assert [p.function_response.name for p in before[2].parts or [] if p.function_response] == [
            "run_tests",
            "run_tests",
        ]
        assert_paired(before)
        assert "FAILED" not in text(after)
        assert "ran a and b" in text(after)
        assert len(after) == 3  # the summary is the first part of the model turn after it
        assert_paired(after)
        assert_gemini_turns(after)


class TestSquashThroughFrsMcp:
    async def test_frs_mcp_on_the_same_database_finds_the_session_and_its_squash_is_sent_next(
        self, database: Path | str
    ) -> None:
        model = ScriptedLlm(
            script=[call("run_tests", b"sig-run", cmd="pytest"), says("Found it."), says("Sure.")]
        )
        async with FRSModelCallback(database) as frs:
            agent = Agent(frs, model)
            session = await agent.start()
            await agent.ask(session, "Why?")
            view = await squash_over_stdio(database, "adk", session, 2, 3, "pytest failed: flush")
            await agent.ask(session, "Thanks")
        before, after = model.received[1].contents, model.received[2].contents

        assert "[2] Summary of 2 messages (SQ.1@" in view
        assert "[3] Assistant: Found it." in view  # the run's answer was recorded when made
        assert "test_sync run 59 FAILED" in text(before)
        assert "FAILED" not in text(after)
        assert after[1].parts is not None
        assert (after[1].parts[0].text or "").startswith("[Summary of 2 messages (SQ.1@")
        assert dumped(after[:1]) == dumped(before[:1])
        # The answer after it is the model turn it opens (Gemini's turns alternate).
        assert [part.text for part in after[1].parts][1:] == ["Found it."]
        assert dumped(after[2:]) == dumped(
            [types.Content(role="user", parts=[types.Part(text="Thanks")])]
        )
        assert_paired(after)
        assert_gemini_turns(after)


class TestRecording:
    async def test_the_thread_is_recorded_once_across_runs_and_a_restart(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "frs.db"
        model = ScriptedLlm(
            script=[call("run_tests", b"sig-run", cmd="pytest"), says("Found it."), says("Sure.")]
        )
        async with FRSModelCallback(db) as frs:
            agent = Agent(frs, model)
            session = await agent.start()
            await agent.ask(session, "Why?")
        # The newest entries squashed, then a new callback (a new process) on the same file.
        await squash_over_stdio(db, "adk", session, 2, 4, "ran pytest; found it")
        async with FRSModelCallback(db) as frs:
            await Agent(frs, model, agent.sessions).ask(session, "Thanks")

        async with Conversation(db, "adk", session) as conversation:
            entries = await conversation.entries()
        # Each answer recorded when it was made; what the summary covers not again.
        assert [e.lane for e in entries] == ["user", "summary", "user", "assistant"]
        assert [e.content for e in entries if e.kind == "message"] == ["Why?", "Thanks", "Sure."]
        assert len(model.received[-1].contents) == 3


class TestReadme:
    async def test_the_example_runs_as_written_and_its_model_squashes_its_thread(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.chdir(tmp_path)
        main = example("Google ADK")["main"]
        model = ScriptedLlm(
            script=[
                call("frs_view_thread", b"sig-view"),
                call("frs_compress_range", b"sig-squash", start=2, end=3, summary="Viewed."),
                says("A race in Syncer.flush."),
                says("Fixed: a lock in flush."),
            ]
        )
        await main(model)
        assert capsys.readouterr().out == "A race in Syncer.flush.\nFixed: a lock in flush.\n"
        assert "[1] User: Why does test_sync fail?" in text(model.received[1].contents)
        assert "[Summary of 2 messages (SQ.1@" in text(model.received[2].contents)
        assert "[1] User:" not in text(model.received[2].contents)
        second = model.received[3].contents
        assert "Fixed" not in text(second)
        assert dumped(second[-2:]) == dumped(
            [
                says("A race in Syncer.flush."),
                types.Content(role="user", parts=[types.Part(text="Fix it.")]),
            ]
        )
        assert_paired(second)
        assert (tmp_path / "frs.db").is_file()


def assert_gemini_turns(contents: Sequence[types.Content]) -> None:
    """What Gemini takes: the first content user-role, then model and user turns in turn."""
    roles = [content.role for content in contents]
    assert roles, "no contents"
    assert roles[0] == "user", roles
    assert all(role == ("user" if n % 2 == 0 else "model") for n, role in enumerate(roles)), roles


class TestASquashThatOpensTheThread:
    async def test_is_sent_as_the_user_turn_merged_with_the_next_and_keeps_its_bytes(
        self, tmp_path: Path
    ) -> None:
        model = ScriptedLlm(
            script=[
                says("Found it."),
                call("frs_compress_range", b"sig-squash", start=1, end=2, summary="Asked why."),
                says("Fixing."),
                says("Done."),
            ]
        )
        async with FRSModelCallback(tmp_path / "frs.db") as frs:
            agent = Agent(frs, model)
            session = await agent.start()
            await agent.ask(session, "Why?")
            await agent.ask(session, "Fix it")
            await agent.ask(session, "Thanks")
        after, following = model.received[2].contents, model.received[3].contents

        assert after[0].role == "user"
        assert after[0].parts is not None
        opening = [part.text or "" for part in after[0].parts]
        assert opening[0].startswith("[Summary of 2 messages (SQ.1@")
        assert "Asked why." in opening[0]
        assert opening[1:] == ["Fix it"]
        assert "Why?" not in text(after)
        for request in model.received:
            assert_gemini_turns(request.contents)
            assert_paired(request.contents)
        assert dumped(following[: len(after)]) == dumped(after)
