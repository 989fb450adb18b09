"""Cards and paging (issue 4), spoken through an in-process MCP client.

A message longer than the preview cap is shown as a card: its size, its alias `M.<number>@sha8`,
a head and a tail, with the omitted middle counted. `get_alias` returns the full text a page at
a time, each page saying what remains and the exact call for the next one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client

from tests.bpe import ENCODINGS, counter
from tests.calls import call_text, refused, sha8
from tests.conftest import Connect

NEXT_PAGE = re.compile(r"^… (?P<left>[\d,]+) more chars: get_alias\((?P<arguments>.*)\)$")
ARGUMENT = re.compile(r'(\w+)=("[^"]*"|\d+)')
PAGE_HEADING = re.compile(r" · chars (?P<start>[\d,]+)–(?P<end>[\d,]+) of (?P<size>[\d,]+)$")
DEFAULT_PAGE_CHARS = 20_000
HOST_TOOL_OUTPUT_TOKENS = 25_000  # Claude Code's cap on one tool result


async def record(client: Client, *messages: dict[str, Any]) -> None:
    await call_text(client, "frs_record", messages=list(messages))


def entry_lines(view: str, position: int) -> list[str]:
    """The lines of the entry at `position`: its `[n]` line and its indented continuation."""
    lines = view.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"[{position}] "))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return lines[start:end]


def unindent(lines: list[str]) -> list[str]:
    assert all(line.startswith("    ") for line in lines), lines
    return [line[4:] for line in lines]


def log_text(count: int) -> str:
    return "\n".join(
        f"step {i:03d}: compiled module_{i} in {i % 7}.{i % 10}s" for i in range(count)
    )


def next_call(following: re.Match[str]) -> dict[str, Any]:
    """The arguments of the next-page call a page names, exactly as written."""
    pairs = ARGUMENT.findall(following.group("arguments"))
    assert ", ".join(f"{k}={v}" for k, v in pairs) == following.group("arguments")
    return {k: v.strip('"') if v.startswith('"') else int(v) for k, v in pairs}


def page_parts(page: str) -> tuple[str, str, re.Match[str] | None]:
    """A get_alias page split into its heading, its text and its next-call line (if any)."""
    heading, _, rest = page.partition("\n")
    last = rest.rsplit("\n", 1)
    following = NEXT_PAGE.match(last[-1]) if len(last) == 2 else None
    return heading, (last[0] if following else rest), following


class TestCards:
    async def test_a_long_message_is_a_card_with_size_alias_head_tail_and_the_middle_counted(
        self, connect: Connect
    ) -> None:
        content = log_text(300) + "\nFAILED tests/test_sync.py::test_sync - AssertionError"
        async with connect() as client:
            await record(client, {"role": "user", "content": "build it"})
            await record(client, {"role": "tool", "name": "bash", "content": content})
            view = await call_text(client, "frs_view_thread")
        first, *rest = entry_lines(view, 2)
        assert first == f"[2] Tool bash: {len(content):,} chars · M.2@{sha8(content)}"
        shown = unindent(rest)
        (middle_at,) = [
            i for i, line in enumerate(shown) if re.fullmatch(r"… [\d,]+ lines …", line)
        ]
        head, tail = shown[:middle_at], shown[middle_at + 1 :]
        omitted = int(shown[middle_at].split()[1].replace(",", ""))
        lines = content.split("\n")
        assert head
        assert tail
        assert head == lines[: len(head)]
        assert tail == lines[-len(tail) :]
        assert tail[-1].startswith("FAILED"), "the end of a log is where the failure is"
        assert len(head) + omitted + len(tail) == len(lines)

    async def test_the_card_alias_expands_to_exactly_the_hidden_text(
        self, connect: Connect
    ) -> None:
        content = log_text(400)
        async with connect() as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            view = await call_text(client, "frs_view_thread")
            alias = re.search(r"M\.1@[0-9a-f]{8}", view)
            assert alias is not None, view
            page = await call_text(client, "get_alias", alias=alias.group())
        heading, text, following = page_parts(page)
        assert text == content
        assert following is None
        assert heading.startswith(f"M.1@{sha8(content)} · Tool")
        assert heading.endswith(f" · chars 0–{len(content):,} of {len(content):,}")

    async def test_a_message_at_the_cap_is_whole_and_one_char_more_makes_a_card(
        self, connect: Connect
    ) -> None:
        at_cap, over = "a" * 200, "b" * 201
        async with connect() as client:
            await record(client, {"role": "user", "content": at_cap})
            await record(client, {"role": "user", "content": over})
            view = await call_text(client, "frs_view_thread", preview_chars=200)
        assert entry_lines(view, 1) == [f"[1] User: {at_cap}"]
        first, *rest = entry_lines(view, 2)
        assert first == f"[2] User: 201 chars · M.2@{sha8(over)}"
        assert rest, "a card shows a head and a tail"

    async def test_a_single_long_line_is_cut_in_the_middle_with_the_chars_counted(
        self, connect: Connect
    ) -> None:
        content = "HEAD-" + "x" * 5_000 + "-TAIL"
        async with connect() as client:
            await record(client, {"role": "assistant", "content": content})
            view = await call_text(client, "frs_view_thread")
        first, *rest = entry_lines(view, 1)
        assert first == f"[1] Assistant: {len(content):,} chars · M.1@{sha8(content)}"
        head, middle, tail = unindent(rest)
        assert head.startswith("HEAD-")
        assert head.endswith("…")
        assert tail.startswith("…")
        assert tail.endswith("-TAIL")
        counted = re.fullmatch(r"… ([\d,]+) chars …", middle)
        assert counted is not None, middle
        omitted = int(counted.group(1).replace(",", ""))
        assert len(head) - 1 + omitted + len(tail) - 1 == len(content)

    async def test_a_short_message_is_shown_whole_without_an_alias(self, connect: Connect) -> None:
        content = "first line\nsecond line\nthird line"
        async with connect() as client:
            await record(client, {"role": "user", "content": content})
            view = await call_text(client, "frs_view_thread")
        assert entry_lines(view, 1) == [
            "[1] User: first line",
            "    second line",
            "    third line",
        ]
        assert "M.1@" not in view


class TestJsonPreviews:
    async def test_a_json_tool_result_is_minified_in_the_view(self, connect: Connect) -> None:
        data = {"reservation": "ZFA04Y", "passengers": [{"name": "Ada", "seat": "12A"}] * 20}
        pretty = json.dumps(data, indent=4)
        minified = json.dumps(data, separators=(",", ":"))
        assert len(pretty) > 1_200 >= len(minified)
        async with connect() as client:
            await record(client, {"role": "tool", "name": "get_reservation", "content": pretty})
            view = await call_text(client, "frs_view_thread")
            page = await call_text(client, "get_alias", alias="M.1")
        assert entry_lines(view, 1) == [f"[1] Tool get_reservation: {minified}"]
        assert page_parts(page)[1] == pretty, "get_alias returns the text as it was recorded"

    async def test_a_json_tool_result_over_the_cap_is_a_card_of_its_minified_form(
        self, connect: Connect
    ) -> None:
        data = {"rows": [{"id": i, "value": f"v{i}"} for i in range(400)]}
        pretty = json.dumps(data, indent=2)
        minified = json.dumps(data, separators=(",", ":"))
        async with connect() as client:
            await record(client, {"role": "tool", "name": "query", "content": pretty})
            view = await call_text(client, "frs_view_thread")
        first, *rest = entry_lines(view, 1)
        assert first == f"[1] Tool query: {len(pretty):,} chars · M.1@{sha8(pretty)}"
        head, middle, tail = unindent(rest)
        assert head.startswith('{"rows":[{"id":0,"value":"v0"},')
        assert minified.startswith(head.rstrip("…"))
        assert minified.endswith(tail.lstrip("…"))
        assert re.fullmatch(r"… [\d,]+ chars …", middle)

    async def test_text_that_only_looks_like_json_is_left_as_it_is(self, connect: Connect) -> None:
        content = "{not json at all,\n  just braces}"
        async with connect() as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            view = await call_text(client, "frs_view_thread")
        assert entry_lines(view, 1) == ["[1] Tool bash: {not json at all,", "      just braces}"]


class TestToolCallArguments:
    """In real coding transcripts a quarter of all text is call arguments (whole files)."""

    @staticmethod
    def write_call(content: str) -> dict[str, Any]:
        arguments = {"file_path": "src/app.py", "content": content}
        return {
            "role": "assistant",
            "content": "Writing the module.",
            "tool_calls": [{"id": "w1", "name": "Write", "arguments": arguments}],
        }

    @staticmethod
    def file_text() -> str:
        middle = "\n".join(f"    value_{i} = compute({i})" for i in range(300))
        return f"FIRST_LINE = 'top of the file'\n{middle}\nLAST_LINE = 'end of the file'\n"

    async def test_arguments_over_the_cap_show_their_size_and_the_message_alias(
        self, connect: Connect
    ) -> None:
        message = self.write_call(self.file_text())
        arguments = json.dumps(message["tool_calls"][0]["arguments"], ensure_ascii=False)
        body = f"Writing the module.\n[tool_use:Write id=w1]\n{arguments}"
        async with connect() as client:
            await record(client, message)
            view = await call_text(client, "frs_view_thread")
            page = await call_text(client, "get_alias", alias=f"M.1@{sha8(body)}")
        first, note, *preview = entry_lines(view, 1)
        assert first == "[1] Assistant: Writing the module."
        assert preview, "the arguments get a card under the note"
        assert all(line.startswith("        ") for line in preview)
        assert note == (
            f"    [tool_use:Write, file_path:src/app.py, {len(arguments):,} chars · "
            f"M.1@{sha8(body)}]"
        )
        assert len(view) < len(arguments), "the view does not carry the file"
        assert page_parts(page)[1] == body, "get_alias returns the call's arguments in full"

    async def test_arguments_over_the_cap_show_a_head_and_a_tail_with_the_middle_counted(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, self.write_call(self.file_text()))
            view = await call_text(client, "frs_view_thread")
        shown = "\n".join(entry_lines(view, 1))
        assert "FIRST_LINE" in shown
        assert "LAST_LINE" in shown
        assert re.search(r"… [\d,]+ (lines|chars) …", shown)

    async def test_arguments_under_the_cap_are_annotated_without_an_alias(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, self.write_call("x = 1\n"))
            view = await call_text(client, "frs_view_thread")
        assert entry_lines(view, 1) == [
            "[1] Assistant: Writing the module.",
            "    [tool_use:Write, file_path:src/app.py]",
        ]


class TestPreviewCap:
    async def test_the_view_argument_sets_the_cap_for_that_view_only(
        self, connect: Connect
    ) -> None:
        content = log_text(25)  # about 800 characters
        assert 300 < len(content) < 1_200
        async with connect() as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            narrow = await call_text(client, "frs_view_thread", preview_chars=300)
            default = await call_text(client, "frs_view_thread")
        assert (
            entry_lines(narrow, 1)[0]
            == f"[1] Tool bash: {len(content):,} chars · M.1@{sha8(content)}"
        )
        assert unindent(entry_lines(default, 1)[1:]) == content.split("\n")[1:]

    async def test_the_server_option_sets_the_default_cap_and_the_argument_overrides_it(
        self, connect: Connect
    ) -> None:
        content = log_text(25)
        async with connect(preview_chars=300) as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            default = await call_text(client, "frs_view_thread")
            wide = await call_text(client, "frs_view_thread", preview_chars=2_000)
        assert (
            entry_lines(default, 1)[0]
            == f"[1] Tool bash: {len(content):,} chars · M.1@{sha8(content)}"
        )
        assert len(entry_lines(default, 1)) < 25
        assert entry_lines(wide, 1)[0] == "[1] Tool bash: " + content.split("\n")[0]
        assert len(entry_lines(wide, 1)) == 25

    @pytest.mark.parametrize("preview_chars", [0, 199, 100_001])
    async def test_a_cap_outside_200_to_100000_is_refused(
        self, connect: Connect, preview_chars: int
    ) -> None:
        async with connect() as client:
            await record(client, {"role": "user", "content": "hello"})
            error = await refused(client, "frs_view_thread", preview_chars=preview_chars)
        assert "preview_chars" in error


class TestPaging:
    async def test_each_page_says_what_remains_and_the_next_call_reassembles_the_text(
        self, connect: Connect
    ) -> None:
        content = log_text(1_500)  # about 50,000 characters
        pages: list[str] = []
        async with connect() as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            arguments: dict[str, Any] = {"alias": "M.1", "max_chars": 7_000}
            while True:
                page = await call_text(client, "get_alias", **arguments)
                heading, text, following = page_parts(page)
                pages.append(text)
                span = PAGE_HEADING.search(heading)
                assert span is not None, heading
                end = int(span.group("end").replace(",", ""))
                assert int(span.group("size").replace(",", "")) == len(content)
                if following is None:
                    assert end == len(content)
                    break
                assert int(following.group("left").replace(",", "")) == len(content) - end
                arguments = next_call(following)
                assert arguments["alias"] == "M.1"
                assert arguments["offset"] == end
        assert "".join(pages) == content
        assert len(pages) == -(-len(content) // 7_000)
        assert all(len(text) == 7_000 for text in pages[:-1])

    async def test_default_pages_never_exceed_20000_chars(self, connect: Connect) -> None:
        # Four-byte characters are the worst case for a host's token cap.
        content = "\n".join("🙂 " * 30 + f"line {i}" for i in range(1_200))
        assert len(content) > 2 * DEFAULT_PAGE_CHARS
        async with connect() as client:
            await record(client, {"role": "user", "content": content})
            first = await call_text(client, "get_alias", alias="M.1")
            _, text, following = page_parts(first)
            assert following is not None
            second = await call_text(client, "get_alias", **next_call(following))
        assert len(text) == DEFAULT_PAGE_CHARS
        assert len(page_parts(second)[1]) == DEFAULT_PAGE_CHARS
        for page in (first, second):
            assert len(page) <= DEFAULT_PAGE_CHARS + 200, "heading and next call stay short"
            # Counted by real BPE: the estimator prices every emoji as the rarest cost (three
            # cl100k_base tokens), so it puts this page at ~35k, where 🙂 is one token.
            for encoding in ENCODINGS:
                assert counter(encoding)(page) < HOST_TOOL_OUTPUT_TOKENS

    async def test_an_offset_past_the_end_is_refused_with_the_size(self, connect: Connect) -> None:
        content = log_text(100)
        async with connect() as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            error = await refused(client, "get_alias", alias="M.1", offset=len(content) + 1)
            last = await call_text(client, "get_alias", alias="M.1", offset=len(content) - 5)
        assert f"{len(content):,} characters" in error
        assert "past the end" in error
        assert page_parts(last)[1] == content[-5:]

    async def test_a_wrong_sha8_is_refused_and_names_the_right_one(self, connect: Connect) -> None:
        content = log_text(100)
        async with connect() as client:
            await record(client, {"role": "tool", "name": "bash", "content": content})
            error = await refused(client, "get_alias", alias="M.1@00000000")
        assert f"M.1@{sha8(content)}" in error
