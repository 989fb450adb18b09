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
        "gateway": {**timing, "p50_ms": 4.5},
        "squash": {**timing, "p50_ms": 5.0},
        "added_p50_ms": 2.5,
        "added_p50_ms_squash": 3.0,
    }
    text = report.render({"gateway": {"calls": 6, "load_before": [1.0], "500": row}})
    assert "## Gateway: time added to a model call's first byte" in text
    assert "| 500 | 2.0 / 9.0 | 4.5 / 9.0 | 5.0 / 9.0 | +2.5 | +3.0 |" in text
    assert gateway.render({}) == []
