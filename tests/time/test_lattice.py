"""Lattice operations: `join`, `meet`, `advance_by` (differential's `Lattice` examples)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings

from sealtime.time import Antichain, Product, advance_by, join, less_equal, meet
from tests.conftest import examples
from tests.time.strategies import KINDS, NESTED, Kind, ref_le

# --- differential's documented examples -------------------------------------------------


def test_differential_join_meet_examples() -> None:
    assert join(Product(3, 7), Product(4, 6)) == Product(4, 7)
    assert meet(Product(3, 7), Product(4, 6)) == Product(3, 6)


def test_differential_advance_by_example() -> None:
    time = Product(3, 7)
    frontier = [Product(4, 8), Product(5, 3)]
    advanced = advance_by(time, frontier)
    # `time` and `advanced` are indistinguishable to elements >= an element of `frontier`
    for i, j in itertools.product(range(10), repeat=2):
        test = Product(i, j)
        if any(less_equal(f, test) for f in frontier):
            assert less_equal(time, test) == less_equal(advanced, test)
    assert advanced == Product(4, 7)


def test_advance_by_edge_cases() -> None:
    # empty frontier: nothing left to distinguish, `t` is returned unchanged (as in
    # differential's implementation)
    assert advance_by(3, []) == 3
    assert advance_by(Product(1, 2), Antichain()) == Product(1, 2)
    # int frontiers: times before the frontier move up to it, later times stay
    assert advance_by(3, [5]) == 5 and advance_by(5, [5]) == 5 and advance_by(8, [5]) == 8
    # the frontier may be an Antichain or any iterable (a generator, here)
    assert advance_by(Product(3, 7), (f for f in [Product(4, 8), Product(5, 3)])) == Product(4, 7)


def test_join_meet_of_nested_products() -> None:
    a, b = Product(Product(0, 3), 1), Product(Product(2, 1), 0)
    assert join(a, b) == Product(Product(2, 3), 1)
    assert meet(a, b) == Product(Product(0, 1), 0)


# --- properties against brute force -----------------------------------------------------


def check_join_meet(universe: tuple[Any, ...], a: Any, b: Any) -> None:
    j, m = join(a, b), meet(a, b)
    upper = [c for c in universe if ref_le(a, c) and ref_le(b, c)]
    lower = [c for c in universe if ref_le(c, a) and ref_le(c, b)]
    assert j in upper and all(ref_le(j, c) for c in upper)
    assert m in lower and all(ref_le(c, m) for c in lower)
    assert join(b, a) == j and meet(b, a) == m  # commutative
    assert join(a, a) == a and meet(a, a) == a  # idempotent
    assert join(a, m) == a and meet(a, j) == a  # absorption


def check_advance_by(universe: tuple[Any, ...], t: Any, frontier: Antichain) -> None:
    advanced = advance_by(t, frontier)
    assert ref_le(t, advanced)
    future = [g for g in universe if any(ref_le(f, g) for f in frontier)]
    # the defining property: indistinguishable from `t` for every time in the future
    for g in future:
        assert ref_le(advanced, g) == ref_le(t, g)
    # ... and the greatest such time (any indistinguishable `s` is ≤ the result)
    for s in universe:
        if all(ref_le(s, g) == ref_le(t, g) for g in future):
            assert ref_le(s, advanced)
    # idempotent, and only depends on the frontier's elements
    assert advance_by(advanced, frontier) == advanced
    assert advance_by(t, list(reversed(frontier.elements()))) == advanced


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_join_and_meet_are_least_upper_and_greatest_lower_bounds(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.time, kind.time, kind.time)
    def prop(a: Any, b: Any, c: Any) -> None:
        check_join_meet(kind.universe, a, b)
        assert join(join(a, b), c) == join(a, join(b, c))  # associative
        assert meet(meet(a, b), c) == meet(a, meet(b, c))

    prop()


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_advance_by_is_the_greatest_indistinguishable_time(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.time, kind.times(min_size=1, max_size=3).map(Antichain))
    def prop(t: Any, frontier: Antichain) -> None:
        check_advance_by(kind.universe, t, frontier)

    prop()


def test_nested_products_exhaustive() -> None:
    universe = NESTED.universe
    for a in universe:
        for b in universe:
            check_join_meet(universe, a, b)
    # every time against every frontier of two elements of a sub-box
    corner = [t for t in universe if t.inner < 2 and t.outer.inner < 2]
    for t in universe[::2]:
        for f1 in corner:
            for f2 in corner:
                check_advance_by(universe, t, Antichain([f1, f2]))
