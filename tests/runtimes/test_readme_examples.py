"""The README's framework examples, run as written: each block's `main(model)` gets the
framework's own scripted model where the README passes a model name (which needs a key)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message, function_call
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## In an agent framework\n", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)
LONG = "tests/test_sync.py::case PASSED\n" * 200 + "FAILED 3 != 4"


def example(index: int) -> ModuleType:
    """README block `index` of the section, loaded as a module (its `__main__` guard idle)."""
    module = ModuleType(f"readme_example_{index}")
    exec(compile(BLOCKS[index], f"README.md example {index}", "exec"), module.__dict__)
    return module


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The examples name `frs.db` and `frs-mcp`: run them in a fresh folder, this venv's
    commands first on PATH."""
    monkeypatch.chdir(tmp_path)
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return tmp_path


def test_the_section_has_the_five_examples() -> None:
    assert len(BLOCKS) == 5
    assert "FRSSession(" in BLOCKS[0]
    assert "capabilities=[history]" in BLOCKS[1]
    assert "MCPToolset(" in BLOCKS[2]
    assert "middleware=[frs]" in BLOCKS[3]  # LangChain: tests/runtimes/test_langchain.py
    assert "before_model_callback=frs" in BLOCKS[4]  # ADK: tests/runtimes/test_adk.py


async def test_the_openai_agents_example(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel(
        [
            [function_call("frs_view_thread", {}, call_id="v1")],
            [assistant_message(LONG, item_id="m1")],
            [function_call("frs_compress_last", {"count": 4, "summary": "3 != 4"}, call_id="s1")],
            [assistant_message("Fixed: a lock in Syncer.flush.", item_id="m2")],
        ]
    )
    await example(0).main(model)
    last = json.dumps(model.calls[-1].input, default=str)
    assert "case PASSED" not in last
    assert "] 3 != 4" in last
    assert "Fixed: a lock in Syncer.flush." in capsys.readouterr().out
    assert (in_tmp / "frs.db").exists()


class Script:
    def __init__(self, *steps: ModelResponse) -> None:
        self.steps = list(steps)
        self.received: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received.append(messages)
        return self.steps.pop(0)


def text_of(messages: list[Any]) -> str:
    return json.dumps([str(m) for m in messages])


async def test_the_pydantic_ai_example(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = Script(
        ModelResponse([TextPart(LONG)]),
        ModelResponse([ToolCallPart("frs_compress_last", {"count": 2, "summary": "3 != 4"})]),
        ModelResponse([TextPart("Fixed: a lock in Syncer.flush.")]),
    )
    await example(1).main(FunctionModel(script))
    assert "case PASSED" not in text_of(script.received[-1])
    assert "] 3 != 4" in text_of(script.received[-1])
    assert "Fixed: a lock in Syncer.flush." in capsys.readouterr().out


async def test_the_frs_mcp_toolset_example(in_tmp: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # capfd, not capsys: the stdio transport hands the server its stderr file descriptor.
    start = {"action": "start", "interface": "pydantic-ai", "conversation": "chat-1"}
    squash = {"count": 4, "summary": "3 != 4"}
    script = Script(
        ModelResponse([ToolCallPart("frs_session", start, tool_call_id="t1")]),
        ModelResponse([TextPart(LONG)]),
        ModelResponse([ToolCallPart("frs_compress_last", squash, tool_call_id="t2")]),
        ModelResponse([TextPart("Fixed: a lock in Syncer.flush.")]),
    )
    await example(2).main(FunctionModel(script))
    started = text_of(script.received[1])
    assert "frs_session" in started
    assert "'created': False" in started or '"created": false' in started.lower()
    assert "case PASSED" not in text_of(script.received[-1])
    assert "] 3 != 4" in text_of(script.received[-1])
    assert "Fixed: a lock in Syncer.flush." in capfd.readouterr().out
