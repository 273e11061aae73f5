"""`ChangeBatch`: consolidation against a brute-force Counter, timely's doc examples."""

from __future__ import annotations

import copy
import pickle
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.time import ChangeBatch, Product, sort_key
from tests.conftest import examples
from tests.time.strategies import KINDS, NESTED, Kind

# --- timely's documented examples -------------------------------------------------------


def test_timely_new_and_new_from_examples() -> None:
    assert ChangeBatch().is_empty()
    assert not ChangeBatch.new_from(17, 1).is_empty()


def test_timely_update_example() -> None:
    batch = ChangeBatch()
    batch.update(17, 1)
    assert not batch.is_empty()


def test_timely_extend_and_is_empty_examples() -> None:
    batch = ChangeBatch.new_from(17, 1)
    batch.extend([(17, -1)])
    assert batch.is_empty()
    batch = ChangeBatch.new_from(17, 1)
    batch.update(17, -1)
    assert batch.is_empty()


def test_timely_into_inner_iter_drain_examples() -> None:
    assert ChangeBatch.new_from(17, 1).into_inner() == [(17, 1)]

    batch = ChangeBatch.new_from(17, 1)
    it = batch.iter()
    assert next(it) == (17, 1)
    assert next(it, None) is None
    assert not batch.is_empty()

    batch = ChangeBatch.new_from(17, 1)
    it = iter(batch.drain())
    assert next(it) == (17, 1)
    assert next(it, None) is None
    assert batch.is_empty()


def test_timely_len_clear_drain_into_examples() -> None:
    batch = ChangeBatch.new_from(17, 1)
    batch.update(17, -1)
    batch.update(14, -1)
    assert len(batch) == 1

    batch = ChangeBatch.new_from(17, 1)
    batch.clear()
    assert batch.is_empty()

    batch1, batch2 = ChangeBatch.new_from(17, 1), ChangeBatch()
    batch1.drain_into(batch2)
    assert batch1.is_empty() and not batch2.is_empty()


# --- behaviour --------------------------------------------------------------------------


def test_products_drain_in_lexicographic_order() -> None:
    batch = ChangeBatch([(Product(1, 0), 1), (Product(0, 5), 2), (Product(0, 1), -1)])
    batch.compact()
    assert batch.drain() == [(Product(0, 1), -1), (Product(0, 5), 2), (Product(1, 0), 1)]
    assert batch.drain() == []


def test_value_semantics() -> None:
    a = ChangeBatch([(1, 1), (2, 2)])
    assert a == ChangeBatch([(2, 2), (1, 1), (3, 1), (3, -1)])
    assert a != ChangeBatch([(1, 1)])
    assert repr(a) == "ChangeBatch([(1, 1), (2, 2)])"
    assert bool(a) and not ChangeBatch()
    assert a.count_for(2) == 2 and a.count_for(9) == 0
    assert list(a) == [(1, 1), (2, 2)]
    with pytest.raises(TypeError):
        hash(a)


def test_reading_does_not_alias_internal_state() -> None:
    batch = ChangeBatch([(1, 1)])
    inner = batch.into_inner()
    inner.append((2, 2))
    assert batch.into_inner() == [(1, 1)]
    drained = batch.drain()
    batch.update(5, 1)
    assert drained == [(1, 1)]


# --- properties against brute force -----------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_consolidation_matches_counter(kind: Kind) -> None:
    @settings(max_examples=examples(1000))
    @given(kind.updates(max_size=16), st.integers(0, 16))
    def prop(updates: list[tuple[Any, int]], split: int) -> None:
        check_against_counter(updates, split)

    prop()


def _consolidated(updates: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
    counter: Counter = Counter()
    for t, diff in updates:
        counter[t] += diff
    return sorted(((t, d) for t, d in counter.items() if d), key=lambda u: sort_key(u[0]))


def check_against_counter(updates: list[tuple[Any, int]], split: int) -> None:
    expected = _consolidated(updates)

    # any mix of update() and extend() gives the same consolidated, sorted result
    batch = ChangeBatch()
    for t, diff in updates[:split]:
        batch.update(t, diff)
    batch.extend(updates[split:])
    assert batch.into_inner() == expected
    assert list(batch.iter()) == expected and list(batch) == expected
    assert len(batch) == len(expected)
    assert batch.is_empty() == (not expected)
    assert all(batch.count_for(t) == d for t, d in expected)
    assert batch == ChangeBatch(reversed(updates))

    # draining into another batch adds up; draining empties
    other = ChangeBatch(updates[:split])
    batch.drain_into(other)
    assert batch.is_empty() and batch.drain() == []
    assert other.drain() == _consolidated(updates + updates[:split])
    assert other.is_empty()


def test_nested_products_consolidate() -> None:
    universe = NESTED.universe
    updates = [(t, i % 5 - 2) for i, t in enumerate(universe * 3)]
    for split in (0, 20, len(updates)):
        check_against_counter(updates, split)


def test_copy_and_pickle_are_independent() -> None:
    batch = ChangeBatch([(Product(0, 1), 2)])
    for other in (batch.copy(), copy.copy(batch), pickle.loads(pickle.dumps(batch))):
        assert other == batch
        other.update(Product(0, 1), -2)
        assert other.is_empty() and batch.into_inner() == [(Product(0, 1), 2)]
