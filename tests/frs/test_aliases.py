"""Alias parsing (`M.n`, `SQ.n`, optional `@sha8`) and the paging text of `get_alias`."""

from __future__ import annotations

import pytest

from frs.aliases import Page, parse_alias, sha_matches
from frs.errors import InvalidAlias, InvalidRequest


class TestParseAlias:
    @pytest.mark.parametrize(
        ("alias", "family", "n", "sha8"),
        [
            ("M.17", "M", 17, None),
            ("M.1", "M", 1, None),
            ("SQ.2", "SQ", 2, None),
            ("SQ.2@0b4f2d11", "SQ", 2, "0b4f2d11"),
            ("SQ.2@0B4F2D11", "SQ", 2, "0b4f2d11"),
            ("M.3@7c1e09aa", "M", 3, "7c1e09aa"),
            ("  M.17\n", "M", 17, None),
            ("M.999999999999", "M", 999_999_999_999, None),
        ],
    )
    def test_accepts(self, alias: str, family: str, n: int, sha8: str | None) -> None:
        ref = parse_alias(alias)
        assert (ref.family, ref.n, ref.sha8) == (family, n, sha8)
        assert ref.name == f"{family}.{n}"

    @pytest.mark.parametrize(
        "alias",
        [
            "",
            "   ",
            "M",
            "M.",
            "M.0",
            "M.01",
            "M.-1",
            "M.+1",
            "M.1.2",
            "M.abc",
            "M 1",
            "M,1",
            "m.1",
            "sq.2",
            "SQ.1@",
            "SQ.2@0b4f2d1",
            "SQ.2@0b4f2d11a",
            "SQ.2@zzzzzzzz",
            "SQ.2@0b4f 2d1",
            "M.1234567890123",
            "M.\uff11",
            ".1",
            "@0b4f2d11",
            "[M.1]",
        ],
    )
    def test_rejects(self, alias: str) -> None:
        with pytest.raises(InvalidAlias) as caught:
            parse_alias(alias)
        assert caught.value.alias == alias
        assert repr(alias) in str(caught.value)
        assert "SQ.2@0b4f2d11" in str(caught.value)  # the message shows the valid form

    def test_an_invalid_alias_is_an_invalid_request(self) -> None:
        assert issubclass(InvalidAlias, InvalidRequest)

    def test_sha_matches_by_prefix_and_ignores_a_missing_sha(self) -> None:
        sha = "0b4f2d11" + "a" * 56
        assert sha_matches(parse_alias("SQ.1"), sha)
        assert sha_matches(parse_alias("SQ.1@0B4F2D11"), sha)
        assert not sha_matches(parse_alias("SQ.1@0b4f2d12"), sha)


class TestPage:
    def test_the_last_page_has_no_continuation(self) -> None:
        page = Page("M.3", "M.3@7c1e09aa · Tool", "hello", 0, 5, 5)
        assert page.render() == "M.3@7c1e09aa · Tool · chars 0–5 of 5\nhello"

    def test_a_partial_page_says_how_to_read_on(self) -> None:
        page = Page("SQ.1", "SQ.1@0b4f2d11 · originals", "x" * 20_000, 0, 20_000, 30_500)
        assert (
            page.render().split("\n")[0] == "SQ.1@0b4f2d11 · originals · chars 0–20,000 of 30,500"
        )
        assert page.render().split("\n")[-1] == (
            '… 10,500 more chars: get_alias(alias="SQ.1", offset=20000)'
        )
