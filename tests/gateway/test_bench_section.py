"""`make bench` runs the gateway's latency bench as its own section and reports it."""

from __future__ import annotations

from bench import gateway, report
from bench.run import QUICK, SECTIONS


def test_the_gateway_section_is_registered_and_rendered():
    assert "gateway" in SECTIONS
    calls = QUICK["gateway_calls"]
    assert isinstance(calls, int)
    assert calls > 0
    timing = {"p50_ms": 2.0, "p90_ms": 3.0, "worst_ms": 9.0}
    row = {
        "plain": timing,
        "gateway": {**timing, "p50_ms": 4.5, "p90_ms": 7.0},
        "squash": {**timing, "p50_ms": 5.0},
        "added_p50_ms": 2.5,
        "added_p50_ms_squash": 3.0,
        "added_p90_ms": 4.0,
        "added_p90_ms_squash": 0.0,
    }
    thinking = {**row, "added_p50_ms": 3.5}
    section = {"calls": 6, "load_before": [1.0], "500": row, "thinking": {"500": thinking}}
    text = report.render({"gateway": section})
    assert "## Gateway: time added to a model call's first byte" in text
    cells = "2.0 / 3.0 / 9.0 | 4.5 / 7.0 / 9.0 | 5.0 / 3.0 / 9.0"
    assert f"| 500 | no | {cells} | +2.5 / +4.0 | +3.0 / +0.0 |" in text
    assert f"| 500 | yes | {cells} | +3.5 / +4.0 | +3.0 / +0.0 |" in text
    assert gateway.render({}) == []


def test_a_thinking_transcript_is_what_a_host_sends():
    messages = gateway.transcript(3, thinking=True)
    first = messages[1]["content"][0]
    assert first["type"] == "thinking"
    assert first["signature"]
    assert gateway.transcript(3)[1]["content"][0]["type"] == "text"
    assert b'"thinking": {"type": "adaptive"' in gateway.body(messages, thinking=True)
