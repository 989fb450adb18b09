"""The scripted model itself: each wire's answer in the shape its API documents, steps and side
calls played in order, and every request recorded byte for byte."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.hosts.model import WIRES, Exchange, ModelServer, Script, Seen, Turn, find_int
from tests.hosts.model.wire import Reply, json_reply

pytestmark = pytest.mark.hosts

TOOLS_ANTHROPIC = [{"name": "frs_view_thread", "description": "View.", "input_schema": {}}]


def post(url: str, payload: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(
        url, data, {"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def events(stream: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) of each server-sent event."""
    found = []
    for block in stream.decode().split("\n\n"):
        if not block.strip():
            continue
        name = None
        data = ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
        found.append((name, data if data == "[DONE]" else json.loads(data)))
    return found


def test_anthropic_streams_a_tool_call_in_the_documented_event_order(
    model_server: ModelServer,
) -> None:
    script = model_server.play(Script([Turn.call("frs_view_thread", "Looking.", limit=5)]))
    body = {"model": "m", "stream": True, "tools": TOOLS_ANTHROPIC, "messages": []}
    status, raw = post(f"{model_server.url}/v1/messages?beta=true", body)
    assert status == 200
    got = events(raw)
    names = [name for name, _ in got]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert [
        data["content_block"]["type"] for name, data in got if name == "content_block_start"
    ] == [
        "text",
        "tool_use",
    ]
    arguments = "".join(
        data["delta"]["partial_json"]
        for name, data in got
        if name == "content_block_delta" and data["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(arguments) == {"limit": 5}
    assert got[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert got[0][1]["message"]["id"].startswith("msg_")
    [exchange] = script.log
    assert exchange.body == json.dumps(body).encode()
    assert exchange.query == "beta=true"
    assert exchange.step == 0


def test_anthropic_streams_thinking_and_only_a_signature_when_its_display_is_omitted(
    model_server: ModelServer,
) -> None:
    model_server.play(Script([Turn("Hi.", thinking="Greet.") for _ in range(2)]))
    url = f"{model_server.url}/v1/messages"
    body: dict[str, Any] = {"model": "m", "stream": True, "tools": TOOLS_ANTHROPIC}
    for display, shown in (("summarized", ["Greet."]), ("omitted", [])):
        thinking = {"type": "adaptive", "display": display}
        status, raw = post(url, {**body, "thinking": thinking, "messages": []})
        assert status == 200
        deltas = [d["delta"] for n, d in events(raw) if n == "content_block_delta"]
        assert [d["thinking"] for d in deltas if d["type"] == "thinking_delta"] == shown
        assert [d["type"] for d in deltas if d["type"] == "signature_delta"] == ["signature_delta"]


def test_a_step_reads_the_last_tool_result_and_side_calls_use_no_step(
    model_server: ModelServer,
) -> None:
    def second(seen: Seen) -> Turn:
        revision = find_int(r"revision (\d+)", seen.result.text)
        return Turn(f"done at {revision}")

    script = model_server.play(Script([Turn.call("frs_view_thread"), second]))
    url = f"{model_server.url}/v1/messages"
    title = {"model": "m", "messages": [{"role": "user", "content": "title?"}]}
    assert post(url, title)[0] == 200
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "Saved: revision 7."}],
    }
    for messages in ([], [{"role": "user", "content": [result]}]):
        body = {"model": "m", "tools": TOOLS_ANTHROPIC, "messages": messages}
        status, raw = post(url, body)
        assert status == 200
    assert json.loads(raw)["content"] == [{"type": "text", "text": "done at 7"}]
    assert [(e.kind, e.step) for e in script.log] == [("side", None), ("step", 0), ("step", 1)]
    script.check_done()
    # One more conversation request than the script has: a non-retryable error, recorded.
    assert post(url, body)[0] == 400
    with pytest.raises(AssertionError, match="overrun"):
        script.check_done()


