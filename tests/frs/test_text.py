"""The token estimator against real BPE counts, o200k_base and cl100k_base (tests/bpe.py).

On every corpus message, every stress sample of bench/samples.py and every whole view of a
corpus thread, the estimate is never below either encoding's count; on the corpus the mean
overshoot stays at or under 15% (14% on the views). A budgeted view stays under its budget by
the estimate and in real tokens. The weight is subadditive, so a budget may add up the weights
of lines.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import frs.text
from bench.calibrate import CORPUS, render_corpus
from bench.corpus import load_corpus
from bench.samples import samples
from bench.tokenizer import PINNED_SHA256, verified
from frs.text import TOKEN_UNIT, class_pairs, estimate_tokens, token_units, token_weight
from tests.bpe import ENCODINGS, counter

MAX_MEAN_OVERSHOOT = 0.15
MAX_VIEW_OVERSHOOT = 0.14


def _rendered() -> tuple[list[str], list[str], list[tuple[int, str]]]:
    """Corpus message bodies, whole views, and (budget, view) of budgeted views."""
    with tempfile.TemporaryDirectory() as folder:
        raw, budgeted = asyncio.run(render_corpus(load_corpus(CORPUS), Path(folder)))
    messages = [text for kind, _, _, text in raw if kind == "message" and text]
    views = [text for kind, _, _, text in raw if kind == "view"]
    return messages, views, [(budget, view) for _, budget, view in budgeted]


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str], list[tuple[int, str]]]:
    return _rendered()


def _overshoots(texts: list[str], encoding: str) -> list[float]:
    count = counter(encoding)
    return [estimate_tokens(text) / count(text) - 1 for text in texts]


class TestVocabularies:
    @pytest.mark.parametrize("encoding", ENCODINGS)
    def test_the_bundled_vocabulary_is_the_one_tiktoken_pins(self, encoding: str) -> None:
        tokenizer = verified(encoding)  # raises UnverifiedVocabulary otherwise
        assert tokenizer.bpe
        assert PINNED_SHA256[encoding][:12] in tokenizer.note

    def test_the_counts_are_the_published_ones(self) -> None:
        # tiktoken's README: "hello world" is [15339, 1917] in cl100k_base.
        assert counter("cl100k_base")("hello world") == 2
        assert counter("o200k_base")("hello world") == 2


@pytest.mark.parametrize("encoding", ENCODINGS)
class TestNeverUndercounts:
    def test_no_corpus_message_is_undercounted(
        self, encoding: str, corpus: tuple[list[str], list[str], list[tuple[int, str]]]
    ) -> None:
        count = counter(encoding)
        under = [text[:80] for text in corpus[0] if estimate_tokens(text) < count(text)]
        assert len(corpus[0]) > 800
        assert under == []

    def test_no_stress_sample_is_undercounted(self, encoding: str) -> None:
        count = counter(encoding)
        found = samples()
        under = [(s.kind, s.text[:40]) for s in found if estimate_tokens(s.text) < count(s.text)]
        assert {s.kind for s in found} >= {"cjk chinese", "emoji", "digits", "base64"}
        assert under == []

    def test_no_whole_view_of_a_corpus_thread_is_undercounted(
        self, encoding: str, corpus: tuple[list[str], list[str], list[tuple[int, str]]]
    ) -> None:
        count = counter(encoding)
        assert [view[:80] for view in corpus[1] if estimate_tokens(view) < count(view)] == []

    def test_a_budgeted_view_fits_its_budget_in_real_tokens(
        self, encoding: str, corpus: tuple[list[str], list[str], list[tuple[int, str]]]
    ) -> None:
        count = counter(encoding)
        budgets = {budget or 20_000 for budget, _ in corpus[2]}
        assert budgets == {1_000, 4_000, 20_000}
        for budget, view in corpus[2]:
            limit = budget or 20_000  # no budget: the server's cap on a whole-thread view
            assert count(view) <= estimate_tokens(view) <= limit


@pytest.mark.parametrize("encoding", ENCODINGS)
class TestOvershoot:
    def test_the_mean_overshoot_on_corpus_messages_is_at_most_15_percent(
        self, encoding: str, corpus: tuple[list[str], list[str], list[tuple[int, str]]]
    ) -> None:
        assert statistics.mean(_overshoots(corpus[0], encoding)) <= MAX_MEAN_OVERSHOOT

    def test_the_mean_overshoot_on_whole_views_is_at_most_14_percent(
        self, encoding: str, corpus: tuple[list[str], list[str], list[tuple[int, str]]]
    ) -> None:
        # What a budgeted view can fill (issue 22): 14.6% in o200k while views were held to 5%
        # above both encodings in the fit, 13.2% since.
        assert statistics.mean(_overshoots(corpus[1], encoding)) <= MAX_VIEW_OVERSHOOT


class TestWeight:
    @given(st.text(), st.text())
    def test_a_concatenation_weighs_at_most_its_parts(self, first: str, second: str) -> None:
        assert token_units(first + second) <= token_units(first) + token_units(second)

    @given(st.lists(st.text(alphabet=st.characters(exclude_characters="\n")), max_size=20))
    def test_lines_joined_weigh_at_most_their_sum_and_a_newline_each(
        self, lines: list[str]
    ) -> None:
        joined = token_weight("\n".join(lines))
        assert joined <= sum(token_weight(line) + token_weight("\n") for line in lines)

    @given(st.text())
    def test_the_estimate_is_the_weight_rounded_up(self, text: str) -> None:
        assert token_weight(text) * TOKEN_UNIT == token_units(text)
        assert estimate_tokens(text) - 1 < token_weight(text) <= estimate_tokens(text)

    def test_the_empty_text_weighs_nothing_and_any_other_at_least_one_token(self) -> None:
        assert (estimate_tokens(""), estimate_tokens("a"), estimate_tokens("\n")) == (0, 1, 1)

    def test_a_long_text_is_summed_exactly(self) -> None:
        # Sums of long texts go through Adler-32 in chunks; check them byte by byte.
        text = "".join(s.text for s in samples())
        data = text.encode("utf-8", "surrogatepass")
        weights = frs.text._WEIGHTS
        expected = sum(
            count * weights[(code >> 4) - 1][code & 0xF]
            for code, count in Counter(class_pairs(data)).items()
        )
        assert len(data) > 100_000
        assert token_units(text) == expected

    @given(st.text(min_size=1, max_size=60), st.integers(1, 9))
    def test_a_long_text_weighed_a_slice_at_a_time_weighs_as_much_as_whole(
        self, text: str, size: int
    ) -> None:
        whole = token_units(text)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(frs.text, "_PAIR_SLICE", size)
            assert token_units(text) == whole

    def test_a_lone_surrogate_is_counted_not_refused(self) -> None:
        assert estimate_tokens("\udfff") >= 1

    def test_a_byte_repeating_the_one_before_has_its_own_context(self) -> None:
        repeat = len(frs.text.CLASSES) - 1
        assert [code & 0xF for code in class_pairs(b"aab")] == [0, repeat, 1]
        assert [code >> 4 for code in class_pairs(b"a1 ")] == [1, 3, 4]
