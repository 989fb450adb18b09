"""Issue 11 through an MCP client: no invented times, layers that always close, several ranges
squashed in one call, and the small texts that must agree with what the model sees."""

from __future__ import annotations

import re
from typing import Any

from mcp import Client

from tests.calls import call, call_text, footer, refused, text_of, user, view
from tests.conftest import Connect


def said(content: str, at: str | None = None, role: str = "user") -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    if at is not None:
        message["created_at"] = at
    return message


async def record(client: Client, *messages: dict[str, Any]) -> dict[str, Any]:
    result = await call(client, "frs_record", messages=list(messages))
    assert result.structured_content is not None
    return dict(result.structured_content)


async def current_revision(client: Client) -> int:
    found = re.search(r"revision (\d+)", await call_text(client, "frs_session", action="info"))
    assert found
    return int(found[1])


class TestTimes:
    async def test_a_message_recorded_without_a_time_shows_none(self, connect: Connect) -> None:
        async with connect() as client:
            await record(
                client,
                said("dated", "2024-08-05T19:33:00Z"),
                said("undated"),
                said("dated again", "2024-08-05T19:40:00Z"),
            )
            stamped = await view(client, show_times=True)
        assert "[1] [2024-08-05 19:33] User: dated" in stamped
        assert "\n[2] User: undated\n" in stamped
        assert "[3] [2024-08-05 19:40] User: dated again" in stamped
        assert "2026" not in stamped.split("\n· ")[0], "no time of recording was invented"

    async def test_a_summary_is_stamped_by_the_span_it_replaced(self, connect: Connect) -> None:
        async with connect() as client:
            await record(
                client,
                said("first " * 10, "2024-08-05T19:33:00Z"),
                said("second " * 10, "2024-08-05T19:35:00Z"),
                said("later", "2024-08-06T08:00:00Z"),
            )
            await call(client, "frs_compress_range", **{"from": 1, "to": 2}, summary="both")
            stamped = await view(client, show_times=True, roles=["summary", "user"])
        assert re.search(r"^\[1\] \[2024-08-05 19:33\] Summary of 2 messages", stamped, re.M)


class TestClosingALayer:
    async def test_a_layer_smaller_than_its_summary_still_closes(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, said("task"))
            await call(client, "frs_focus", action="open", goal="a small detour")
            await record(client, said("ok"))
            closed = await call_text(client, "frs_focus", action="close", summary="tiny layer done")
            shown = await view(client)
        assert closed.startswith("Closed focus layer 1 ('a small detour'). Squashed ")
        assert "\n[2] Summary of 1 message (SQ.1@" in shown

    async def test_a_long_summary_is_refused_with_the_rule_that_applies(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, said("task"))
            await call(client, "frs_focus", action="open", goal="a small detour")
            await record(client, said("ok"))
            before = await view(client)
            error = await refused(client, "frs_focus", action="close", summary="word " * 80)
            after = await view(client)
        assert "is not smaller than what it would replace" in error
        assert error.endswith("closing a layer takes any summary of up to 64 tokens.")
        assert "longer range" not in error
        assert after == before

    async def test_squashing_the_last_entries_names_a_larger_count(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, said("ok"), said("no"))
            error = await refused(client, "frs_compress_last", count=1, summary="word " * 20)
        assert error.endswith("Write a shorter summary, or squash a larger count.")


