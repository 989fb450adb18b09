"""No credential in any log line at any level: a key in a header or in a query string, a bearer
token, the gateway's own token, whatever the request's fate (forwarded, refused, failed
upstream). And `--help` states the default log level the gateway really logs at."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from server.cli.options import parser
from tests.gateway.conversation import SESSION, TASK, body
from tests.gateway.harness import Upstream, served, text_reply
from tests.gateway.process import gateway_process

pytestmark = pytest.mark.slow

TOKEN = "gateway-token-0123456789"
SECRETS = {
    "query api-key": "SECRET-QUERY-APIKEY-1",
    "query key": "SECRET-QUERY-KEY-2",
    "query token": "SECRET-QUERY-TOKEN-3",
    "x-api-key": "sk-ant-SECRET-HEADER-4",
    "bearer": "sk-SECRET-BEARER-5",
    "api-key": "SECRET-AZURE-6",
    "x-goog-api-key": "SECRET-GOOGLE-7",
}


async def _send_everything(url: str) -> None:
    query = (
        f"?api-key={SECRETS['query api-key']}&key={SECRETS['query key']}"
        f"&token={SECRETS['query token']}&beta=true"
    )
    headers = {
        "x-frs-token": TOKEN,
        "x-api-key": SECRETS["x-api-key"],
        "authorization": f"Bearer {SECRETS['bearer']}",
        "api-key": SECRETS["api-key"],
        "x-goog-api-key": SECRETS["x-goog-api-key"],
        "content-type": "application/json",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        for path in ("/v1/messages", "/v1/chat/completions", "/v1/models"):
            answer = await http.post(
                url + path + query, content=body(TASK[:3]), headers={**headers, **dict(SESSION)}
            )
            assert answer.status_code == 200
        wrong = await http.post(url + "/v1/messages" + query, headers={"x-frs-token": "nope"})
        assert wrong.status_code == 401


class TestLogs:
    async def test_no_credential_reaches_the_log_at_debug(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FRS_TOKEN", TOKEN)
        async with served(Upstream(lambda seen: text_reply())) as upstream:
            with gateway_process(tmp_path / "frs.db", upstream, "--log-level", "DEBUG") as gw:
                await _send_everything(gw.url)
        # An upstream that cannot be reached: its URL is logged, without the query.
        with gateway_process(
            tmp_path / "frs.db", "http://127.0.0.1:9", "--log-level", "DEBUG"
        ) as dead:
            async with httpx2.AsyncClient(timeout=30) as http:
                failed = await http.post(
                    dead.url + f"/v1/messages?key={SECRETS['query key']}",
                    headers={"x-frs-token": TOKEN, "x-api-key": SECRETS["x-api-key"]},
                )
            assert failed.status_code == 502
        logged = gw.stderr + dead.stderr
        assert " DEBUG " in logged  # the log ran at DEBUG
        assert "<redacted>" in logged  # the lines that quote a request are there, masked
        for name, secret in [*SECRETS.items(), ("the gateway's token", TOKEN)]:
            assert secret not in logged, f"{name} was logged"

    async def test_the_gateway_logs_at_info_unless_told_as_help_says(self, tmp_path: Path) -> None:
        said = parser().format_help()
        assert "default INFO when serving" in " ".join(said.split())
        async with served(Upstream(lambda seen: text_reply())) as upstream:
            with gateway_process(tmp_path / "frs.db", upstream) as gw:
                async with httpx2.AsyncClient(timeout=30) as http:
                    await http.post(gw.url + "/v1/messages", content=body(TASK[:1]))
        assert " INFO " in gw.stderr
        assert " DEBUG " not in gw.stderr
