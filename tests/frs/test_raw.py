"""frs.raw: a runtime's items stored without the message's content twice, and given back whole."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from frs.raw import HOLE, MARK, Raw, fold, load, load_all, unfold

JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


class TestFold:
    def test_the_content_is_kept_once_and_comes_back(self) -> None:
        raw = json.dumps([{"role": "user", "content": 'héllo "x"\n'}], ensure_ascii=False)
        folded = fold(raw, 'héllo "x"\n')
        assert folded == MARK + '[{"role": "user", "content": ' + json.dumps(HOLE) + "}]"
        assert unfold(folded, 'héllo "x"\n') == raw
        assert load(folded, 'héllo "x"\n') == json.loads(raw)
        assert Raw(folded, 'héllo "x"\n').text() == raw

    def test_raw_is_kept_whole_when_the_content_is_not_there_once(self) -> None:
        twice = json.dumps(["a", "a"])
        assert fold(twice, "a") == twice
        assert fold(json.dumps(["b"]), "a") == json.dumps(["b"])
        assert fold(json.dumps([""]), "") == json.dumps([""])
        # The match must be a whole JSON string: here it would begin at an escaped quote.
        tricky = json.dumps(['x"a'])
        assert fold(tricky, "a") == tricky

    @given(value=JSON_TEXT, content=st.text())
    def test_unfold_gives_back_what_fold_was_given(self, value: object, content: str) -> None:
        raw = json.dumps([value, {"content": content}], ensure_ascii=False)
        assert unfold(fold(raw, content), content) == raw
        assert load(fold(raw, content), content) == json.loads(raw)
        assert MARK not in raw  # JSON text never holds a bare NUL, so the forms cannot clash


@given(values=st.lists(st.tuples(JSON_TEXT, st.text()), max_size=6))
def test_load_all_parses_each_as_load_does(values: list[tuple[object, str]]) -> None:
    raws = [
        Raw(fold(json.dumps([value, {"content": content}]), content), content)
        for value, content in values
    ]
    assert load_all(raws) == [raw.value() for raw in raws]
