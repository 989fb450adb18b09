"""The tests' upstream checks thinking blocks as the documented API does: known-bad requests
are refused (or their blocks dropped, when the request asks for it), known-good ones pass."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from tests.hosts.model.binding import BETA, answer_thinking, check, signed

SYSTEM = [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "x"}}]
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]
BETA_HEADER = [("anthropic-beta", f"claude-code-20250219,{BETA}")]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(call_id: str, thinking: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": thinking, "signature": ""},
            {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}},
        ],
    }


def result(call_id: str, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
    }


LOOP = [
    user("Fix the race."),
    call("t1", "Look first."),
    result("t1", "a.py b.py"),
    call("t2", "Now read a.py."),
    result("t2", "def flush(): ..."),
    call("t3", "Patch it."),
    result("t3", "patched"),
]


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "system": SYSTEM, "tools": TOOLS, "messages": messages, **extra}


def host_transcript() -> list[dict[str, Any]]:
    return signed(LOOP, SYSTEM, TOOLS)


DROP = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}


class TestValid:
    def test_a_transcript_sent_back_as_it_was_passes(self):
        assert check(body(host_transcript()), []) == check(body(host_transcript()), [])
        done = check(body(host_transcript()), [])
        assert done.error is None
        assert done.dropped == ()

    def test_formatting_key_order_and_cache_markers_are_not_edits(self):
        messages = host_transcript()
        moved = copy.deepcopy(messages)
        moved[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
        moved[1]["content"][1] = dict(reversed(list(moved[1]["content"][1].items())))
        assert check(body(moved), []).error is None
        assert check({**body(moved), "system": [{"text": SYSTEM[0]["text"], "type": "text"}]}, [])

    def test_a_string_and_one_text_block_are_the_same_content(self):
        # As Claude Code sends its role-system messages: a block with the cache marker in one
        # request, a string in the next.
        said = [user("Fix the race."), {"role": "system", "content": "Today is Sunday."}]
        messages = signed([*said, *LOOP[1:3]], SYSTEM, TOOLS)
        messages[1]["content"] = [{"type": "text", "text": "Today is Sunday."}]
        assert check(body(messages), []).failing == ()
        messages[1]["content"] = "Today is Monday."
        assert check(body(messages), []).failing == ((2, 0),)

    def test_thinking_removed_from_the_start_the_end_or_all_of_it_passes(self):
        for drop in ({1}, {5}, {1, 3, 5}, {1, 3}):
            messages = host_transcript()
            for i in drop:
                messages[i]["content"] = messages[i]["content"][1:]
            assert check(body(messages), []).error is None, drop


class TestRefused:
    def test_an_edited_earlier_message_fails_every_later_block_with_the_documented_400(self):
        messages = host_transcript()
        messages[2]["content"][0]["content"] = "a summary of the listing"
        done = check(body(messages), [])
        assert done.error is not None
        assert done.error.startswith(
            "messages.3.content.0: Invalid `signature` in `thinking` block. The block is bound"
            " to a different conversation. Remove the block, or set "
            '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
        )
        assert BETA in done.error  # the header the setting needs is named
        assert done.failing == ((3, 0), (5, 0))

    def test_a_block_removed_from_the_middle_fails_the_ones_after_it(self):
        messages = host_transcript()
        messages[3]["content"] = messages[3]["content"][1:]
        done = check(body(messages), [])
        assert done.failing == ((5, 0),)

    def test_a_changed_system_or_tool_list_fails_every_block(self):
        changed = {**body(host_transcript()), "tools": [*TOOLS, {"name": "Read"}]}
        assert check(changed, []).failing == ((1, 0), (3, 0), (5, 0))

    def test_a_tampered_block_is_refused_even_with_drop_block(self):
        messages = host_transcript()
        messages[3]["content"][0]["thinking"] = "Something else."
        done = check(body(messages, thinking=DROP), BETA_HEADER)
        assert done.error == "messages.3.content.0: Invalid `signature` in `thinking` block."
        unsigned = copy.deepcopy(LOOP)
        assert check(body(unsigned), []).error == (
            "messages.1.content.0: Invalid `signature` in `thinking` block."
        )

    def test_block_binding_without_the_beta_header_is_an_extra_input(self):
        done = check(body(host_transcript(), thinking=DROP), [("anthropic-beta", "other")])
        assert done.error == "thinking.adaptive.block_binding: Extra inputs are not permitted"


class TestDropBlock:
    def test_failing_blocks_are_dropped_and_listed(self):
        messages = host_transcript()
        del messages[1:3]  # a squash: the first exchange went
        messages[0]["content"].append({"type": "text", "text": "[summary]"})
        done = check(body(messages, thinking=DROP), BETA_HEADER)
        assert done.error is None
        assert done.dropped == ((1, 0), (3, 0))
        assert done.transformations == (
            {
                "type": "thinking_dropped",
                "path": "messages.1.content.0",
                "reason": "prefix_binding_mismatch",
            },
            {
                "type": "thinking_dropped",
                "path": "messages.3.content.0",
                "reason": "prefix_binding_mismatch",
            },
        )

    def test_thinking_written_after_the_edit_stays_valid_while_the_same_bytes_are_sent(self):
        messages = host_transcript()
        del messages[1:3]
        messages[0]["content"].append({"type": "text", "text": "[summary]"})
        request = body(messages, thinking=DROP)
        done = check(request, BETA_HEADER)
        answer: dict[str, Any] = {"role": "assistant", "content": []}
        answer["content"].append(answer_thinking(request, done, "Go on."))
        answer["content"].append({"type": "text", "text": "Done."})
        later = body([*messages, answer, user("Thanks.")], thinking=DROP)
        again = check(later, BETA_HEADER)
        assert again.dropped == ((1, 0), (3, 0))  # the stale ones, again; the new one holds

    def test_putting_back_a_block_left_out_fails_what_was_written_while_it_was_gone(self):
        messages = host_transcript()
        kept = messages[5]["content"][0]
        messages[5]["content"] = messages[5]["content"][1:]  # the last block left out: fine
        request = body(messages)
        done = check(request, [])
        assert done.error is None
        answer: dict[str, Any] = {"role": "assistant", "content": []}
        answer["content"].append(answer_thinking(request, done, "Next."))
        answer["content"].append({"type": "text", "text": "Done."})
        later = [*messages, answer, user("Thanks.")]
        assert check(body(later), []).error is None
        later[5]["content"].insert(0, kept)
        assert check(body(later), []).failing == ((7, 0),)


class TestOmitted:
    """`display: "omitted"`: the text is never shown, the signature carries the thinking."""

    OMITTED: ClassVar[dict[str, str]] = {"type": "adaptive", "display": "omitted"}

    def answered(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        messages = [user("Fix the race.")]
        request = body(messages, thinking=self.OMITTED)
        block = answer_thinking(request, check(request, []), "Look first.")
        call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
        answer = {"role": "assistant", "content": [block, call]}
        return [*messages, answer, result("t1", "a.py")], block

    def test_the_block_comes_empty_and_holds_when_sent_back_so(self):
        messages, block = self.answered()
        assert block["thinking"] == ""
        assert block["signature"]
        assert check(body(messages, thinking=self.OMITTED), []).error is None

    def test_text_a_client_puts_in_it_is_ignored(self):
        messages, _ = self.answered()
        messages[1]["content"][0]["thinking"] = "Made up."
        done = check(body(messages, thinking=self.OMITTED), [])
        assert done.error is None
        assert done.failing == ()

    def test_a_changed_signature_is_still_refused(self):
        messages, _ = self.answered()
        messages[1]["content"][0]["signature"] += "x"
        done = check(body(messages, thinking=self.OMITTED), [])
        assert done.error == "messages.1.content.0: Invalid `signature` in `thinking` block."

    def test_a_changed_prefix_still_fails(self):
        messages, _ = self.answered()
        messages[0] = user("Fix the lock.")
        assert check(body(messages, thinking=self.OMITTED), []).failing == ((1, 0),)
