"""The bench bills a prompt cache as the API documents it: entries only at breakpoints, found by
looking back at most 20 blocks from a breakpoint, writes up to the last breakpoint, plain input
after it."""

from __future__ import annotations

from typing import Any

from bench.prompt_cache import LOOKBACK, Billed, blocks_of
from bench.session import Counter
from bench.tokenizer import estimator

COUNTER = Counter(estimator(), lambda text: list(range(len(text))))  # a token per character


def block(text: str, marked: bool = False) -> tuple[str, bool]:
    return (text, marked)


def bill(*prompts: tuple[tuple[str, bool], ...]) -> list[tuple[int, int, int]]:
    """(read, written, plain) of each prompt, billed in turn."""
    billed = Billed(COUNTER)
    out = []
    for prompt in prompts:
        before = (billed.read, billed.written, billed.plain)
        billed.add(prompt)
        after = (billed.read, billed.written, billed.plain)
        out.append((after[0] - before[0], after[1] - before[1], after[2] - before[2]))
    return out


HEAD = block("h" * 10, marked=True)


class TestBilled:
    def test_a_growing_conversation_reads_what_the_last_call_wrote(self):
        first = (HEAD, block("aaaa", marked=True))
        second = (HEAD, block("aaaa"), block("bb"), block("ccc", marked=True))
        assert bill(first, second) == [(0, 14, 0), (14, 5, 0)]

    def test_a_change_far_back_is_written_again_from_the_last_entry_before_it(self):
        old = [block(f"{i:02d}") for i in range(30)]
        first = (HEAD, *old, block("new", marked=True))
        # Block 1 changed: the newest breakpoint finds no entry in its window; the head's own
        # breakpoint finds the head's: everything after the head is written again.
        changed = (HEAD, block("xx"), *old[1:], block("new"), block("more", marked=True))
        assert bill(first, changed)[1] == (10, 2 + 58 + 3 + 4, 0)
        unmarked = (block("h" * 10), *changed[1:])
        assert bill(first, unmarked)[1] == (0, 10 + 2 + 58 + 3 + 4, 0)

    def test_an_entry_within_the_lookback_is_found_and_not_beyond(self):
        first = (HEAD, block("a", marked=True))
        near = (HEAD, block("a"), *[block("x")] * (LOOKBACK - 2), block("y", marked=True))
        far = (HEAD, block("a"), *[block("x")] * (LOOKBACK - 1), block("y", marked=True))
        assert bill(first, near)[1][0] == 11  # the entry 19 blocks back: read
        assert bill(first, far)[1][0] == 10  # 20 back: out of the window, the head's is found

    def test_a_breakpoint_of_its_own_keeps_the_prefix_before_a_later_change(self):
        summary = block("summary", marked=True)
        first = (HEAD, summary, block("old" * 10), block("n", marked=True))
        later = (HEAD, block("summary"), block("s2", marked=True), block("n", marked=True))
        # Up to the entry the first call wrote at the summary; the rest written, none plain.
        assert bill(first, later)[1] == (10 + 7, 2 + 1, 0)

    def test_after_the_last_breakpoint_it_is_plain_input(self):
        prompt = (HEAD, block("aaaa"), block("bbbbb"))
        assert bill(prompt) == [(0, 10, 9)]
        assert bill((block("zz"),)) == [(0, 0, 2)]  # no breakpoint: nothing cached at all


def test_blocks_keep_each_block_and_its_breakpoint_apart():
    payload: dict[str, Any] = {
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "", "signature": "x"},
                    {"type": "text", "text": "t"},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": "r", "cache_control": {"type": "ephemeral"}}],
            },
        ],
    }
    found = blocks_of(payload, [(1, 0)], lambda value: value)
    # The head; the task (a string: one block); the answer's text, its framing with it (its
    # thinking was dropped); the result, marked. No block of framing alone.
    assert [marked for _, marked in found] == [True, False, False, True]
    assert found[2][0].startswith('{"role":"assistant"}{"type":"text"')
    assert '"signature"' not in "".join(text for text, _ in found)  # the dropped block is out
    # Automatic caching marks the last block, not the head; a null marker is none.
    payload["cache_control"] = {"type": "ephemeral"}
    payload["system"][0]["cache_control"] = None
    payload["messages"][2]["content"][0].pop("cache_control")
    auto = blocks_of(payload, [(1, 0)], lambda value: value)
    assert [marked for _, marked in auto] == [False, False, False, True]


def test_the_lookback_counts_blocks_not_messages_framing():
    """Fifteen one-block messages after the last entry: within the API's 20 blocks (a
    message's role is not a block of its own)."""

    def request(n: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": f"m{i}"}],
            }
            for i in range(n)
        ]
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        return {"model": "m", "messages": messages}

    def unmarked(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {k: v for k, v in value.items() if k != "cache_control"}

    billed = Billed(COUNTER)
    billed.add(blocks_of(request(5), (), unmarked))
    first = billed.written
    billed.add(blocks_of(request(20), (), unmarked))
    assert billed.read == first  # the first request's entry, 15 blocks back, was found
    billed.add(blocks_of(request(45), (), unmarked))
    assert billed.read == first  # 25 blocks back: out of the window (nothing read this time)
