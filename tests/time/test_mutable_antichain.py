"""`MutableAntichain`: the frontier of positive counts, and the changes it reports."""

from __future__ import annotations

import copy
import pickle
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings

from sealtime.time import Antichain, MutableAntichain, Product, sort_key
from tests.conftest import examples
from tests.time.strategies import KINDS, NESTED, Kind, ref_frontier, ref_le, ref_lt

# --- timely's documented examples -------------------------------------------------------


def test_timely_new_and_clear_examples() -> None:
    frontier = MutableAntichain()
    assert frontier.is_empty()
    assert len(frontier.frontier()) == 0
    frontier.clear()
    assert frontier.is_empty()


def test_timely_new_bottom_example() -> None:
    frontier = MutableAntichain.new_bottom(0)
    assert frontier.frontier() == Antichain([0])


def test_timely_less_than_less_equal_examples() -> None:
    frontier = MutableAntichain.new_bottom(1)
    assert not frontier.less_than(0)
    assert not frontier.less_than(1)
    assert frontier.less_than(2)
    assert not frontier.less_equal(0)
    assert frontier.less_equal(1)
    assert frontier.less_equal(2)


def test_timely_update_iter_example() -> None:
    frontier = MutableAntichain.from_elem(1)
    changes = frontier.update_iter([(1, -1), (2, 7)])
    assert frontier.frontier() == Antichain([2])
    assert changes == [(1, -1), (2, 1)]


# --- behaviour --------------------------------------------------------------------------


def test_negative_transients_and_product_frontier() -> None:
    m = MutableAntichain()
    # a retraction arriving before its insertion: count -1, not part of the frontier
    assert m.update_iter([(Product(0, 0), -1), (Product(1, 2), 1)]) == [(Product(1, 2), 1)]
    assert m.count_for(Product(0, 0)) == -1
    assert m.update_iter([(Product(2, 1), 1)]) == [(Product(2, 1), 1)]
    assert m.frontier().elements() == (Product(1, 2), Product(2, 1))
    assert m.update_iter([(Product(0, 0), 1)]) == []  # back to zero: nothing changes
    assert m.update_iter([(Product(0, 0), 1)]) == [
        (Product(0, 0), 1),
        (Product(1, 2), -1),
        (Product(2, 1), -1),
    ]
    assert list(m.updates()) == [(Product(0, 0), 1), (Product(1, 2), 1), (Product(2, 1), 1)]


def test_clear_reports_the_old_frontier() -> None:
    m = MutableAntichain([(Product(0, 1), 2), (Product(1, 0), 1), (Product(3, 3), 1)])
    assert m.clear() == [(Product(0, 1), -1), (Product(1, 0), -1)]
    assert m.is_empty() and list(m.updates()) == []


def test_constructors_and_equality() -> None:
    assert MutableAntichain.from_antichain(
        Antichain([Product(0, 1), Product(1, 0)])
    ).frontier() == (Antichain([Product(1, 0), Product(0, 1)]))
    assert MutableAntichain([(1, 1), (2, 1)]) == MutableAntichain([(2, 1), (1, 1)])
    assert MutableAntichain([(1, 1)]) != MutableAntichain([(1, 2)])
    assert repr(MutableAntichain([(2, 1), (1, -1)])) == "MutableAntichain([(1, -1), (2, 1)])"
    assert MutableAntichain().update(3, 0) == []  # zero diffs are ignored


def test_frontier_is_a_snapshot() -> None:
    m = MutableAntichain.new_bottom(5)
    f = m.frontier()
    f.insert(0)
    assert m.frontier() == Antichain([5])


def _count_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = MutableAntichain._rebuild

    def counting(self: MutableAntichain) -> list:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(MutableAntichain, "_rebuild", counting)
    return calls


