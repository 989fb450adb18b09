"""The pure rules: what a summary and a batch of new messages must satisfy, and the token
accounting of a squash. Each refusal names what was wrong and where."""

from __future__ import annotations

from typing import Any, cast

import pytest

from frs.checks import check_new_messages, check_summary, squash_tokens
from frs.errors import InvalidContent, InvalidRequest, SummaryNotSmaller, SummaryTooLarge
from frs.model import Limits, Message, NewMessage, Role, ToolCall

LIMITS = Limits(max_message_chars=100, max_summary_chars=50, max_batch=3)
FIX = "Squash a longer range."


def new(role: str = "user", content: str = "hi", **fields: Any) -> NewMessage:
    return NewMessage(cast(Role, role), content, **fields)


def refusal(messages: list[NewMessage], kind: type[Exception] = InvalidContent) -> str:
    with pytest.raises(kind) as caught:
        check_new_messages(messages, LIMITS)
    return str(caught.value)


class TestCheckSummary:
    def test_returns_the_summary_stripped(self) -> None:
        assert check_summary("  BC \n", LIMITS) == "BC"

    @pytest.mark.parametrize("summary", ["", "   ", "\n\t \n"])
    def test_refuses_an_empty_or_blank_summary(self, summary: str) -> None:
        with pytest.raises(InvalidRequest, match="The summary is empty"):
            check_summary(summary, LIMITS)

    def test_accepts_a_summary_at_the_limit_counted_after_stripping(self) -> None:
        assert check_summary("  " + "s" * 50 + "  ", LIMITS) == "s" * 50

    def test_refuses_a_summary_over_the_limit_with_both_sizes(self) -> None:
        with pytest.raises(SummaryTooLarge) as caught:
            check_summary("s" * 1_051, Limits(max_summary_chars=1_000))
        assert (caught.value.size, caught.value.limit) == (1_051, 1_000)
        assert "1,051 characters; the limit is 1,000" in str(caught.value)

    def test_refuses_a_lone_surrogate_and_says_where(self) -> None:
        with pytest.raises(InvalidContent, match="U\\+D800 at character 2"):
            check_summary("ab\ud800cd", LIMITS)

    def test_keeps_nul_characters(self) -> None:
        assert check_summary("a\x00b", LIMITS) == "a\x00b"


