"""The validator the gateway checks each rewrite with, and the tests' upstream checks every
request with, refuses what the Messages API refuses."""

from __future__ import annotations

from typing import Any

import pytest

from server.gateway.anthropic_rules import problems
from tests.gateway.conversation import call, result, said, user

GOOD = [user("go"), call("toolu_1", "ls"), result("toolu_1", "a"), said("done"), user("next")]


def bad(messages: list[dict[str, Any]]) -> list[str]:
    return problems({"model": "m", "messages": messages})


class TestValidator:
    def test_a_valid_conversation_has_no_problems(self):
        assert bad(GOOD) == []

    @pytest.mark.parametrize(
        ("messages", "expected"),
        [
            ([said("hi")], "messages[0] is assistant, roles must alternate from user"),
            ([user("a"), user("b")], "messages[1] is user, roles must alternate from user"),
            ([user("a"), {"role": "assistant", "content": []}], "messages[1] has no content"),
            (
                [user("go"), call("toolu_1", "ls"), user("no result"), said("x"), user("y")],
                "messages[1] calls tool_use toolu_1, not answered in messages[2]",
            ),
            (
                [user("go"), said("x"), result("toolu_9", "a")],
                "messages[2] answers tool_use toolu_9, not called in messages[1]",
            ),
            (
                [
                    user("go"),
                    call("toolu_1", "ls"),
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "first"},
                            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
                        ],
                    },
                ],
                "messages[2] has content before its tool_result blocks",
            ),
            (
                [user("go"), call("toolu_1", "ls"), result("toolu_1", "a"), call("toolu_1", "ls")],
                "messages[3].content[0] repeats tool_use id toolu_1",
            ),
            (
                [
                    user("go"),
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "t"},
                            {"type": "text", "text": "x"},
                        ],
                    },
                ],
                "messages[1].content[0] is a thinking block without its signature",
            ),
            (
                [user("go"), {"role": "assistant", "content": [{"type": "redacted_thinking"}]}],
                "messages[1].content[0] is redacted thinking without its data",
            ),
        ],
    )
    def test_a_known_bad_request_is_refused_in_words(self, messages, expected):
        assert expected in bad(messages)

    def test_breakpoints_past_four_or_out_of_lifetime_order_are_refused(self):
        hour = {"type": "ephemeral", "ttl": "1h"}
        minutes = {"type": "ephemeral"}
        system = [{"type": "text", "text": "s", "cache_control": minutes}]
        marked = {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": hour}]}
        payload = {"model": "m", "system": system, "messages": [marked]}
        assert "a 1-hour cache_control breakpoint after a 5-minute one" in problems(payload)
        tools = [{"name": f"t{i}", "input_schema": {}, "cache_control": hour} for i in range(4)]
        crowded = {"model": "m", "tools": tools, "messages": [marked]}
        assert "5 cache_control breakpoints, at most 4" in problems(crowded)
        assert problems({"model": "m", "tools": tools[:3], "messages": [marked]}) == []

    def test_a_body_without_messages_is_refused(self):
        assert problems({"model": "m"}) == ["the body is not an object with a messages array"]
