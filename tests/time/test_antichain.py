"""`Antichain`: minimal elements, frontier order, meet/join, timely's doc examples."""

from __future__ import annotations

import copy
import pickle
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.time import Antichain, Product, sort_key
from tests.conftest import examples
from tests.time.strategies import KINDS, NESTED, Kind, ref_le, ref_lt, ref_minimal, up_set

# --- timely's documented examples -------------------------------------------------------


def test_timely_insert_example() -> None:
    frontier = Antichain()
    assert frontier.insert(2)
    assert not frontier.insert(3)


def test_timely_extend_example() -> None:
    frontier = Antichain()
    assert frontier.extend([3])
    assert frontier.extend([2, 5])
    assert not frontier.extend([3, 4])


def test_timely_less_than_example() -> None:
    frontier = Antichain.from_elem(2)
    assert frontier.less_than(3)
    assert not frontier.less_than(2)
    assert not frontier.less_than(1)
    frontier.clear()
    assert not frontier.less_than(3)


def test_timely_less_equal_example() -> None:
    frontier = Antichain.from_elem(2)
    assert frontier.less_equal(3)
    assert frontier.less_equal(2)
    assert not frontier.less_equal(1)
    frontier.clear()
    assert not frontier.less_equal(3)


def test_timely_elements_and_clear_examples() -> None:
    frontier = Antichain.from_elem(2)
    assert frontier.elements() == (2,)
    frontier.clear()
    assert frontier.elements() == ()


# --- basics -----------------------------------------------------------------------------


def test_empty_antichain_is_finished_and_greatest() -> None:
    done = Antichain()
    assert done.is_empty() and len(done) == 0 and not done
    assert not done.less_equal(0) and not done.less_than(10**9)
    assert Antichain([0]) <= done and not (done <= Antichain([0]))
    assert Antichain([0]) < done and done > Antichain([0])
    assert done <= done and not (done < done)
    assert repr(done) == "Antichain([])"


def test_container_protocol() -> None:
    a = Antichain([Product(1, 0), Product(0, 1), Product(1, 1)])
    assert len(a) == 2
    assert list(a) == [Product(0, 1), Product(1, 0)]
    assert Product(0, 1) in a and Product(1, 1) not in a
    assert repr(a) == "Antichain([Product(0, 1), Product(1, 0)])"
    assert a == Antichain([Product(1, 0), Product(0, 1)])
    assert a != Antichain([Product(1, 0)])
    assert a != [Product(0, 1), Product(1, 0)]  # not equal to a plain list
    assert len({a, Antichain([Product(0, 1), Product(1, 0)])}) == 1


def test_copy_is_independent() -> None:
    a = Antichain([3])
    b = a.copy()
    b.insert(1)
    assert a == Antichain([3]) and b == Antichain([1])


def test_as_option() -> None:
    assert Antichain([7]).as_option() == 7
    assert Antichain().as_option() is None
    with pytest.raises(ValueError):
        Antichain([Product(0, 1), Product(1, 0)]).as_option()


def test_incomparable_frontiers() -> None:
    a, b = Antichain([Product(0, 1)]), Antichain([Product(1, 0)])
    # neither is below the other, and the strict operators do not claim otherwise
    assert not (a <= b) and not (b <= a) and not (a < b) and not (a > b)
    assert not (a >= b) and a != b
    assert a.meet(b) == Antichain([Product(0, 1), Product(1, 0)])
    assert a.join(b) == Antichain([Product(1, 1)])


def test_comparison_with_other_types_is_not_supported() -> None:
    with pytest.raises(TypeError):
        _ = Antichain([1]) <= 1  # type: ignore[operator]


# --- properties against brute force -----------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_antichain_is_minimal_elements_of_inserts(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.times(max_size=10), kind.time, st.integers(0, 2**32))
    def prop(inserted: list[Any], probe: Any, seed: int) -> None:
        a = Antichain()
        for i, t in enumerate(inserted):
            # insert adds t iff nothing inserted before is ≤ t
            assert a.insert(t) == (not any(ref_le(u, t) for u in inserted[:i]))
        expected = ref_minimal(inserted)
        assert set(a) == expected and len(a) == len(expected)
        assert a.elements() == tuple(sorted(expected, key=sort_key))
        assert a.is_empty() == (not inserted)

        # the constructor, in any insertion order: same value, same hash, same elements()
        shuffled = list(inserted)
        random.Random(seed).shuffle(shuffled)
        b = Antichain(shuffled)
        assert a == b and hash(a) == hash(b) and a.elements() == b.elements()
        assert a == Antichain(expected)

        assert a.less_equal(probe) == any(ref_le(u, probe) for u in inserted)
        assert a.less_than(probe) == any(ref_lt(u, probe) for u in expected)

    prop()


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_frontier_order_meet_join(kind: Kind) -> None:
    universe = kind.universe
    frontiers = kind.times(max_size=4).map(Antichain)

    @settings(max_examples=examples(1000))
    @given(frontiers, frontiers)
    def prop(a: Antichain, b: Antichain) -> None:
        up_a, up_b = up_set(a, universe), up_set(b, universe)

        # A <= B iff B's future is contained in A's
        assert (a <= b) == (up_b <= up_a)
        assert (b >= a) == (a <= b)
        assert (a < b) == (up_b < up_a)
        assert (a > b) == (up_a < up_b)
        if a <= b and b <= a:
            assert a == b

        # meet: union of futures; join: intersection of futures
        meet, join = a.meet(b), a.join(b)
        assert up_set(meet, universe) == up_a | up_b
        assert up_set(join, universe) == up_a & up_b
        assert meet <= a and meet <= b and a <= join and b <= join
        assert set(meet) == ref_minimal(meet) and set(join) == ref_minimal(join)

    prop()


def test_nested_product_antichains_exhaustive() -> None:
    # every pair of nested products: the antichain of the two is their minimal elements
    universe = NESTED.universe
    for x in universe:
        for y in universe:
            a = Antichain([x, y])
            assert set(a) == ref_minimal([x, y])
            assert a == Antichain([y, x]) and hash(a) == hash(Antichain([y, x]))
            assert a.join(Antichain([x])) == Antichain([x])
            assert (Antichain([x]) <= Antichain([y])) == ref_le(x, y)


def test_copy_and_pickle() -> None:
    a = Antichain([Product(0, 1), Product(1, 0)])
    for other in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert other == a and hash(other) == hash(a)
        other.insert(Product(0, 0))
        assert a == Antichain([Product(0, 1), Product(1, 0)])
