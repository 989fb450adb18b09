"""The cache arithmetic of a squash, and the word the squash reply adds when it pays back
slowly."""

from __future__ import annotations

import pytest

from frs import Env, recording, squashes
from frs.economics import payback_calls, squash_cost, squash_saving
from frs.model import NewMessage
from frs.replies import squashed
from storage import SqliteStore, open_database


class TestArithmetic:
    def test_cost_and_saving_follow_the_cache_prices(self):
        # S=10,000 into Σ=500 with T=2,000 after: 1.25·2,500 − 0.1·12,000 = 1,925 once,
        # 0.1·9,500 = 950 per later call.
        assert squash_cost(10_000, 500, 2_000) == pytest.approx(1_925)
        assert squash_saving(10_000, 500) == pytest.approx(950)
        assert payback_calls(10_000, 500, 2_000) == pytest.approx(1_925 / 950)

    def test_an_old_span_with_much_after_it_pays_back_slowly(self):
        assert payback_calls(2_000, 100, 100_000) == pytest.approx((125_125 - 10_200) / 190)

    def test_a_summary_no_smaller_never_pays_back(self):
        assert payback_calls(100, 100, 0) is None

    def test_a_squash_at_the_end_costs_nothing_extra_when_the_summary_is_small(self):
        assert payback_calls(10_000, 50, 0) == 0


class TestReply:
    async def test_the_reply_says_when_a_squash_pays_back_only_after_many_calls(self, tmp_path):
        async with open_database(tmp_path / "frs.db") as db:
            env = Env(SqliteStore(db))
            await recording.record(env, [NewMessage("user", "old " * 400)])
            await recording.record(
                env, [NewMessage("assistant", f"later {i} " * 400) for i in range(40)]
            )
            old = await squashes.compress_range(env, 1, 1, "old stuff")
            assert old.after_tokens is not None
            assert old.after_tokens > 10_000
            assert "pays back only after ~" in squashed(old)
            recent = await squashes.compress_range(env, 40, 41, "the last two")
            assert recent.after_tokens == 0
            assert "pays back" not in squashed(recent)
