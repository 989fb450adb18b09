"""A gateway session's thread page in `frs-mcp web` lists the gateway's requests: what the host
sent against what went upstream, and the share the squashes saved."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from frs import squashes as frs_squashes
from frs.autopilot import Autopilot
from frs.hooks import RECORDER_NOTES
from tests.gateway.conversation import SESSION, body, call, result, said, user
from tests.gateway.harness import rig
from tests.gateway.test_autopilot import Loop
from tests.gateway.test_squashes import client_env, session_of
from tests.gateway.test_thinking import Model
from tests.web.conftest import viewer
from tests.web.sample import write_sample
from tests.web.test_viewer import get

pytestmark = pytest.mark.slow

TRANSCRIPT = [
    user("Look at the logs."),
    call("toolu_1", "cat log"),
    result("toolu_1", "entry ok " * 800),
    said("All fine."),
    user("Thanks."),
]


async def test_a_gateway_sessions_page_shows_its_calls_sent_against_forwarded(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        for n in (1, 3, 4):
            await r.post(body(TRANSCRIPT[:n]), SESSION)
        session = await session_of(r)
        await frs_squashes.compress_range(
            client_env(r), 2, 3, "The log <is> fine.", session_id=session.id
        )
        await r.post(body(TRANSCRIPT[:5]), SESSION)
        async with r.gateway.recorder.env.store.snapshot() as reader:
            calls = await reader.gateway_calls(session.id, 10)
    last = calls[-1]
    assert last.applied == (1,)
    saved = f"{(last.sent_tokens - last.forwarded_tokens) / last.sent_tokens:.0%}"
    with viewer(r.database) as base:
        status, headers, page = get(f"{base}/s/{session.id}")
    assert status == 200
    assert "unsafe-inline" not in headers["content-security-policy"]
    found = re.search(r"<details class=\"calls\"><summary>(.*?)</summary>", page)
    assert found is not None, page[:2000]
    assert found[1].startswith("Gateway calls: 4 calls, host sent ")
    assert found[1].endswith(" saved")
    rows = re.findall(r"<tr>(<td>.*?)</tr>", page)
    assert len(rows) == 4
    newest = re.findall(r"<td>(.*?)</td>", rows[0])  # the newest first
    assert newest[1] == "anthropic"
    assert newest[2].endswith(f"{last.sent_bytes:,} bytes")
    assert newest[3].endswith(f"{last.forwarded_bytes:,} bytes")
    assert saved != "0%"
    assert newest[4] == saved
    assert newest[5] == "SQ.1"
    assert re.findall(r"<td>(.*?)</td>", rows[-1])[4:6] == ["0%", "—"]


async def test_the_gateways_note_is_shown_as_a_note_not_as_the_goal(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        await r.post(body(TRANSCRIPT[:1]), SESSION)
        session = await session_of(r)
    assert session.goal in RECORDER_NOTES
    with viewer(r.database) as base:
        status, _, page = get(f"{base}/s/{session.id}")
    assert status == 200
    assert f"Note: {html.escape(session.goal)}" in page, page[:3000]
    assert "Goal:" not in page


async def test_a_session_the_gateway_never_saw_shows_no_calls(tmp_path: Path) -> None:
    path = tmp_path / "frs.db"
    ids = await write_sample(path)
    with viewer(path) as base:
        status, _, page = get(f"{base}/s/{ids.session}")
    assert status == 200
    assert "Gateway calls" not in page


async def test_each_squash_says_who_made_it_when_and_when_it_first_went(
    tmp_path: Path,
) -> None:
    loop_model = Model()
    async with rig(tmp_path, loop_model, autopilot=Autopilot(keep=3, after=6_000)) as r:
        loop = Loop(r)
        await loop.calls(3)
        session = await session_of(r)
        await frs_squashes.compress_range(client_env(r), 2, 3, "Listed 1.", session_id=session.id)
        await loop.calls(12)
        async with r.gateway.recorder.env.store.snapshot() as reader:
            squashes = await reader.squashes(session.id)
    automatic = [s for s in squashes if s.automatic]
    assert automatic
    with viewer(r.database) as base:
        status, _, page = get(f"{base}/s/{session.id}")
    assert status == 200
    listed = re.findall(r"<li>(SQ\.\d+ \((?:automatic|the model&#x27;s)\): .*?)</li>", page)
    assert listed[0] == "SQ.1 (the model&#x27;s): made after call 3, first sent at call 4"
    assert any(
        re.fullmatch(
            rf"SQ\.{automatic[0].n} \(automatic\): made after call \d+, first sent at call \d+", x
        )
        for x in listed
    )
    # The automatic summaries carry a mark of their own on the thread.
    assert page.count('<span class="auto">automatic</span>') == len(
        [s for s in automatic if not s.restored]
    )
