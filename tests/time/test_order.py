"""Partial orders: the free functions, `Product`, `minimum`, `sort_key`."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.time import (
    Antichain,
    PartialOrder,
    Product,
    frontier_le,
    less_equal,
    less_than,
    minimum,
    sort_key,
    sorted_times,
)
from tests.conftest import examples
from tests.time.strategies import ALL_KINDS, KINDS, Kind, ref_le

# --- partial-order axioms and the sort key, for every timestamp kind ---------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_partial_order_axioms(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.time, kind.time, kind.time)
    def prop(a: Any, b: Any, c: Any) -> None:
        assert less_equal(a, a)  # reflexive
        if less_equal(a, b) and less_equal(b, a):  # antisymmetric
            assert a == b
        if less_equal(a, b) and less_equal(b, c):  # transitive
            assert less_equal(a, c)
        assert less_equal(a, b) == ref_le(a, b)
        assert less_than(a, b) == (less_equal(a, b) and a != b)
        assert not (less_than(a, b) and less_than(b, a))

    prop()


@pytest.mark.parametrize("kind", ALL_KINDS, ids=repr)
def test_partial_order_axioms_exhaustive(kind: Kind) -> None:
    universe = kind.universe
    for a in universe:
        assert less_equal(a, a) and not less_than(a, a)
        for b in universe:
            assert less_equal(a, b) == ref_le(a, b)
            assert less_than(a, b) == (ref_le(a, b) and a != b)
            if a != b:
                assert not (less_equal(a, b) and less_equal(b, a))
            if less_equal(a, b):
                assert sort_key(a) <= sort_key(b)  # sort_key extends the partial order
                assert all(less_equal(a, c) for c in universe if less_equal(b, c))


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_sort_key_is_a_deterministic_linear_extension(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.times(min_size=2, max_size=8))
    def prop(times: list[Any]) -> None:
        a, b = times[0], times[1]
        if less_equal(a, b):
            assert sort_key(a) <= sort_key(b)
        # a total order: any two keys compare, and equal keys mean equal times
        assert (sort_key(a) <= sort_key(b)) or (sort_key(b) <= sort_key(a))
        assert (sort_key(a) == sort_key(b)) == (a == b)
        # sorted output does not depend on the input order
        ordered = sorted_times(times)
        assert sorted_times(reversed(times)) == ordered
        assert all(sort_key(x) <= sort_key(y) for x, y in zip(ordered, ordered[1:]))

    prop()


@pytest.mark.parametrize("kind", ALL_KINDS, ids=repr)
def test_minimum_is_below_everything(kind: Kind) -> None:
    bottom = minimum(kind.universe[-1])
    assert bottom == kind.universe[0]
    assert all(less_equal(bottom, t) for t in kind.universe)


# --- Product ----------------------------------------------------------------------------


def test_product_order_examples() -> None:
    # The product order of timely's `Product`: both coordinates must be ≤.
    assert Product(3, 7).less_equal(Product(4, 7))
    assert Product(3, 7).less_equal(Product(3, 7))
    assert not Product(3, 7).less_than(Product(3, 7))
    assert Product(3, 7).less_than(Product(3, 8))
    # incomparable pair (the lattice docs' `(3, 7)` and `(4, 6)`)
    assert not Product(3, 7).less_equal(Product(4, 6))
    assert not Product(4, 6).less_equal(Product(3, 7))


def test_product_value_semantics() -> None:
    p = Product(1, Product(2, 3))
    assert repr(p) == "Product(1, Product(2, 3))"
    assert p == Product(1, Product(2, 3))
    assert p != Product(1, Product(2, 4))
    assert hash(p) == hash(Product(1, Product(2, 3)))
    assert Product(1, 2) != (1, 2)  # not a tuple
    assert pickle.loads(pickle.dumps(p)) == p
    assert p.outer == 1 and p.inner == Product(2, 3)
    with pytest.raises(AttributeError):
        p.outer = 5  # type: ignore[misc]


def test_product_has_no_python_ordering() -> None:
    # `<` would be mistaken for a total order by `sorted`; it must fail loudly instead.
    with pytest.raises(TypeError):
        _ = Product(1, 2) < Product(2, 3)  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = Product(1, 2) <= Product(2, 3)  # type: ignore[operator]
    assert sorted([Product(1, 0), Product(0, 5)], key=sort_key) == [Product(0, 5), Product(1, 0)]


def test_minimum_api() -> None:
    assert minimum(int) == 0
    assert minimum(17) == 0
    assert minimum(Product) == Product(0, 0)
    assert minimum(Product(4, 5)) == Product(0, 0)
    assert minimum(Product(Product(1, 2), 3)) == Product(Product(0, 0), 0)
    assert Product.minimum() == Product(0, 0)
    assert Product.minimum(int, Product(1, 1)) == Product(0, Product(0, 0))
    with pytest.raises(TypeError):
        minimum("not a timestamp")


def test_free_functions_on_ints() -> None:
    assert less_equal(1, 2) and less_equal(2, 2) and not less_equal(3, 2)
    assert less_than(1, 2) and not less_than(2, 2)
    assert less_equal(-5, -1)  # negative ints still compare (they are below minimum())


class Divides:
    """A user-defined partial order (divisibility), to exercise the protocol."""

    def __init__(self, n: int) -> None:
        self.n = n

    def less_equal(self, other: Divides) -> bool:
        return other.n % self.n == 0

    def less_than(self, other: Divides) -> bool:
        return self.less_equal(other) and self != other

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Divides) and other.n == self.n

    def __hash__(self) -> int:
        return hash(self.n)

    def sort_key(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"Divides({self.n})"


def test_custom_partial_order_plugs_in() -> None:
    assert isinstance(Divides(2), PartialOrder)
    assert less_equal(Divides(2), Divides(6)) and not less_equal(Divides(4), Divides(6))
    a = Antichain([Divides(4), Divides(6), Divides(2), Divides(3), Divides(9)])
    assert a.elements() == (Divides(2), Divides(3))
    assert sorted_times([Divides(9), Divides(2)]) == [Divides(2), Divides(9)]


def test_sorted_times_unsortable_keeps_order() -> None:
    class Opaque:
        def less_equal(self, other: object) -> bool:
            return self is other

    a, b = Opaque(), Opaque()
    assert sorted_times([b, a]) == [b, a]
    assert sorted_times([]) == []


@given(st.one_of(st.none(), st.integers()), st.one_of(st.none(), st.integers()))
def test_frontier_le_is_the_antichain_order(a: int | None, b: int | None) -> None:
    def frontier(t: int | None) -> Antichain[int]:
        return Antichain() if t is None else Antichain([t])

    assert frontier_le(a, b) == frontier(a).less_equal_antichain(frontier(b))
