"""Nothing to change: the upstream receives the host's bytes and headers, the host the
upstream's answer, byte for byte and as it streams."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from server.gateway.proxy import Upstreams
from tests.gateway.harness import Reply, Seen, rig

# Odd spacing, key order and escapes a re-serialiser would change.
BODY = (
    b'{ "model" :"claude-x",\n  "max_tokens":10, "messages":[{"role":"user","content":'
    b'"h\\u00e9llo \\ud83d\\ude00  \xc3\xa9"}],"stream":false ,"metadata":{"user_id":"u"}}'
)


class TestBytes:
    async def test_a_request_with_nothing_to_change_reaches_the_upstream_byte_for_byte(
        self, tmp_path
    ):
        async with rig(tmp_path) as r:
            answer = await r.post(BODY)
            assert answer.status_code == 200
            assert r.upstream.seen[0].sha256 == hashlib.sha256(BODY).hexdigest()

    async def test_a_body_that_is_not_json_is_forwarded_as_it_came(self, tmp_path):
        body = b'{"messages": [ not json \xff'
        async with rig(tmp_path) as r:
            await r.post(body)
            assert r.upstream.seen[0].body == body
            assert r.gateway.traffic.failed == 1

    async def test_the_answer_comes_back_byte_for_byte(self, tmp_path):
        raw = b'{"id":"msg_1",  "content":[{"type":"text","text":"\xc3\xa9"}]}'
        async with rig(tmp_path, lambda seen: Reply(chunks=(raw,))) as r:
            answer = await r.post(BODY)
            assert answer.content == raw


class TestHeaders:
    async def test_headers_path_and_query_reach_the_upstream_untouched(self, tmp_path):
        sent = [
            ("anthropic-beta", "interleaved-thinking-2025-05-14,context-1m"),
            ("X-Claude-Code-Session-Id", "abc"),
            ("user-agent", "claude-cli/9.9"),
        ]
        async with rig(tmp_path) as r:
            await r.post(BODY, sent, path="/v1/messages?beta=true")
            seen: Seen = r.upstream.seen[0]
            assert seen.path == "/v1/messages"
            assert seen.query == "beta=true"
            for name, value in [
                *sent,
                ("x-api-key", "sk-test"),
                ("anthropic-version", "2023-06-01"),
            ]:
                assert seen.header(name.lower()) == value
            # Nothing of the gateway's own HTTP client is added.
            names = {k.lower() for k, _ in seen.headers}
            sent_names = {k.lower() for k, _ in sent}
            base = {"x-api-key", "anthropic-version", "content-type"}
            client = {"accept", "accept-encoding", "connection", "user-agent"}  # the test's own
            assert names - sent_names - base - client == {"host", "content-length"}
            assert seen.header("user-agent") == "claude-cli/9.9"

    async def test_answer_status_and_headers_come_back(self, tmp_path):
        reply = Reply(
            status=529,
            headers=(
                ("content-type", "application/json"),
                ("request-id", "req_9"),
                ("retry-after", "3"),
            ),
            chunks=(b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',),
        )
        async with rig(tmp_path, lambda seen: reply) as r:
            answer = await r.post(BODY)
            assert answer.status_code == 529
            assert answer.headers["request-id"] == "req_9"
            assert answer.headers["retry-after"] == "3"
            assert answer.json()["error"]["type"] == "overloaded_error"

    async def test_count_tokens_goes_through_unread(self, tmp_path):
        body = b'{"model":"m","messages":[{"role":"user","content":"x"}]}'
        async with rig(tmp_path, lambda seen: Reply(chunks=(b'{"input_tokens":7}',))) as r:
            answer = await r.post(body, path="/v1/messages/count_tokens")
            assert answer.json() == {"input_tokens": 7}
            assert r.upstream.seen[0].body == body
            assert r.upstream.seen[0].path == "/v1/messages/count_tokens"


class TestStreams:
    async def test_a_stream_is_relayed_whole_with_pings_split_utf8_and_a_midstream_error(
        self, tmp_path
    ):
        euro = "€".encode()  # three bytes, split across chunks
        chunks = (
            b'event: message_start\ndata: {"type":"message_start"}\n\n',
            b'event: ping\ndata: {"type": "ping"}\n\n',
            b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"'
            + euro[:1],
            euro[1:] + b'"}}\n\n',
            b"event: error\n"
            b'data: {"type":"error","error":{"type":"overloaded_error","message":"x"}}\n\n',
        )
        reply = Reply(headers=(("content-type", "text/event-stream"),), chunks=chunks)
        async with rig(tmp_path, lambda seen: reply) as r:
            got = b""
            async with r.client.stream(
                "POST", r.url + "/v1/messages", content=BODY, headers={"x-api-key": "k"}
            ) as answer:
                assert answer.headers["content-type"] == "text/event-stream"
                async for chunk in answer.aiter_raw():
                    got += chunk
            assert got == b"".join(chunks)

    async def test_an_unreachable_upstream_is_a_502_the_host_can_read(self, tmp_path):
        async with rig(tmp_path) as r:
            nowhere = "http://127.0.0.1:9"
            r.gateway.upstreams = Upstreams(anthropic=nowhere, openai=nowhere)
            answer = await r.post(BODY)
            assert answer.status_code == 502
            assert "could not reach" in json.loads(answer.content)["error"]["message"]


class TestCompressed:
    async def test_a_compressed_body_is_forwarded_as_it_came(self, tmp_path):
        import gzip

        packed = gzip.compress(BODY)
        async with rig(tmp_path) as r:
            answer = await r.post(packed, [("content-encoding", "gzip")])
            assert answer.status_code == 200
            assert r.upstream.seen[0].body == packed
            assert r.gateway.traffic.failed == 0


class TestSafety:
    async def test_a_gateway_with_a_token_refuses_a_request_without_it(self, tmp_path):
        async with rig(tmp_path) as r:
            r.gateway.tenants = {"s3cret-token": "local"}
            refused = await r.post(BODY)
            assert refused.status_code == 401
            assert "x-frs-token" in refused.json()["error"]["message"]
            assert r.upstream.seen == []
            allowed = await r.post(BODY, [("x-frs-token", "s3cret-token")])
            assert allowed.status_code == 200
            # The gateway's own token never reaches the provider.
            assert r.upstream.seen[0].header("x-frs-token") is None

    def test_another_address_without_a_token_is_refused_at_start(self, tmp_path):
        import subprocess
        import sys

        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "server",
                "gateway",
                "--db",
                str(tmp_path / "x.db"),
                "--host",
                "0.0.0.0",
                "--port",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"PATH": "", "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        assert done.returncode == 2
        assert "token" in done.stderr

    async def test_a_failure_is_logged_without_the_body_or_the_key(self, tmp_path, caplog):
        body = b'{"messages": [ not json, "secret words" \xff'
        async with rig(tmp_path) as r:
            await r.post(body, [("x-api-key", "sk-very-secret")])
        logged = caplog.text
        assert "forwarded as the host sent it" in logged
        assert "secret words" not in logged
        assert "sk-very-secret" not in logged


class TestOpenAI:
    async def test_openai_paths_go_to_their_wires_and_the_rest_unread(self, tmp_path):
        payload = b'{"model":"gpt-x", "input":[{"role":"user","content":"hi"}],"stream":true}'
        async with rig(tmp_path) as r:
            answer = await r.post(payload, [("session-id", "codex-1")], path="/v1/responses")
            assert answer.status_code == 200
            assert r.upstream.seen[0].path == "/v1/responses"
            assert r.upstream.seen[0].body == payload
            wires = {
                path: getattr(r.gateway.route(path).wire, "name", None)
                for path in ("/v1/messages", "/v1/responses", "/v1/chat/completions")
            }
            assert wires == {
                "/v1/messages": "anthropic",
                "/v1/responses": "openai-responses",
                "/v1/chat/completions": "openai-chat",
            }
            assert r.gateway.route("/v1/embeddings").wire is None
