"""The pure parts: spans found without re-serialising, squash placement, keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from frs.wire.matching import Unit, new_units, units_of
from frs.wire.requests import RewritePlan, Span, Splice, WireRequest, apply_splices
from frs.wire.rewriting import LiveSquash, plan_rewrite
from server.gateway.anthropic import WIRE
from server.gateway.spans import array_items, object_members
from tests.gateway.conversation import TASK, body, call, result, said, user


def planned(
    messages: list[dict[str, Any]],
    members_of: Callable[[list[Unit]], list[list[str]]],
    sent: dict[int, str] | None = None,
) -> tuple[str, WireRequest, list[Unit], RewritePlan]:
    text = body(messages).decode()
    request = WIRE.parse(text, {})
    units = units_of(request)
    squashes = [
        LiveSquash(n, f"SQ.{n}@0000000{n}", f"summary {n}", len(keys), frozenset(keys))
        for n, keys in enumerate(members_of(units), start=1)
    ]
    plan = plan_rewrite(request, units, squashes, sent or {})
    return text, request, units, plan


class TestSpans:
    def test_members_and_items_are_found_where_they_are(self):
        text = '{ "a" : [1, {"b": "\\u00e9"} ,3] ,"c":null}'
        members, whole = object_members(text, 0)
        assert whole == Span(0, len(text))
        assert [(m.key, text[m.span.start : m.span.end]) for m in members] == [
            ("a", '[1, {"b": "\\u00e9"} ,3]'),
            ("c", "null"),
        ]
        items, _ = array_items(text, members[0].span.start)
        assert [text[i.span.start : i.span.end] for i in items] == ["1", '{"b": "\\u00e9"}', "3"]

    @pytest.mark.parametrize("text", ['{"a" 1}', '{"a":1', '{"a":1 "b":2}', "", "[1]"])
    def test_what_is_not_a_json_object_raises_value_error(self, text):
        with pytest.raises(ValueError, match=r"expected|Expecting|Unterminated"):
            object_members(text, 0)

    @pytest.mark.parametrize("text", ["[1 2]", "[1,]", "{}"])
    def test_what_is_not_a_json_array_raises_value_error(self, text):
        with pytest.raises(ValueError, match=r"expected|Expecting"):
            array_items(text, 0)

    def test_overlapping_splices_are_refused(self):
        with pytest.raises(ValueError, match="overlap"):
            apply_splices("abcdef", [Splice(Span(0, 3), "x"), Splice(Span(2, 4), "y")])


class TestKeys:
    def test_cache_markers_do_not_change_a_key(self):
        first = units_of(WIRE.parse(body(TASK[:3]).decode(), {}))
        later = units_of(WIRE.parse(body(TASK[:5]).decode(), {}))
        assert [u.key for u in first] == [u.key for u in later[:3]]

    def test_a_repeated_message_gets_its_own_key(self):
        units = units_of(WIRE.parse(body([user("go"), said("ok"), user("go")]).decode(), {}))
        assert units[0].key != units[2].key
        assert units[2].key == units[0].key + "#2"

    def test_only_what_follows_the_last_stored_unit_is_new(self):
        units = units_of(WIRE.parse(body(TASK[:5]).decode(), {}))
        known = {units[0].key, units[2].key}
        assert [u.key for u in new_units(units, known)] == [u.key for u in units[3:]]


class TestPlacement:
    def test_an_assistant_first_user_last_span_joins_the_user_message_before_it(self):
        text, request, _, plan = planned(TASK[:9], lambda u: [[x.key for x in u[1:5]]])
        assert plan.applied == (1,)
        sent = json.loads(WIRE.render(text, request, plan))["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
        assert sent[0]["content"][-1]["text"].endswith("summary 1")

    def test_a_user_first_assistant_last_span_joins_the_user_message_after_it(self):
        messages = [user("a"), said("b"), user("c"), said("d"), user("e")]
        text, request, _, plan = planned(messages, lambda u: [[x.key for x in u[2:4]]])
        sent = json.loads(WIRE.render(text, request, plan))["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert sent[2]["content"][0]["text"].endswith("summary 1")
        assert sent[2]["content"][1]["text"] == "e"

    def test_adjacent_squashes_go_as_one(self):
        messages = [user("a"), said("b"), user("c"), said("d"), user("e"), said("f"), user("g")]
        text, request, _, plan = planned(
            messages, lambda u: [[u[1].key, u[2].key], [u[3].key, u[4].key]]
        )
        assert len(plan.replacements) == 1
        sent = json.loads(WIRE.render(text, request, plan))["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert [b["text"][-9:] for b in sent[0]["content"][1:]] == ["summary 1", "summary 2"]

    def test_a_squash_that_cuts_a_request_message_is_skipped(self):
        messages = [
            user("go"),
            call("toolu_1", "ls"),
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
                    {"type": "text", "text": "and also"},
                ],
            },
            said("ok"),
            user("next"),
        ]
        _, _, _, plan = planned(messages, lambda u: [[u[1].key, u[2].key]])
        assert plan.applied == ()
        assert plan.skipped == ((1, "it covers only part of a request message"),)

    def test_a_squash_whose_messages_are_not_all_sent_is_skipped(self):
        _, _, _, plan = planned(TASK[:5], lambda u: [[u[1].key, "u:gone"]])
        assert plan.skipped == ((1, "not all its messages are in this request"),)

    def test_a_squash_sent_before_keeps_its_mark(self):
        convo = [
            user("a"),
            call("toolu_1", "x", thinking="t1"),
            result("toolu_1", "r"),
            said("b", thinking="t2"),
            user("c"),
            said("d", thinking="t3"),
            user("e"),
        ]
        # Sent first when "c" was last: t2 (before the mark) goes, t3 (after it) stays.
        text, request, units, plan = planned(
            convo, lambda u: [[u[1].key, u[2].key]], sent={1: "u:placeholder"}
        )
        mark = next(u.key for u in units if u.message == 4)
        plan = plan_rewrite(
            request,
            units,
            [LiveSquash(1, "SQ.1@00000001", "s", 2, frozenset({units[1].key, units[2].key}))],
            {1: mark},
        )
        sent = json.loads(WIRE.render(text, request, plan))["messages"]
        kinds = [[b["type"] for b in m["content"]] for m in sent]
        assert kinds[1] == ["text"]  # t2 went
        assert kinds[3] == ["thinking", "text"]  # t3 stayed, signature and all
        assert (
            sent[3]["content"][0]["signature"]
            == json.loads(text)["messages"][5]["content"][0]["signature"]
        )


class TestHostMessages:
    def test_a_summary_joins_the_nearest_user_message_past_a_system_message(self):
        system = {"role": "system", "content": "Be brief."}
        messages = [user("task"), system, *TASK[1:5], said("ok"), user("next")]
        text, request, _, plan = planned(messages, lambda u: [[x.key for x in u[1:5]]])
        assert plan.applied == (1,)
        sent = json.loads(WIRE.render(text, request, plan))["messages"]
        assert [m["role"] for m in sent] == ["user", "system", "assistant", "user"]
        assert sent[0]["content"][-1]["text"].endswith("summary 1")
        assert sent[1] == system

    def test_a_squash_over_a_system_message_is_skipped(self):
        system = {"role": "system", "content": "Be brief."}
        messages = [user("a"), said("b"), system, user("c"), said("d"), user("e")]
        _, _, _, plan = planned(messages, lambda u: [[u[1].key, u[2].key]])
        assert plan.skipped == ((1, "it would take a system message with it"),)

    def test_a_squash_over_a_compaction_block_is_skipped(self):
        compacted = {
            "role": "assistant",
            "content": [
                {"type": "compaction", "content": "earlier turns"},
                {"type": "text", "text": "b"},
            ],
        }
        messages = [user("a"), compacted, user("c"), said("d"), user("e")]
        _, _, _, plan = planned(messages, lambda u: [[u[1].key, u[2].key]])
        assert plan.skipped == ((1, "it would take a compaction block with it"),)


class TestReuse:
    def test_a_request_read_after_another_takes_over_the_messages_they_share(self):
        from frs.wire.requests import Parsed, reused

        first_text = body(TASK[:5]).decode()
        first = WIRE.parse(first_text, {})
        first_units = units_of(first)
        second_text = body(TASK[:7]).decode()
        again = WIRE.parse(second_text, {}, Parsed(first_text, first, tuple(first_units)))
        fresh = WIRE.parse(second_text, {})
        # The messages before the last one of the first request (whose cache marker moved)
        # are the same objects; everything read equals a fresh read.
        assert reused(again, first) == 4
        assert again == fresh
        kept = units_of(again, first_units, reused(again, first))
        assert kept == units_of(fresh)

    def test_a_body_that_differs_early_is_read_afresh(self):
        from frs.wire.requests import Parsed, reused

        first_text = body(TASK[:5]).decode()
        first = WIRE.parse(first_text, {})
        changed = body([user("another task"), *TASK[1:7]]).decode()
        again = WIRE.parse(changed, {}, Parsed(first_text, first, ()))
        assert reused(again, first) == 0
        assert again == WIRE.parse(changed, {})
