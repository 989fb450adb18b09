"""Small things a view or a reply said wrong (issue 22): each pinned so it stays fixed."""

from __future__ import annotations

import json
from pathlib import Path

from frs import NewMessage, PlanStep, ViewOptions, focus, plans, recording, viewing
from frs.replies import layer_closed, plan_updated
from server.cli.importer import run_import
from server.settings import Settings
from tests.frs.conftest import assistant, entry_lines, open_env, tool, user


async def test_closing_a_tiny_layer_does_not_claim_a_negative_saving(tmp_path: Path) -> None:
    async with open_env(tmp_path / "t.db") as env:
        await recording.record(env, [user("task")])
        await focus.open_layer(env, "try")
        await recording.record(env, [user("ok")])
        reply = layer_closed(await focus.close_layer(env, "a summary longer than what it replaced"))
    assert "saved ~-" not in reply
    assert "more)" in reply, reply


async def test_the_plan_echo_marks_steps_as_the_view_does(tmp_path: Path) -> None:
    steps = (PlanStep("reproduce", "done"), PlanStep("fix", "doing"), PlanStep("ship", "todo"))
    async with open_env(tmp_path / "t.db") as env:
        reply = plan_updated(await plans.update(env, steps), None)
        view = await viewing.view(env, ViewOptions())
    assert reply.startswith("Plan: ✓ reproduce · ▶ fix · ○ ship · revision ")
    assert "Plan: ✓ reproduce · ▶ fix · ○ ship" in view.split("\n")


async def test_a_three_character_message_stays_whole_in_a_budgeted_view(tmp_path: Path) -> None:
    async with open_env(tmp_path / "t.db") as env:
        await recording.record(env, [user("the task " * 20), user("yes")])
        for k in range(60):
            await recording.record(env, [user(f"message {k} " + "words " * 40)])
        view = await viewing.view(env, ViewOptions(budget_tokens=1_500))
    lines = view.split("\n")
    assert lines[1].endswith(" · M.1"), "the head: the oldest entries as one-line cards"
    assert lines[2] == "[2] User: yes", view


async def test_a_merged_run_opens_on_its_first_line_with_text(tmp_path: Path) -> None:
    run = "run-1"
    async with open_env(tmp_path / "t.db") as env:
        await recording.record(
            env,
            [
                user("go"),
                NewMessage("assistant", "\n  \n\nLooking now.", run_id=run),
                NewMessage("assistant", "Done.", run_id=run),
            ],
        )
        view = await viewing.view(env, ViewOptions(merge_runs=True))
    lines = view.split("\n")
    opening = next(i for i, line in enumerate(lines) if line.startswith("[2–3]"))
    assert lines[opening] == "[2–3] Assistant: Looking now.", view
    assert lines[opening + 1] == "    Done."


async def test_a_card_with_one_line_cut_says_line(tmp_path: Path) -> None:
    async with open_env(tmp_path / "t.db") as env:
        await recording.record(env, [user("x" * 700 + "\nmiddle\n" + "y" * 700)])
        view = await viewing.view(env, ViewOptions())
    assert "    … 1 line …" in view.split("\n"), view


async def test_a_one_line_card_keeps_the_command_files_and_error(tmp_path: Path) -> None:
    result = "\n".join(
        [
            "collected 3 items",
            *(f"line {i}" for i in range(200)),
            "src/app/models.py:12: in save",
            "E   ValueError: bad input",
            "FAILED tests/a.py",
        ]
    )
    async with open_env(tmp_path / "t.db") as env:
        await recording.record(env, [user("the task")])
        await recording.record(
            env,
            [
                assistant("Run the tests.", ("c1", "bash", {"command": "pytest -x tests/a.py"})),
                tool("c1", result),
            ],
        )
        for k in range(80):
            await recording.record(env, [user(f"later message {k} " + "words " * 30)])
        # Under 2,500 tokens of room the oldest entries are one-line cards, not cards.
        view = await viewing.view(env, ViewOptions(budget_tokens=2_000))
    answer = next(line for line in entry_lines(view) if line.startswith("[3] Tool bash: "))
    assert answer.endswith(" · M.3"), "the result is a one-line card"
    assert "[tool_use:bash, command:pytest -x tests/a.py]" in view
    assert "src/app/models.py" in answer, answer
    assert "ValueError: bad input" in answer, answer


async def test_the_import_reply_counts_thinking_apart_from_messages(tmp_path: Path) -> None:
    rows = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "thinking it over", "kind": "thinking"},
        {"role": "assistant", "content": "hello"},
    ]
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    reply = await run_import(Settings(database=str(tmp_path / "i.db")), str(transcript), None)
    assert reply.startswith("Imported 2 messages and 1 thinking block (not numbered) from "), reply