def test_anthropic_count_tokens_and_unrouted_paths_are_recorded(model_server: ModelServer) -> None:
    script = model_server.play(Script([]))
    status, raw = post(f"{model_server.url}/v1/messages/count_tokens", {"messages": []})
    assert status == 200
    assert json.loads(raw)["input_tokens"] >= 1
    assert post(f"{model_server.url}/nowhere", {})[0] == 404
    assert [e.kind for e in script.log] == ["count", "unrouted"]


def test_responses_streams_a_function_call_with_rising_sequence_numbers(
    model_server: ModelServer,
) -> None:
    script = model_server.play(Script([Turn.call("mcp__frs__frs_session", "Hi.", action="new")]))
    payload = {
        "model": "m",
        "stream": True,
        "instructions": "Be brief.",
        "tools": [{"type": "function", "name": "mcp__frs__frs_session", "parameters": {}}],
        "input": [{"type": "message", "role": "user", "content": "go"}],
    }
    compressed = gzip.compress(json.dumps(payload).encode())
    status, raw = post(f"{model_server.url}/v1/responses", compressed, {"Content-Encoding": "gzip"})
    assert status == 200
    got = events(raw)
    assert [data["sequence_number"] for _, data in got] == list(range(len(got)))
    assert got[0][0] == "response.created"
    assert got[-1][0] == "response.completed"
    done = got[-1][1]["response"]
    assert [item["type"] for item in done["output"]] == ["message", "function_call"]
    assert json.loads(done["output"][1]["arguments"]) == {"action": "new"}
    assert done["usage"]["total_tokens"] > 0
    [exchange] = script.log
    assert exchange.body == compressed  # as received, before the encoding is undone
    assert exchange.seen is not None
    assert exchange.seen.system == "Be brief."
    assert exchange.seen.tool_names() == ["mcp__frs__frs_session"]


def test_chat_completions_streams_tool_calls_then_done(model_server: ModelServer) -> None:
    model_server.play(Script([Turn.call("frs_record", role="assistant", content="x")]))
    payload = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "frs_record", "parameters": {}}}],
        "messages": [{"role": "user", "content": "go"}],
    }
    status, raw = post(f"{model_server.url}/v1/chat/completions", payload)
    assert status == 200
    got = events(raw)
    assert got[-1] == (None, "[DONE]")
    chunks = [data for _, data in got[:-1]]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] > 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    arguments = "".join(
        call["function"]["arguments"]
        for chunk in chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls", ())
    )
    assert json.loads(arguments) == {"role": "assistant", "content": "x"}


def test_a_failed_step_stops_the_script_without_using_up_the_next(
    model_server: ModelServer,
) -> None:
    def reads_a_revision(seen: Seen) -> Turn:
        return Turn(str(find_int(r"revision (\d+)", seen.result.text)))

    script = model_server.play(Script([reads_a_revision, Turn("never played")]))
    result = {"type": "tool_result", "tool_use_id": "t", "content": "no number here"}
    body = {
        "model": "m",
        "tools": TOOLS_ANTHROPIC,
        "messages": [{"role": "user", "content": [result]}],
    }
    for _ in range(2):  # a host that retries gets the same refusal
        status, raw = post(f"{model_server.url}/v1/messages", body)
        assert status == 400
        assert "step 0 failed" in json.loads(raw)["error"]["message"]
    assert script.played == 1
    with pytest.raises(AssertionError, match="step 0 failed"):
        script.check_done()


def test_a_wire_is_one_object_with_route_and_handle() -> None:
    class Echo:
        name = "echo"

        def route(self, exchange: Exchange) -> str | None:
            return "echo" if exchange.path == "/echo" else None

        def handle(self, route: str, exchange: Exchange, script: Script) -> Reply:
            exchange.kind = "other"
            return json_reply(200, {"got": exchange.json})

    with ModelServer(wires=[*WIRES, Echo()]) as server:
        status, raw = post(f"{server.url}/echo", {"a": 1})
        assert (status, json.loads(raw)) == (200, {"got": {"a": 1}})
        assert [(e.wire, e.kind) for e in server.script.log] == [("echo", "other")]
