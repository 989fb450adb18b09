"""A squash never takes away the exchange that loaded the host's deferred tools: Claude Code's
ToolSearch call and its `tool_reference` result (Anthropic), Codex's `tool_search_call` and
its `tool_search_output` (Responses). The pair stays in place, byte for byte; the rest of the
squashed span goes and the summary, naming its alias, is still sent; every request stays valid
(the tests' upstream checks each, with the rule that a deferred tool is called only once
loaded)."""

from __future__ import annotations

import json
from typing import Any

from frs import squashes
from frs.wire.matching import units_of
from frs.wire.nudges import candidates
from frs.wire.rewriting import LiveSquash, plan_rewrite
from server.gateway import responses
from server.gateway.anthropic import WIRE
from server.gateway.anthropic_rules import problems
from tests.gateway import openai_conversation as oc
from tests.gateway.conversation import SESSION, call, result, said, user
from tests.gateway.harness import rig
from tests.gateway.test_openai import AUTH, RESPONSES_PATH, sent_input
from tests.gateway.test_openai import client_env as openai_env
from tests.gateway.test_openai import session_of as openai_session_of
from tests.gateway.test_squashes import client_env, sent_messages, session_of

FRS = ("mcp__frs__get_alias", "mcp__frs__frs_restore")
#: Claude Code's tools with tool search on: ToolSearch, and the MCP tools deferred.
TOOLS = [
    {"name": "Bash", "description": "run", "input_schema": {"type": "object"}},
    {"name": "ToolSearch", "description": "load tools", "input_schema": {"type": "object"}},
    *(
        {
            "name": tool,
            "description": "frs",
            "input_schema": {"type": "object"},
            "defer_loading": True,
        }
        for tool in FRS
    ),
]
SUMMARY = "Loaded the frs tools; the race is in Syncer.flush."


def tool_search(call_id: str) -> dict[str, Any]:
    query = {"query": "select:" + ",".join(FRS)}
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": "ToolSearch", "input": query}],
    }


def loaded(call_id: str) -> dict[str, Any]:
    """Claude Code 2.1's ToolSearch result: tool_reference blocks, then its note."""
    references = [{"type": "tool_reference", "tool_name": tool} for tool in FRS]
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": references},
            {"type": "text", "text": "Tool loaded."},
        ],
    }


def frs_call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": tool, "input": arguments}
    return {"role": "assistant", "content": [block]}


MESSAGES = [
    user("The test test_sync fails one run in five."),
    tool_search("toolu_s"),
    loaded("toolu_s"),
    call("toolu_1", "pytest -k test_sync --count 20"),
    result("toolu_1", "FAILED tests/test_sync.py::test_sync - AssertionError: 3 != 4\n" * 40),
    said("The race is in Syncer.flush."),
    user("Add the lock."),
    frs_call("toolu_g", "mcp__frs__get_alias", alias="SQ.1"),
    result("toolu_g", "the originals"),
    frs_call("toolu_r", "mcp__frs__frs_restore", alias="SQ.1"),
    result("toolu_r", "restored"),
]


def claude_body(messages: list[dict[str, Any]]) -> bytes:
    payload = {"model": "claude-test", "max_tokens": 1000, "tools": TOOLS, "messages": messages}
    return json.dumps(payload).encode()


class TestAnthropic:
    async def test_a_squash_keeps_the_tool_search_exchange_and_sends_its_summary(self, tmp_path):
        async with rig(tmp_path) as r:
            for n in (1, 3, 6, 7):
                await r.post(claude_body(MESSAGES[:n]), SESSION)
            session = await session_of(r)
            # 2 ToolSearch call, 3 its result, 4 "Tool loaded.", 5-6 the test run, 7 the answer.
            done = await squashes.compress_range(
                client_env(r), 2, 7, SUMMARY, session_id=session.id
            )
            for n in (9, 11):
                await r.post(claude_body(MESSAGES[:n]), SESSION)
                sent = sent_messages(r)
                # The exchange that loaded the frs tools is sent as the host sent it, in place.
                assert sent[:3] == MESSAGES[:3]
                # The rest of the span went; one assistant message holds the summary.
                assert "AssertionError" not in json.dumps(sent)
                assert sent[3]["role"] == "assistant"
                summary = sent[3]["content"][0]["text"]
                assert SUMMARY in summary
                assert f"FRS squash {done.squash.alias}" in summary
                assert "load tools stay where they were" in summary
                assert sent[4:] == MESSAGES[6:n]
                # The model can still call the frs tools: they are loaded before each call.
                assert problems(r.upstream.seen[-1].json()) == []

    async def test_a_squash_of_the_tool_search_exchange_alone_still_sends_its_summary(
        self, tmp_path
    ):
        async with rig(tmp_path) as r:
            for n in (1, 3, 6, 7):
                await r.post(claude_body(MESSAGES[:n]), SESSION)
            session = await session_of(r)
            await squashes.compress_range(
                client_env(r), 2, 4, "Loaded get_alias.", session_id=session.id
            )
            await r.post(claude_body(MESSAGES[:9]), SESSION)
            sent = sent_messages(r)
            # Nothing could go: the exchange stays and the summary follows its result.
            assert sent[:2] == MESSAGES[:2]
            assert sent[2]["content"][:2] == MESSAGES[2]["content"]
            assert "Loaded get_alias." in sent[2]["content"][2]["text"]
            assert sent[3:] == MESSAGES[3:9]

    def test_the_validator_refuses_a_deferred_tool_called_before_it_is_loaded(self):
        messages = [MESSAGES[0], *MESSAGES[7:9]]
        payload = {"model": "m", "tools": TOOLS, "messages": messages}
        assert problems(payload) == [
            "messages[1].content[0] calls deferred tool mcp__frs__get_alias, which no "
            "tool_reference before it loads"
        ]
        assert problems({**payload, "messages": MESSAGES[:9]}) == []


