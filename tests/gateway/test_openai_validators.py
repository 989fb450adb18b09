"""The validators of the OpenAI wires (each rewrite is checked with them, and the tests'
upstream checks every request with them) refuse what the APIs refuse: broken pairing, a
reasoning item cut from the item it belongs to, messages of the wrong shape."""

from __future__ import annotations

from typing import Any

import pytest

from server.gateway import chat, responses
from tests.gateway import openai_conversation as oc


def bad_input(items: list[dict[str, Any]]) -> list[str]:
    return responses.WIRE.problems({"model": "m", "input": items})


def bad_messages(messages: list[dict[str, Any]]) -> list[str]:
    return chat.WIRE.problems({"model": "m", "messages": messages})


class TestResponses:
    def test_codexs_conversation_has_no_problems(self):
        assert bad_input(oc.TASK) == []
        assert responses.WIRE.problems({"model": "m", "input": "just text"}) == []

    @pytest.mark.parametrize(
        ("items", "expected"),
        [
            (
                [oc.user("go"), oc.call("call_1", "ls")],
                "input[1] calls call_id call_1, not answered after it",
            ),
            (
                [oc.user("go"), oc.output("call_9", "a")],
                "input[1] answers call_id call_9, not called before it",
            ),
            (
                [oc.user("go"), oc.output("call_1", "a"), oc.call("call_1", "ls")],
                "input[1] answers call_id call_1, not called before it",
            ),
            (
                [
                    oc.call("call_1", "ls"),
                    oc.output("call_1", "a"),
                    oc.call("call_1", "ls"),
                    oc.output("call_1", "a"),
                ],
                "input[2] repeats call_id call_1",
            ),
            (
                [oc.user("go"), oc.reasoning("r"), oc.user("more")],
                "input[1] is a reasoning item without the item that followed it",
            ),
            (
                [oc.user("go"), oc.reasoning("r"), oc.reasoning("s"), oc.said("x")],
                "input[1] is a reasoning item without the item that followed it",
            ),
            (
                [oc.user("go"), oc.reasoning("r")],
                "input[1] is a reasoning item without the item that followed it",
            ),
            (
                [oc.user("go"), {"type": "reasoning", "encrypted_content": "x"}, oc.said("x")],
                "input[1] is a reasoning item without its summary",
            ),
            (
                [{"type": "message", "role": "user", "content": []}],
                "input[0] has no content",
            ),
            (
                [{"type": "message", "role": "tool", "content": "x"}],
                "input[0] is a message of role 'tool'",
            ),
            (
                [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "input_text", "text": "x"}],
                    }
                ],
                "input[0].content[0] is not a part a assistant message takes",
            ),
        ],
    )
    def test_a_known_bad_request_is_refused_in_words(self, items, expected):
        assert expected in bad_input(items)

    def test_a_body_without_input_is_refused(self):
        assert responses.WIRE.problems({"model": "m"}) == [
            "the body is not an object with an input"
        ]


class TestChat:
    def test_opencodes_conversation_has_no_problems(self):
        assert bad_messages(oc.CHAT_TASK) == []

    @pytest.mark.parametrize(
        ("messages", "expected"),
        [
            (
                [oc.chat_user("go"), oc.chat_call("call_1", "ls"), oc.chat_user("no result")],
                "messages[1] calls call_1, not answered before messages[2]",
            ),
            (
                [oc.chat_user("go"), oc.chat_call("call_1", "ls")],
                "messages[1] calls call_1, not answered",
            ),
            (
                [oc.chat_user("go"), oc.chat_said("x"), oc.chat_result("call_9", "a")],
                "messages[2] answers call_9, not a call of the assistant just before",
            ),
            (
                [
                    oc.chat_user("go"),
                    oc.chat_call("call_1", "ls"),
                    oc.chat_result("call_1", "a"),
                    oc.chat_call("call_1", "ls"),
                    oc.chat_result("call_1", "a"),
                ],
                "messages[3] repeats tool call id call_1",
            ),
            (
                [oc.chat_user("go"), {"role": "assistant", "content": None}],
                "messages[1] is an assistant message with neither content nor calls",
            ),
            ([{"role": "user", "content": ""}], "messages[0] has no content"),
            ([{"role": "robot", "content": "x"}], "messages[0] has role 'robot'"),
        ],
    )
    def test_a_known_bad_request_is_refused_in_words(self, messages, expected):
        assert expected in bad_messages(messages)
