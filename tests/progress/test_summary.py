"""Path summaries: the partial order, composition and `advances` match their definitions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.progress import INT64_MAX, INT64_MIN, Add, Identity, PathSummary, ProductSummary
from sealtime.time import Antichain, Product
from tests.conftest import examples

adds = st.one_of(
    st.builds(Add, st.integers(0, 5)),
    st.builds(lambda n, lim: Add(n, limit=lim), st.integers(0, 5), st.integers(-5, 20)),
)
int_summaries = st.one_of(st.just(Identity()), adds)
product_summaries = st.one_of(
    st.just(Identity()), st.builds(ProductSummary, int_summaries, int_summaries)
)


def _threshold(s: PathSummary) -> int:
    # Largest input for which an int summary produces a time.
    return s.limit - s.n if isinstance(s, Add) else INT64_MAX


def _critical_ints(*summaries: PathSummary) -> list[int]:
    # Int summaries are piecewise linear with one threshold each: comparing them at the
    # thresholds, just past them and at the ends of int64 decides "for all t".
    points = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 6, INT64_MAX}
    for s in summaries:
        for c in (isinstance(s, ProductSummary) and (s.outer, s.inner)) or (s,):
            thr = _threshold(c)
            points.update({thr - 1, thr, thr + 1})
    return sorted(p for p in points if INT64_MIN <= p <= INT64_MAX)


def _le_result(a: Any, b: Any) -> bool:
    # None (no time) is above every time.
    if b is None:
        return True
    if a is None:
        return False
    if isinstance(a, Product):
        return a.outer <= b.outer and a.inner <= b.inner
    return bool(a <= b)


def _times(kind: str, s1: PathSummary, s2: PathSummary) -> list[Any]:
    ints = _critical_ints(s1, s2)
    if kind == "int":
        return ints
    return [Product(a, b) for a in ints for b in ints]


@settings(max_examples=examples(1000))
@given(st.sampled_from(["int", "product"]), st.data())
def test_less_equal_is_pointwise_order(kind: str, data: st.DataObject) -> None:
    strategy = int_summaries if kind == "int" else product_summaries
    s1, s2 = data.draw(strategy), data.draw(strategy)
    pointwise = all(_le_result(s1.results_in(t), s2.results_in(t)) for t in _times(kind, s1, s2))
    assert s1.less_equal(s2) == pointwise
    assert s1.less_than(s2) == (pointwise and not s2.less_equal(s1))


@settings(max_examples=examples(1000))
@given(st.sampled_from(["int", "product"]), st.data())
def test_followed_by_is_composition(kind: str, data: st.DataObject) -> None:
    strategy = int_summaries if kind == "int" else product_summaries
    s1, s2 = data.draw(strategy), data.draw(strategy)
    composed = s1.followed_by(s2)
    for t in _times(kind, s1, s2):
        first = s1.results_in(t)
        expected = None if first is None else s2.results_in(first)
        got = None if composed is None else composed.results_in(t)
        assert got == expected, (s1, s2, composed, t)


@settings(max_examples=examples(1000))
@given(st.sampled_from(["int", "product"]), st.data())
def test_summaries_are_inflationary_and_advances_is_exact(kind: str, data: st.DataObject) -> None:
    s = data.draw(int_summaries if kind == "int" else product_summaries)
    produced = [(t, s.results_in(t)) for t in _times(kind, s, s)]
    produced = [(t, r) for t, r in produced if r is not None]
    for t, r in produced:
        assert _le_result(t, r)
    if produced:
        assert s.advances() == all(r != t for t, r in produced)


@settings(max_examples=examples(1000))
@given(st.lists(int_summaries, max_size=6))
def test_antichain_of_summaries_keeps_the_minimal_ones(summaries: list[PathSummary]) -> None:
    chain = Antichain(summaries)
    kept = chain.elements()
    for s in summaries:
        assert any(k.less_equal(s) for k in kept)
    for a in kept:
        for b in kept:
            assert a is b or not a.less_equal(b)


def test_identity_is_least_and_neutral() -> None:
    assert Identity().results_in(Product(1, 2)) == Product(1, 2)
    assert Identity().followed_by(Add(3)) == Add(3)
    assert Add(3).followed_by(Identity()) == Add(3)
    assert Identity().less_equal(ProductSummary(Add(1), Identity()))
    assert not Identity().advances()
    assert Add(0).less_equal(Identity()) and Identity().less_equal(Add(0))
    assert Identity() == Identity() and hash(Identity()) == hash(Identity())


def test_add_overflow_and_limits() -> None:
    assert Add(1).results_in(INT64_MAX) is None
    assert Add(0).results_in(INT64_MAX) == INT64_MAX
    assert Add(2, limit=10).results_in(8) == 10
    assert Add(2, limit=10).results_in(9) is None
    assert Add(2**63).followed_by(Add(2**63)) is None
    assert Add(1, limit=5).followed_by(Add(2, limit=6)) == Add(3, limit=6)
    assert repr(Add(1, limit=5)) == "Add(1, limit=5)"


def test_loop_summary_for_product_times() -> None:
    loop = ProductSummary(Identity(), Add(1))
    assert loop.results_in(Product(3, 4)) == Product(3, 5)
    assert loop.advances()
    assert ProductSummary(Identity(), Add(1, limit=2)).results_in(Product(0, 2)) is None
    assert ProductSummary(Identity(), Identity()).less_equal(Identity())
    assert hash(loop) == hash(ProductSummary(Identity(), Add(1)))


def test_bad_summaries_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="n >= 0"):
        Add(-1)
    with pytest.raises(TypeError, match="int n"):
        Add(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit must be an int64"):
        Add(0, limit=2**64)
    with pytest.raises(TypeError, match="expected a PathSummary"):
        ProductSummary(Identity(), 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot follow"):
        Add(1).followed_by(ProductSummary(Identity(), Identity()))
    with pytest.raises(TypeError, match="cannot follow"):
        ProductSummary(Identity(), Identity()).followed_by(Add(1))
    with pytest.raises(AttributeError, match="immutable"):
        Add(1).n = 2  # type: ignore[misc]
    assert not Add(1).less_equal(ProductSummary(Identity(), Identity()))


def test_summaries_pickle() -> None:
    import pickle

    for s in (Identity(), Add(2, limit=9), ProductSummary(Add(1), Identity())):
        assert pickle.loads(pickle.dumps(s)) == s