class TestSeveralRanges:
    @staticmethod
    def thread() -> list[dict[str, Any]]:
        return [said(f"message {n} " + "detail " * 12) for n in range(1, 11)]

    async def test_ranges_named_in_one_view_are_squashed_in_one_revision(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *self.thread())
            revision = await current_revision(client)
            result = await call(
                client,
                "frs_compress_range",
                ranges=[
                    {"from": 2, "to": 3, "summary": "two and three"},
                    {"from": 6, "to": 9, "summary": "six to nine"},
                ],
                expected_revision=revision,
            )
            shown = await view(client)
        data = result.structured_content
        assert data is not None
        assert data["revision"] == revision + 1
        assert [s["position"] for s in data["squashes"]] == [2, 5]
        entries = [line for line in shown.split("\n") if line.startswith("[")]
        assert [line.split("]")[0] + "]" for line in entries] == [f"[{n}]" for n in range(1, 7)]
        assert entries[1].startswith("[2] Summary of 2 messages (SQ.1@")
        assert entries[4].startswith("[5] Summary of 4 messages (SQ.2@")
        assert "revision" in footer(shown)

    async def test_overlapping_or_bad_ranges_change_nothing(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, *self.thread())
            before = await view(client)
            overlap = await refused(
                client,
                "frs_compress_range",
                ranges=[
                    {"from": 2, "to": 5, "summary": "a"},
                    {"from": 5, "to": 7, "summary": "b"},
                ],
            )
            out_of_range = await refused(
                client,
                "frs_compress_range",
                ranges=[
                    {"from": 2, "to": 3, "summary": "a"},
                    {"from": 9, "to": 12, "summary": "b"},
                ],
            )
            after = await view(client)
        assert "ranges[0] (2..5) and ranges[1] (5..7) overlap" in overlap
        assert "outside the thread" in out_of_range
        assert after == before

    async def test_the_distill_prompt_asks_for_one_call_with_ranges(self, connect: Connect) -> None:
        async with connect() as client:
            prompt = await client.get_prompt("frs_distill", {})
        text = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "frs_compress_range(ranges=[{from, to, summary}, ...]" in text
        assert "pass the revision its answer gave" in text


class TestTextsThatAgree:
    async def test_an_unknown_message_alias_counts_summaries_like_the_footer(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, *(said("word " * 10) for _ in range(4)))
            await call(client, "frs_compress_range", **{"from": 1, "to": 2}, summary="a")
            error = await refused(client, "get_alias", alias="M.99")
            shown = await view(client)
        assert footer(shown).startswith("· 4 messages in 3 entries")
        assert "run from M.1 to M.5 (4 recorded messages and 1 summary)" in error

    async def test_a_stale_revision_lists_the_newest_changes_and_counts_the_rest(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            for n in range(15):
                await record(client, said(f"m{n}"))
            error = await refused(
                client, "frs_compress_last", count=1, summary="s", expected_revision=2
            )
        assert "you expected revision 2, the session is at revision 15" in error
        assert "(since then: 3 earlier changes, then revision 6: recorded 1 message;" in error
        assert "revision 15: recorded 1 message)" in error

    async def test_an_empty_checkpoint_is_refused_and_changes_nothing(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await record(client, said("x"))
            before = await current_revision(client)
            error = await refused(client, "frs_plan", checkpoint="")
            after = await current_revision(client)
        assert "checkpoint is empty" in error
        assert after == before

    async def test_info_on_an_empty_database_creates_no_session(self, connect: Connect) -> None:
        async with connect() as client:
            info = await call(client, "frs_session", action="info")
            listed = await call_text(client, "frs_session", action="list")
        assert text_of(info).startswith("No session yet in scope mcp.")
        assert info.structured_content is not None
        assert info.structured_content["session_id"] is None
        assert listed.startswith("No sessions yet.")

    async def test_a_one_message_squash_reads_summary_of_1_message(self, connect: Connect) -> None:
        async with connect() as client:
            await record(client, *(user(f"{n} " + "word " * 30) for n in range(300)))
            await call(client, "frs_compress_range", **{"from": 285, "to": 285}, summary="one")
            budgeted = await view(client, budget_tokens=4_000)
            whole = await view(client, **{"from": 284, "to": 286})
        # On its own, or in a group line (issue 22: the band fills the view below the heads).
        shown = re.search(r"\n\[285\] Summary of 1 message \(SQ\.1[@)]|, summary\b", budgeted)
        assert shown is not None, budgeted
        assert "Summary of 1 messages" not in budgeted + whole
        assert "[285] Summary of 1 message (SQ.1@" in whole