class TestCheckNewMessages:
    def test_accepts_a_valid_batch(self) -> None:
        calls = (ToolCall("c1", "bash", "{}"), ToolCall("c2", "bash", "{}"))
        check_new_messages(
            [
                new("system", "be brief"),
                new("assistant", "", tool_calls=calls),
                new("tool", "out", tool_call_id="c1", name="bash"),
            ],
            LIMITS,
        )
        check_new_messages([new("assistant", "hmm", kind="thinking"), new("user", "a\x00")], LIMITS)

    def test_refuses_an_empty_batch(self) -> None:
        assert "No messages given" in refusal([], InvalidRequest)

    def test_refuses_a_batch_over_the_limit(self) -> None:
        assert refusal([new()] * 4, InvalidRequest) == (
            "4 messages in one call; the limit is 3. Split the batch."
        )

    def test_refuses_an_unknown_role_naming_the_index_and_the_roles(self) -> None:
        assert refusal([new(), new("robot")]) == (
            "messages[1].role is 'robot'; use one of system, user, assistant, tool."
        )

    def test_counts_content_and_tool_arguments_against_the_size_limit(self) -> None:
        check_new_messages([new(content="x" * 100)], LIMITS)
        calls = (ToolCall("c1", "write", "y" * 60),)
        message = refusal([new("assistant", "x" * 41, tool_calls=calls)])
        assert message.startswith("messages[0] has 101 characters; the limit is 100.")

    def test_refuses_a_lone_surrogate_in_content(self) -> None:
        assert "messages[0].content contains an unpaired surrogate U+DC00" in refusal(
            [new(content="\udc00")]
        )

    @pytest.mark.parametrize("role", ["user", "tool", "system"])
    def test_only_assistants_make_tool_calls(self, role: str) -> None:
        calls = (ToolCall("c1", "bash", "{}"),)
        assert f"has tool_calls but role {role!r}" in refusal([new(role, "x", tool_calls=calls)])

    def test_a_thinking_block_is_an_assistant_message_without_calls(self) -> None:
        assert "is a thinking block" in refusal([new("user", "x", kind="thinking")])
        calls = (ToolCall("c1", "bash", "{}"),)
        assert "is a thinking block" in refusal(
            [new("assistant", "x", kind="thinking", tool_calls=calls)]
        )

    @pytest.mark.parametrize(
        ("field", "call"), [("id", ToolCall(" ", "bash", "{}")), ("name", ToolCall("c1", "", "{}"))]
    )
    def test_a_tool_call_needs_an_id_and_a_name(self, field: str, call: ToolCall) -> None:
        assert refusal([new(), new("assistant", "", tool_calls=(call,))]) == (
            f"messages[1].tool_calls[0].{field} is empty; every tool call needs an {field}."
        )

    def test_refuses_a_call_id_repeated_within_one_message(self) -> None:
        calls = (ToolCall("c1", "bash", "{}"), ToolCall("c1", "grep", "{}"))
        assert refusal([new("assistant", "", tool_calls=calls)]) == (
            "messages[0].tool_calls[1].id 'c1' repeats an id of the same message."
        )

    def test_the_same_call_id_in_two_messages_is_allowed(self) -> None:
        call = (ToolCall("c1", "bash", "{}"),)
        check_new_messages(
            [new("assistant", "", tool_calls=call), new("assistant", "", tool_calls=call)], LIMITS
        )

    def test_refuses_a_lone_surrogate_in_tool_arguments(self) -> None:
        calls = (ToolCall("c1", "bash", '{"a": "\ud83d"}'),)
        assert "messages[0].tool_calls[0].arguments contains an unpaired surrogate" in refusal(
            [new("assistant", "", tool_calls=calls)]
        )

    def test_only_tool_messages_answer_calls(self) -> None:
        assert "has tool_call_id but role 'user'" in refusal([new(tool_call_id="c1")])

    @pytest.mark.parametrize("field", ["name", "tool_call_id", "run_id", "interface_message_id"])
    def test_refuses_a_lone_surrogate_in_any_text_field(self, field: str) -> None:
        message = new("tool", "ok", **{field: "x\udfff"})
        assert f"messages[0].{field} contains an unpaired surrogate U+DFFF" in refusal([message])

    def test_a_refused_batch_names_the_first_bad_message(self) -> None:
        assert refusal([new(), new(), new("robot")]).startswith("messages[2].role")


class TestSquashTokens:
    @staticmethod
    def entry(tokens: int) -> Message:
        return Message(1, 1, 1, "user", "message", "x", "0" * 64, tokens, True, "now")

    def test_counts_the_tokens_before_and_after(self) -> None:
        assert squash_tokens([self.entry(3), self.entry(4)], "a summary of both", FIX) == (7, 5)

    def test_refuses_a_summary_as_large_as_what_it_replaces(self) -> None:
        with pytest.raises(SummaryNotSmaller) as caught:
            squash_tokens([self.entry(2), self.entry(3)], "a summary of both", FIX)
        assert (caught.value.before, caught.value.after) == (5, 5)
        assert "(~5 tokens) is not smaller than what it would replace (~5 tokens)" in str(
            caught.value
        )
        assert str(caught.value).endswith(" Squash a longer range.")

    def test_a_short_summary_within_the_allowance_may_be_larger(self) -> None:
        assert squash_tokens([self.entry(2)], "a summary of both", FIX, allowance=5) == (2, 5)
        with pytest.raises(SummaryNotSmaller) as caught:
            squash_tokens([self.entry(2)], "a summary of both", "Up to {allowance}.", 4)
        assert str(caught.value).endswith(" Up to 4.")
