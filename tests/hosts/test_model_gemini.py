"""The scripted model's Gemini wire: generateContent as JSON, streamGenerateContent as SSE,
countTokens, and functionResponse parts read back as the tool results the model was shown."""

from __future__ import annotations

import json

import pytest

from tests.hosts.model import ModelServer, Script, Seen, Turn, find_int
from tests.hosts.test_model import events, post

pytestmark = pytest.mark.hosts

MODELS = "/v1beta/models/gemini-2.5-pro"
TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "mcp_frs_frs_view_thread",
                "description": "View.",
                "parametersJsonSchema": {"type": "object", "properties": {}},
            }
        ]
    }
]


def test_stream_sends_text_then_the_function_call_and_ends_with_stop(
    model_server: ModelServer,
) -> None:
    script = model_server.play(Script([Turn.call("mcp_frs_frs_view_thread", "Looking.", last=5)]))
    body = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": TOOLS,
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
    }
    status, raw = post(f"{model_server.url}{MODELS}:streamGenerateContent?alt=sse", body)
    assert status == 200
    chunks = [data for _, data in events(raw)]
    parts = [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
    assert "".join(part.get("text", "") for part in parts) == "Looking."
    assert parts[-1] == {"functionCall": {"name": "mcp_frs_frs_view_thread", "args": {"last": 5}}}
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] > 0
    assert all("finishReason" not in chunk["candidates"][0] for chunk in chunks[:-1])
    [exchange] = script.log
    assert exchange.wire == "gemini"
    assert exchange.seen is not None
    assert exchange.seen.system == "Be brief."
    assert exchange.seen.tool("mcp_frs_frs_view_thread").schema == {
        "type": "object",
        "properties": {},
    }
    assert exchange.seen.last_user_text == "go"


def test_a_function_response_is_the_result_a_step_reads_and_json_answers_whole(
    model_server: ModelServer,
) -> None:
    def second(seen: Seen) -> Turn:
        assert not seen.result.is_error
        revision = find_int(r"revision (\d+)", seen.result.text)
        return Turn(f"at {revision}")

    script = model_server.play(Script([Turn.call("mcp_frs_frs_view_thread"), second]))
    call = {"functionCall": {"name": "mcp_frs_frs_view_thread", "args": {}}}
    answer = {
        "functionResponse": {
            "id": "c1",
            "name": "mcp_frs_frs_view_thread",
            "response": {"output": "Thread · revision 4"},
        }
    }
    history = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [answer]},
    ]
    for contents in (history[:1], history):
        status, raw = post(
            f"{model_server.url}{MODELS}:generateContent", {"tools": TOOLS, "contents": contents}
        )
        assert status == 200
    reply = json.loads(raw)
    assert reply["candidates"][0]["content"]["parts"] == [{"text": "at 4"}]
    assert reply["candidates"][0]["finishReason"] == "STOP"
    [result] = script.seen_at(1).results
    assert result.call_id == "c1"
    assert result.text == "Thread · revision 4"
    assert result.raw == answer["functionResponse"]
    script.check_done()


def test_an_error_is_marked_an_object_is_json_and_count_tokens_uses_no_step(
    model_server: ModelServer,
) -> None:
    def echo(seen: Seen) -> Turn:
        return Turn(f"{seen.result.is_error}:{seen.result.text}")

    script = model_server.play(Script([echo, echo]))
    status, raw = post(f"{model_server.url}{MODELS}:countTokens", {"contents": []})
    assert status == 200
    assert json.loads(raw)["totalTokens"] >= 1
    failed = {"functionResponse": {"name": "x", "response": {"error": "Stale revision"}}}
    contents = [{"role": "user", "parts": [failed]}]
    status, raw = post(
        f"{model_server.url}{MODELS}:generateContent", {"tools": TOOLS, "contents": contents}
    )
    assert json.loads(raw)["candidates"][0]["content"]["parts"] == [{"text": "True:Stale revision"}]
    # An object that is more than a wrapped text is the result's text as JSON.
    structured = {"functionResponse": {"name": "x", "response": {"revision": 2, "n": 1}}}
    contents = [{"role": "user", "parts": [structured]}]
    status, raw = post(
        f"{model_server.url}{MODELS}:generateContent", {"tools": TOOLS, "contents": contents}
    )
    reply = json.loads(raw)["candidates"][0]["content"]["parts"]
    assert reply == [{"text": 'False:{"revision":2,"n":1}'}]
    assert [e.kind for e in script.log] == ["count", "step", "step"]
    # Past the script: the API's own 400 INVALID_ARGUMENT, which no client retries.
    status, raw = post(
        f"{model_server.url}{MODELS}:generateContent", {"tools": TOOLS, "contents": contents}
    )
    assert status == 400
    assert json.loads(raw)["error"]["status"] == "INVALID_ARGUMENT"