def test_updates_beyond_the_frontier_do_not_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_rebuilds(monkeypatch)
    m = MutableAntichain.new_bottom(0)
    calls.clear()
    for t in range(1, 5000):
        assert m.update_iter([(t, 1), (t, 2), (t, -1)]) == []  # strictly beyond 0
    assert m.update_iter([(-3, -1)]) == []  # a decrement before the frontier
    assert calls == []
    assert m.update_iter([(0, -1)]) == [(0, -1), (1, 1)]  # a frontier element: rebuild
    assert len(calls) == 1
    assert m.count_for(4999) == 2


def test_product_updates_beyond_the_frontier_do_not_rebuild(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_rebuilds(monkeypatch)
    m = MutableAntichain([(Product(0, 5), 1), (Product(5, 0), 1)])
    calls.clear()
    for i in range(1, 200):
        assert m.update_iter([(Product(i, 5 + i), 1), (Product(5 + i, i), 1)]) == []
    assert calls == []
    assert m.update_iter([(Product(0, 0), 1)]) == [
        (Product(0, 0), 1),
        (Product(0, 5), -1),
        (Product(5, 0), -1),
    ]
    assert len(calls) == 1


# --- properties against brute force -----------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_frontier_and_changes_match_brute_force(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.batches(max_updates=30))
    def prop(batches: list[list[tuple[Any, int]]]) -> None:
        check_against_brute_force(kind.universe, batches)

    prop()


def check_against_brute_force(
    universe: tuple[Any, ...], batches: list[list[tuple[Any, int]]]
) -> None:
    m = MutableAntichain()
    counts: Counter = Counter()
    history: Counter = Counter()  # the frontier rebuilt from the reported changes
    for batch in batches:
        changes = m.update_iter(batch)
        for t, diff in batch:
            counts[t] += diff
        expected = ref_frontier(counts)

        # the frontier is the minimal positive-count times
        frontier = m.frontier()
        assert set(frontier) == expected and len(frontier) == len(expected)
        assert m.is_empty() == (not expected)
        for t, _ in batch:
            assert m.count_for(t) == counts[t]

        # the changes are consolidated, ±1, sorted, and replay the frontier exactly
        assert all(diff in (-1, 1) for _, diff in changes)
        assert len({t for t, _ in changes}) == len(changes)
        assert [t for t, _ in changes] == sorted((t for t, _ in changes), key=sort_key)
        for t, diff in changes:
            history[t] += diff
        assert +history == history  # never negative
        assert history == Counter(expected)

    expected = ref_frontier(counts)
    for t in universe:
        assert m.count_for(t) == counts[t]
        assert m.less_equal(t) == any(ref_le(f, t) for f in expected)
        assert m.less_than(t) == any(ref_lt(f, t) for f in expected)

    # the state depends only on the accumulated counts, not on how they were batched
    flat = [u for batch in batches for u in batch]
    assert m == MutableAntichain(flat)
    assert MutableAntichain(flat).frontier() == m.frontier()
    assert list(m.updates()) == sorted(
        ((t, c) for t, c in counts.items() if c), key=lambda u: sort_key(u[0])
    )


def test_nested_products_against_brute_force() -> None:
    # deterministic sweeps over the nested-product universe: add everything in two
    # orders, then retract it again in several batch shapes
    universe = NESTED.universe
    ups = [(t, 1) for t in universe]
    downs = [(t, -1) for t in universe]
    check_against_brute_force(universe, [ups[::-1], downs[::2], downs[1::2]])
    check_against_brute_force(universe, [[u] for u in ups] + [[d] for d in downs])
    check_against_brute_force(universe, [downs[5:], ups, ups[5:]])


def test_copy_and_pickle_are_independent() -> None:
    m = MutableAntichain([(3, 1), (1, -1), (5, 2)])
    for other in (m.copy(), copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert other == m and other.frontier() == m.frontier()
        assert other.update_iter([(3, -1)]) == [(3, -1), (5, 1)]
        assert m.frontier() == Antichain([3]) and m.count_for(3) == 1