#: Codex's tool_search: the output carries the namespace with the MCP tools' definitions,
#: defined nowhere else in the request.
NAMESPACE = {
    "type": "namespace",
    "name": "mcp__frs",
    "description": "FRS",
    "tools": [
        {"type": "function", "name": tool.removeprefix("mcp__frs__"), "parameters": {}}
        for tool in FRS
    ],
}
SEARCH = {
    "type": "tool_search_call",
    "call_id": "call_s",
    "execution": "client",
    "arguments": {"query": "squash", "limit": 8},
}
FOUND = {"type": "tool_search_output", "call_id": "call_s", "execution": "client"}


def frs_item(call_id: str, tool: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "name": tool,
        "namespace": "mcp__frs",
        "arguments": json.dumps({"alias": "SQ.1"}),
        "call_id": call_id,
    }


ITEMS = [
    oc.developer("<permissions instructions>sandboxed</permissions instructions>"),
    oc.user("The test test_sync fails one run in five."),
    SEARCH,
    {**FOUND, "tools": [NAMESPACE]},
    oc.call("call_1", "pytest -k test_sync --count 20"),
    oc.output("call_1", "FAILED tests/test_sync.py::test_sync - AssertionError: 3 != 4\n" * 40),
    oc.said("The race is in Syncer.flush."),
    oc.user("Add the lock."),
    frs_item("call_g", "get_alias"),
    oc.output("call_g", "the originals"),
    frs_item("call_r", "frs_restore"),
    oc.output("call_r", "restored"),
]


class TestResponses:
    async def test_a_squash_keeps_the_tool_search_exchange_and_sends_its_summary(self, tmp_path):
        async with rig(tmp_path) as r:
            for n in (2, 4, 7, 8):
                await r.post(oc.body(ITEMS[:n]), [*AUTH, *oc.SESSION], RESPONSES_PATH)
            session = await openai_session_of(r)
            # 2 tool_search_call, 3 its output, 4-5 the test run, 6 the answer.
            done = await squashes.compress_range(
                openai_env(r), 2, 6, SUMMARY, session_id=session.id
            )
            for n in (10, 12):
                await r.post(oc.body(ITEMS[:n]), [*AUTH, *oc.SESSION], RESPONSES_PATH)
                sent = sent_input(r)
                # The tool search and its output (the frs tools' definitions) are sent as
                # Codex sent them, in place.
                assert sent[:4] == ITEMS[:4]
                assert "AssertionError" not in json.dumps(sent)
                assert sent[4]["role"] == "assistant"
                summary = sent[4]["content"][0]["text"]
                assert SUMMARY in summary
                assert f"FRS squash {done.squash.alias}" in summary
                assert sent[5:] == ITEMS[7:n]
                assert responses.WIRE.problems(r.upstream.seen[-1].json()) == []

    def test_the_validator_refuses_a_namespaced_call_no_tool_search_defined(self):
        payload = json.loads(oc.body([ITEMS[1], *ITEMS[7:10]]))
        assert responses.WIRE.problems(payload) == [
            "input[2] calls mcp__frs, which no tool and no tool_search_output before it defines"
        ]
        assert responses.WIRE.problems(json.loads(oc.body(ITEMS[:10]))) == []


class TestPlacement:
    def test_a_pin_inside_a_span_splits_it_and_the_summary_goes_once(self):
        searched = tool_search("toolu_s")
        searched["content"].insert(0, {"type": "thinking", "thinking": "t", "signature": "s"})
        messages = [
            user("go"),
            call("toolu_1", "pytest"),
            result("toolu_1", "FAILED"),
            searched,
            loaded("toolu_s"),
            call("toolu_2", "grep flush"),
            result("toolu_2", "12: def flush"),
            said("The race is in flush."),
            user("Add the lock."),
            frs_call("toolu_g", "mcp__frs__get_alias", alias="SQ.1"),
            result("toolu_g", "the originals"),
            said("Read them."),
            user("again"),
        ]
        text = claude_body(messages).decode()
        request = WIRE.parse(text, {})
        units = units_of(request)
        members = frozenset(u.key for u in units if 1 <= u.message <= 7)
        squash = LiveSquash(1, "SQ.1@00000001", "summary 1", len(members), frozenset(members))
        plan = plan_rewrite(request, units, [squash], {})
        assert plan.applied == (1,)
        sent = json.loads(WIRE.render(text, request, plan))
        assert problems(sent) == []
        out = sent["messages"]
        # The summary joins the user message before the span; the pinned exchange follows,
        # its thinking left out (the prefix its signature binds to changed); the rest of the
        # span is one assistant message that points at the summary.
        assert [m["role"] for m in out[:5]] == ["user", "assistant", "user", "assistant", "user"]
        assert "summary 1" in out[0]["content"][-1]["text"]
        assert out[1]["content"] == searched["content"][1:]
        assert out[2] == messages[4]
        assert out[3]["content"][0]["text"] == (
            "[FRS squash SQ.1@00000001: more of what its summary above replaces]"
        )
        assert out[4:] == messages[8:]
        assert json.dumps(out).count("summary 1") == 1

    def test_a_reminder_does_not_count_a_tool_search_result_as_squashable(self):
        request = WIRE.parse(claude_body([*MESSAGES[:6], user("next")]).decode(), {})
        found = candidates(request, units_of(request), ())
        assert found.results == 1  # the test run's; the ToolSearch result stays anyway
