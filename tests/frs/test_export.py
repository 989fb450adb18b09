"""frs.export is pure: hand-built threads exported to the OpenAI and Anthropic shapes.

The validators at the top state what each API requires of a request's messages; they are used
here on hand-built threads (calls without results, orphan results, reused call ids, summaries,
thinking, leading assistant turns) and by tests/server/test_export.py on exports of real
transcripts. Each validator returns the problems it found, so a failure names them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frs.export import NO_RESULT, export_call_id, to_anthropic, to_openai
from frs.model import Message, ToolCall
from frs.text import estimate_tokens

NOW = "2025-01-01T00:00:00Z"
SHA = "0b4f2d11" + "0" * 56

# -- validators -------------------------------------------------------------------------------

OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool"}
#: What the Messages API accepts as a tool_use id (its 400 names this very pattern).
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def openai_problems(messages: Any) -> list[str]:
    """Chat Completions rules: valid roles and shapes; every `tool` message answers an id of
    the nearest assistant message with tool_calls before it (only tool messages in between),
    and every such call is answered, once, before the next non-tool message."""
    if not isinstance(messages, list):
        return [f"messages is {type(messages).__name__}, not a list"]
    problems: list[str] = []
    awaiting: list[str] = []  # ids of the open tool block still unanswered
    block: set[str] | None = None  # ids of the assistant message the open block answers
    for i, message in enumerate(messages):
        at = f"messages[{i}]"
        if not isinstance(message, dict):
            problems.append(f"{at} is not an object")
            continue
        role = message.get("role")
        if role not in OPENAI_ROLES:
            problems.append(f"{at}.role is {role!r}")
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(message.get("content"), str):
                problems.append(f"{at}.content is not a string")
            if block is None:
                problems.append(f"{at} answers {call_id!r} but follows no tool call")
            elif call_id not in block:
                problems.append(f"{at} answers {call_id!r}, not a call of the message before")
            elif call_id not in awaiting:
                problems.append(f"{at} answers {call_id!r} a second time")
            else:
                awaiting.remove(call_id)
            continue
        if awaiting:
            problems.append(f"{at} ({role}) comes before the results of {awaiting}")
        awaiting, block = [], None
        content = message.get("content")
        calls = message.get("tool_calls")
        if role != "assistant":
            if not isinstance(content, str):
                problems.append(f"{at}.content is not a string")
            if calls is not None:
                problems.append(f"{at} ({role}) carries tool_calls")
            continue
        if calls is None:
            if not isinstance(content, str):
                problems.append(f"{at}.content is not a string and there are no tool_calls")
            continue
        if content is not None and not isinstance(content, str):
            problems.append(f"{at}.content is neither a string nor null")
        if not isinstance(calls, list) or not calls:
            problems.append(f"{at}.tool_calls is not a non-empty list")
            continue
        ids: list[Any] = []
        for j, call in enumerate(calls):
            where = f"{at}.tool_calls[{j}]"
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or set(call) != {"id", "type", "function"}:
                problems.append(f"{where} does not have exactly id, type and function")
            elif call["type"] != "function" or not isinstance(call["id"], str) or not call["id"]:
                problems.append(f"{where} has type {call['type']!r} or a bad id")
            if not isinstance(function, dict) or set(function) != {"name", "arguments"}:
                problems.append(f"{where}.function does not have exactly name and arguments")
            elif not isinstance(function["name"], str) or not function["name"]:
                problems.append(f"{where}.function.name is empty")
            elif not isinstance(function["arguments"], str):
                problems.append(f"{where}.function.arguments is not a JSON string")
            if isinstance(call, dict):
                ids.append(call.get("id"))
        if len(set(ids)) != len(ids):
            problems.append(f"{at}.tool_calls repeats an id: {ids}")
        awaiting, block = list(dict.fromkeys(ids)), set(ids)
    if awaiting:
        problems.append(f"the messages end before the results of {awaiting}")
    return problems


def anthropic_problems(payload: Any) -> list[str]:
    """Messages API rules: a top-level `system` string; `messages` alternate user/assistant
    starting with user; blocks of known types; text blocks with non-whitespace text; tool_use
    input an object; every tool_use answered by a tool_result in the very next (user) message,
    whose tool_result blocks come before any text and answer nothing else."""
    if not isinstance(payload, dict) or set(payload) - {"system", "messages"}:
        return ["the payload is not an object of system and messages"]
    problems: list[str] = []
    if not isinstance(payload.get("system", ""), str):
        problems.append("system is not a string")
    turns = payload.get("messages")
    if not isinstance(turns, list) or not turns:
        return [*problems, "messages is not a non-empty list"]
    allowed = {"user": {"text", "tool_result"}, "assistant": {"text", "tool_use"}}
    asked: list[str] = []  # tool_use ids of the previous (assistant) turn
    for i, turn in enumerate(turns):
        at = f"messages[{i}]"
        role = turn.get("role") if isinstance(turn, dict) else None
        expected = "user" if i % 2 == 0 else "assistant"
        if role != expected:
            problems.append(f"{at}.role is {role!r}, expected {expected!r} (alternating)")
        blocks = turn.get("content") if isinstance(turn, dict) else None
        if not isinstance(blocks, list) or not blocks:
            problems.append(f"{at}.content is not a non-empty list of blocks")
            asked = []
            continue
        answered: list[str] = []
        seen_text = False
        for j, block in enumerate(blocks):
            where = f"{at}.content[{j}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in allowed.get(str(role), set()):
                problems.append(f"{where} is a {kind!r} block in a {role!r} message")
                continue
            if kind == "text":
                seen_text = True
                text = block.get("text")
                if not isinstance(text, str) or not text.strip():
                    problems.append(f"{where}.text is {text!r}: text must not be blank")
            elif kind == "tool_use":
                if not isinstance(block.get("id"), str) or not block.get("id"):
                    problems.append(f"{where}.id is missing")
                if not isinstance(block.get("name"), str) or not block.get("name"):
                    problems.append(f"{where}.name is missing")
                if not isinstance(block.get("input"), dict):
                    problems.append(f"{where}.input is not an object")
            else:
                call_id = block.get("tool_use_id")
                if seen_text:
                    problems.append(f"{where} (tool_result {call_id!r}) comes after text")
                if call_id not in asked:
                    problems.append(f"{where} answers {call_id!r}, no tool_use of the turn before")
                elif call_id in answered:
                    problems.append(f"{where} answers {call_id!r} a second time")
                answered.append(call_id)
                if not isinstance(block.get("content"), str | list):
                    problems.append(f"{where}.content is neither text nor blocks")
        missing = [call_id for call_id in asked if call_id not in answered]
        if missing:
            problems.append(f"{at} does not answer the tool_use ids {missing}")
        asked = (
            [b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
            if role == "assistant"
            else []
        )
    if asked:
        problems.append(f"the messages end before the results of {asked}")
    return problems


def anthropic_id_problems(payload: dict[str, Any]) -> list[str]:
    """The Messages API refuses a request whose tool_use ids repeat anywhere in it, or use
    characters outside [a-zA-Z0-9_-] (400 "tool_use ids must be unique" / "should match
    pattern")."""
    problems: list[str] = []
    seen: set[str] = set()
    for i, turn in enumerate(payload["messages"]):
        for block in turn["content"]:
            if block.get("type") != "tool_use":
                continue
            call_id = block["id"]
            if not ANTHROPIC_ID.match(call_id):
                problems.append(f"messages[{i}] tool_use id {call_id!r} has other characters")
            if call_id in seen:
                problems.append(f"messages[{i}] tool_use id {call_id!r} repeats")
            seen.add(call_id)
    return problems


def sent_ids(openai: list[dict[str, Any]], anthropic: dict[str, Any]) -> list[list[str]]:
    """The call ids each shape sends, and the ids its results carry, in payload order:
    [OpenAI calls, OpenAI results, Anthropic calls, Anthropic results]."""
    blocks = [b for turn in anthropic["messages"] for b in turn["content"]]
    return [
        [call["id"] for m in openai for call in m.get("tool_calls") or ()],
        [m["tool_call_id"] for m in openai if m["role"] == "tool"],
        [b["id"] for b in blocks if b["type"] == "tool_use"],
        [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"],
    ]


# -- hand-built threads -----------------------------------------------------------------------


class Thread:
    """Builds live entries in thread order, numbering them as the store would."""

    def __init__(self) -> None:
        self.entries: list[Message] = []
        self.next = 1

    def add(self, role: str, content: str, **fields: Any) -> Thread:
        kind = fields.pop("kind", "message")
        number = None if kind == "thinking" else self.next
        anchor = self.entries[-1].ord_last if self.entries else 0
        values: dict[str, Any] = {
            "number": number,
            "ord": number if number is not None else anchor,
            "ord_last": number if number is not None else anchor,
            "role": role,
            "kind": kind,
            "content": content,
            "sha256": SHA,
            "tokens": estimate_tokens(content),
            "live": number is not None,
            "created_at": NOW,
            **fields,
        }
        self.entries.append(Message(**values))
        if number is not None:
            self.next += 1
        return self

    def system(self, content: str) -> Thread:
        return self.add("system", content)

    def user(self, content: str) -> Thread:
        return self.add("user", content)

    def assistant(self, content: str, *calls: tuple[str, str, str]) -> Thread:
        """Each call is (id, name, arguments as JSON text)."""
        return self.add(
            "assistant", content, tool_calls=tuple(ToolCall(i, n, a) for i, n, a in calls)
        )

    def tool(self, call_id: str, content: str, name: str = "bash") -> Thread:
        return self.add("tool", content, name=name, tool_call_id=call_id)

    def thinking(self, content: str) -> Thread:
        return self.add("assistant", content, kind="thinking")

    def summary(self, content: str, covered: int, n: int = 1) -> Thread:
        return self.add(
            "assistant", content, kind="summary", covered=covered, squash_n=n, squash_sha256=SHA
        )


def bash(cmd: str) -> str:
    return json.dumps({"cmd": cmd})


def both_valid(thread: Thread) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Both exports, each checked against its API's rules."""
    openai, anthropic = to_openai(thread.entries), to_anthropic(thread.entries)
    assert openai_problems(openai) == []
    assert anthropic_problems(anthropic) == []
    return openai, anthropic


def blocks(payload: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every block as (role, type, id or text)."""
    found = []
    for turn in payload["messages"]:
        for block in turn["content"]:
            key = block.get("text") or block.get("id") or block.get("tool_use_id") or ""
            found.append((turn["role"], block["type"], key))
    return found


# -- tests ------------------------------------------------------------------------------------


class TestValidators:
    """The validators refuse what the APIs refuse; otherwise a passing export proves nothing."""

    def test_openai_refuses_a_tool_message_with_no_call_before_it(self) -> None:
        bad = [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
        ]
        assert openai_problems(bad) == ["messages[1] answers 'c1' but follows no tool call"]

    def test_openai_refuses_a_call_whose_result_comes_after_another_message(self) -> None:
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        bad = [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "user", "content": "wait"},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
        ]
        problems = openai_problems(bad)
        assert "messages[1] (user) comes before the results of ['c1']" in problems
        assert "messages[2] answers 'c1' but follows no tool call" in problems

    def test_openai_refuses_unknown_roles_and_non_function_calls(self) -> None:
        call = {"id": "c1", "type": "tool", "function": {"name": "f", "arguments": {}}}
        bad = [
            {"role": "summary", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
        ]
        assert openai_problems(bad) == [
            "messages[0].role is 'summary'",
            "messages[1].tool_calls[0] has type 'tool' or a bad id",
            "messages[1].tool_calls[0].function.arguments is not a JSON string",
        ]

    def test_anthropic_refuses_a_first_assistant_turn_and_repeated_roles(self) -> None:
        text = [{"type": "text", "text": "x"}]
        bad = {
            "system": "",
            "messages": [
                {"role": "assistant", "content": text},
                {"role": "assistant", "content": text},
            ],
        }
        assert anthropic_problems(bad) == [
            "messages[0].role is 'assistant', expected 'user' (alternating)"
        ]

    def test_anthropic_refuses_results_after_text_unanswered_calls_and_blank_text(self) -> None:
        use = {"type": "tool_use", "id": "c1", "name": "f", "input": "{}"}
        bad = {
            "system": "",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": " \n"}]},
                {"role": "assistant", "content": [use, {**use, "id": "c2", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "first"},
                        {"type": "tool_result", "tool_use_id": "c1", "content": "x"},
                        {"type": "tool_result", "tool_use_id": "c9", "content": "x"},
                    ],
                },
            ],
        }
        assert anthropic_problems(bad) == [
            "messages[0].content[0].text is ' \\n': text must not be blank",
            "messages[1].content[0].input is not an object",
            "messages[2].content[1] (tool_result 'c1') comes after text",
            "messages[2].content[2] (tool_result 'c9') comes after text",
            "messages[2].content[2] answers 'c9', no tool_use of the turn before",
            "messages[2] does not answer the tool_use ids ['c2']",
        ]

    def test_anthropic_ids_must_be_unique_and_plain(self) -> None:
        use = {"type": "tool_use", "id": "a/1", "name": "f", "input": {}}
        payload = {
            "messages": [
                {"role": "assistant", "content": [use]},
                {"role": "assistant", "content": [use]},
            ]
        }
        assert anthropic_id_problems(payload) == [
            "messages[0] tool_use id 'a/1' has other characters",
            "messages[1] tool_use id 'a/1' has other characters",
            "messages[1] tool_use id 'a/1' repeats",
        ]


class TestOpenAI:
    def test_a_call_and_its_result_stay_paired_in_the_function_shape(self) -> None:
        thread = (
            Thread()
            .system("You fix tests.")
            .user("Run it")
            .assistant("", ("c1", "bash", bash("pytest -x")))
            .tool("c1", "1 failed")
            .assistant("One failure.")
        )
        openai, _ = both_valid(thread)
        assert openai == [
            {"role": "system", "content": "You fix tests."},
            {"role": "user", "content": "Run it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd": "pytest -x"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
            {"role": "assistant", "content": "One failure."},
        ]

    def test_parallel_calls_answered_out_of_order_stay_in_one_block(self) -> None:
        thread = (
            Thread()
            .user("Both")
            .assistant("Two at once.", ("a", "read", "{}"), ("b", "read", "{}"))
            .tool("b", "B")
            .tool("a", "A")
        )
        openai, _ = both_valid(thread)
        assert [(m["role"], m.get("tool_call_id")) for m in openai] == [
            ("user", None),
            ("assistant", None),
            ("tool", "b"),
            ("tool", "a"),
        ]
        assert openai[1]["content"] == "Two at once."

    def test_a_call_without_a_result_gets_a_placeholder_before_the_next_message(self) -> None:
        thread = (
            Thread()
            .user("Go")
            .assistant("", ("a", "bash", bash("ls")), ("b", "bash", bash("pwd")))
            .tool("a", "x.py")
            .user("Stop")
            .assistant("", ("c", "finish", "{}"))
        )
        openai, _ = both_valid(thread)
        assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in openai[2:]] == [
            ("tool", "a", "x.py"),
            ("tool", "b", NO_RESULT),
            ("user", None, "Stop"),
            ("assistant", None, None),
            ("tool", "c", NO_RESULT),
        ]

    def test_an_orphan_result_becomes_user_text_naming_its_tool_and_id(self) -> None:
        thread = Thread().user("Go").tool("ghost", "late output", name="bash").assistant("Ok")
        openai, _ = both_valid(thread)
        assert openai[1] == {"role": "user", "content": "[tool result bash ghost] late output"}

    def test_a_result_after_an_intervening_message_is_not_paired_across_it(self) -> None:
        thread = (
            Thread()
            .assistant("", ("c1", "bash", bash("make")))
            .user("Still there?")
            .tool("c1", "built")
        )
        openai, _ = both_valid(thread)
        assert [m["role"] for m in openai] == ["assistant", "tool", "user", "user"]
        assert openai[1]["content"] == NO_RESULT
        assert openai[3]["content"].endswith("built")

    def test_a_call_id_used_again_by_a_later_message_pairs_with_the_nearest_call(self) -> None:
        thread = (
            Thread()
            .user("Twice")
            .assistant("", ("c1", "bash", bash("ls")))
            .tool("c1", "first")
            .assistant("", ("c1", "bash", bash("ls -a")))
            .tool("c1", "second")
        )
        openai, _ = both_valid(thread)
        assert [m.get("content") for m in openai if m["role"] == "tool"] == ["first", "second"]

    def test_a_summary_is_assistant_text_marked_as_a_summary(self) -> None:
        thread = Thread().user("Go").summary("Found the race in flush.", covered=6, n=3)
        openai, _ = both_valid(thread)
        assert openai[1] == {
            "role": "assistant",
            "content": "[Summary of 6 messages (SQ.3@0b4f2d11)] Found the race in flush.",
        }

    def test_thinking_is_left_out(self) -> None:
        thread = Thread().user("Go").thinking("secret plan").assistant("Done.")
        openai, anthropic = both_valid(thread)
        assert "secret plan" not in json.dumps(openai)
        assert "secret plan" not in json.dumps(anthropic)
        assert [m["role"] for m in openai] == ["user", "assistant"]

    def test_a_thread_may_start_with_an_assistant_message(self) -> None:
        openai, _ = both_valid(Thread().assistant("Resuming.").user("Yes"))
        assert openai == [
            {"role": "assistant", "content": "Resuming."},
            {"role": "user", "content": "Yes"},
        ]

    def test_empty_arguments_are_sent_as_an_empty_object(self) -> None:
        openai, _ = both_valid(Thread().assistant("", ("c1", "now", "")).tool("c1", "noon"))
        assert openai[0]["tool_calls"][0]["function"]["arguments"] == "{}"


class TestAnthropic:
    def test_leading_system_text_goes_to_the_top_level(self) -> None:
        thread = Thread().system("Rule one.").system("Rule two.").user("Hi").system("Later.")
        _, anthropic = both_valid(thread)
        assert anthropic["system"] == "Rule one.\n\nRule two."
        assert blocks(anthropic) == [
            ("user", "text", "Hi"),
            ("user", "text", "[system] Later."),
        ]

    def test_calls_become_tool_use_blocks_answered_in_the_next_user_message(self) -> None:
        thread = (
            Thread()
            .user("Run it")
            .assistant("Running.", ("c1", "bash", bash("pytest")), ("c2", "grep", "{}"))
            .tool("c2", "no match")
            .tool("c1", "1 failed")
            .user("And?")
            .assistant("Fixed.")
        )
        _, anthropic = both_valid(thread)
        assert blocks(anthropic) == [
            ("user", "text", "Run it"),
            ("assistant", "text", "Running."),
            ("assistant", "tool_use", "c1"),
            ("assistant", "tool_use", "c2"),
            ("user", "tool_result", "c2"),
            ("user", "tool_result", "c1"),
            ("user", "text", "And?"),
            ("assistant", "text", "Fixed."),
        ]
        assert anthropic["messages"][1]["content"][1]["input"] == {"cmd": "pytest"}
        assert anthropic_id_problems(anthropic) == []

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            ('{"path": "a.py"}', {"path": "a.py"}),
            ("", {}),
            ("not json", {"arguments": "not json"}),
            ("[1, 2]", {"arguments": [1, 2]}),
            ('"text"', {"arguments": "text"}),
        ],
    )
    def test_tool_use_input_is_always_an_object(
        self, arguments: str, expected: dict[str, Any]
    ) -> None:
        _, anthropic = both_valid(Thread().user("Go").assistant("", ("c1", "f", arguments)))
        assert anthropic["messages"][1]["content"][0]["input"] == expected

    def test_a_call_without_a_result_is_answered_before_the_next_text(self) -> None:
        thread = (
            Thread()
            .user("Go")
            .assistant("", ("a", "bash", bash("ls")), ("b", "finish", "{}"))
            .tool("a", "x.py")
            .user("Stop")
        )
        _, anthropic = both_valid(thread)
        assert anthropic["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "a", "content": "x.py"},
            {"type": "tool_result", "tool_use_id": "b", "content": NO_RESULT},
            {"type": "text", "text": "Stop"},
        ]

    def test_a_final_call_without_a_result_is_answered_at_the_end(self) -> None:
        _, anthropic = both_valid(Thread().user("Go").assistant("Done.", ("z", "submit", "{}")))
        assert anthropic["messages"][-1] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "z", "content": NO_RESULT}],
        }

    def test_an_orphan_result_becomes_text(self) -> None:
        thread = Thread().user("Go").assistant("Ok.").tool("ghost", "late", name="read")
        _, anthropic = both_valid(thread)
        assert blocks(anthropic)[-1] == ("user", "text", "[tool result read ghost] late")

    def test_a_thread_starting_with_the_assistant_gets_a_user_turn_first(self) -> None:
        thread = Thread().summary("Earlier work: tests pass.", covered=4).assistant("Next?")
        _, anthropic = both_valid(thread)
        assert anthropic["messages"][0]["role"] == "user"
        assert blocks(anthropic)[1:] == [
            (
                "assistant",
                "text",
                "[Summary of 4 messages (SQ.1@0b4f2d11)] Earlier work: tests pass.",
            ),
            ("assistant", "text", "Next?"),
        ]

    def test_empty_messages_still_carry_text(self) -> None:
        thread = Thread().user("").assistant("").tool("nobody", "")
        _, anthropic = both_valid(thread)
        assert all(text.strip() for _, kind, text in blocks(anthropic) if kind == "text")

    def test_a_call_id_used_again_by_a_later_message_keeps_both_pairs(self) -> None:
        thread = (
            Thread()
            .user("Twice")
            .assistant("", ("c1", "bash", bash("ls")))
            .tool("c1", "first")
            .assistant("", ("c1", "bash", bash("ls -a")))
            .tool("c1", "second")
        )
        _, anthropic = both_valid(thread)
        results = [
            b for t in anthropic["messages"] for b in t["content"] if b["type"] == "tool_result"
        ]
        assert [b["content"] for b in results] == ["first", "second"]

    def test_a_reused_call_id_is_sent_as_distinct_tool_use_ids(self) -> None:
        thread = (
            Thread()
            .user("Twice")
            .assistant("", ("c1", "bash", bash("ls")))
            .tool("c1", "first")
            .assistant("", ("c1", "bash", bash("ls -a")))
            .tool("c1", "second")
        )
        assert anthropic_id_problems(to_anthropic(thread.entries)) == []

    def test_a_call_id_with_other_characters_is_sent_in_the_allowed_alphabet(self) -> None:
        thread = Thread().user("Go").assistant("", ("run/1", "bash", "{}")).tool("run/1", "ok")
        exported = to_anthropic(thread.entries)
        assert anthropic_problems(exported) == []
        assert anthropic_id_problems(exported) == []

    def test_a_whitespace_only_message_is_not_sent_as_blank_text(self) -> None:
        assert anthropic_problems(to_anthropic(Thread().user("  \n").entries)) == []


class TestCallIds:
    def test_both_shapes_send_the_same_unique_ids_by_one_rule(self) -> None:
        thread = (
            Thread()
            .user("Go")
            .assistant("", ("c1", "bash", bash("ls")), ("run/1", "bash", bash("pwd")))
            .tool("c1", "first")
            .tool("run/1", "/w")
            .assistant("", ("c1", "bash", bash("ls -a")), ("run_1", "bash", bash("id")))
            .tool("run_1", "uid=0")
            .tool("c1", "second")
            .assistant("", ("", "bash", bash("true")))
        )
        openai, anthropic = both_valid(thread)
        calls = ["c1", "run_1", "c1_2", "run_1_2", "call"]
        assert sent_ids(openai, anthropic) == [
            calls,
            ["c1", "run_1", "run_1_2", "c1_2", "call"],
            calls,
            ["c1", "run_1", "run_1_2", "c1_2", "call"],
        ]
        results = [m["content"] for m in openai if m["role"] == "tool"]
        assert results == ["first", "/w", "uid=0", "second", NO_RESULT]

    @pytest.mark.parametrize(
        ("recorded", "sent", "expected"),
        [
            ("toolu_01A-b", set(), "toolu_01A-b"),
            ("call 1/ä", set(), "call_1__"),
            ("", set(), "call"),
            ("c1", {"c1"}, "c1_2"),
            ("c1", {"c1", "c1_2", "c1_3"}, "c1_4"),
            ("c1_2", {"c1", "c1_2"}, "c1_2_2"),
        ],
    )
    def test_an_id_keeps_the_allowed_alphabet_and_takes_the_first_free_suffix(
        self, recorded: str, sent: set[str], expected: str
    ) -> None:
        assert export_call_id(recorded, sent) == expected


# -- any thread -------------------------------------------------------------------------------

_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.sampled_from(["hi", "", "go on"])),
        st.tuples(st.just("system"), st.just("rule")),
        st.tuples(st.just("assistant"), st.sampled_from(["ok", ""])),
        st.tuples(st.just("calls"), st.lists(st.sampled_from("abcd"), min_size=1, max_size=3)),
        st.tuples(st.just("tool"), st.sampled_from("abcde")),
        st.tuples(st.just("thinking"), st.just("hmm")),
        st.tuples(st.just("summary"), st.just("earlier work")),
    ),
    max_size=25,
)


def _build(steps: Sequence[tuple[str, Any]]) -> Thread:
    thread = Thread()
    for kind, value in steps:
        if kind == "calls":
            thread.assistant("", *((i, "f", "{}") for i in dict.fromkeys(value)))
        elif kind == "tool":
            thread.tool(value, "out")
        elif kind == "summary":
            thread.summary(value, covered=2)
        else:
            getattr(thread, kind)(value)
    return thread


class TestAnyThread:
    @settings(max_examples=300, deadline=None)
    @given(_STEPS)
    def test_every_thread_exports_to_both_shapes_without_a_broken_pair(
        self, steps: list[tuple[str, Any]]
    ) -> None:
        thread = _build(steps)
        openai = to_openai(thread.entries)
        assert openai_problems(openai) == []
        if any(m.kind != "thinking" and m.role != "system" for m in thread.entries):
            anthropic = to_anthropic(thread.entries)
            assert anthropic_problems(anthropic) == []
            assert anthropic_id_problems(anthropic) == []
            ids = sent_ids(openai, anthropic)
            assert ids[0] == ids[2], "both shapes send the same call ids"
            assert ids[1] == ids[3], "and pair the same results with them"
            assert len(set(ids[0])) == len(ids[0])
        calls = sum(len(m.tool_calls) for m in thread.entries)
        assert sum(len(m.get("tool_calls") or ()) for m in openai) == calls
