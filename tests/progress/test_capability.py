"""Capabilities: counting through the shared batch, downgrades, misuse, holding frontiers."""

from __future__ import annotations

import gc
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.progress import (
    Capability,
    CapabilityError,
    DowngradeError,
    GraphBuilder,
    Source,
    Target,
    Tracker,
)
from sealtime.time import Antichain, ChangeBatch, Product
from tests.conftest import examples


def _chain(n: int = 3) -> Tracker:
    b = GraphBuilder()
    b.add_node(0, 0, 1, name="source")
    for i in range(1, n + 1):
        b.add_node(i, 1, 1)
        b.add_edge(Source(i - 1, 0), Target(i, 0))
    return b.build()


def test_counting_through_the_shared_batch() -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    cap = Capability(3, batch)
    twin = cap.clone()
    later = cap.delayed(5)
    assert batch.into_inner() == [(3, 2), (5, 1)]
    twin.drop()
    later.downgrade(6)
    assert batch.into_inner() == [(3, 1), (6, 1)]
    with cap:
        pass
    later.drop()
    assert batch.is_empty()


def test_timely_downgrade_example() -> None:
    # timely: a capability at t may be downgraded to any t' ≥ t, in steps.
    batch: ChangeBatch[int] = ChangeBatch()
    cap = Capability(0, batch)
    for t in (0, 1, 1, 4, 10):
        cap.downgrade(t)
        assert cap.time() == t
        assert batch.into_inner() == [(t, 1)]
    cap.drop()


def test_downgrade_backwards_names_both_times() -> None:
    cap = Capability(5, ChangeBatch(), Source(2, 0))
    with pytest.raises(DowngradeError) as err:
        cap.downgrade(3)
    message = str(err.value)
    assert "Capability(5 at Source(node=2, port=0))" in message
    assert "3 is not ≥ 5" in message
    with pytest.raises(DowngradeError, match="cannot delay"):
        cap.delayed(4)
    assert isinstance(err.value, ValueError)  # also a ValueError, for generic handlers
    assert cap.time() == 5  # unchanged by the failed attempts
    cap.drop()


def test_downgrade_to_incomparable_product_time() -> None:
    cap = Capability(Product(1, 2), ChangeBatch())
    with pytest.raises(DowngradeError, match="incomparable"):
        cap.downgrade(Product(2, 1))
    cap.downgrade(Product(2, 2))
    cap.drop()


def test_use_after_drop_and_double_drop() -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    cap = Capability(1, batch, Source(0, 0))
    cap.drop()
    assert cap.dropped
    for action in (
        cap.time,
        lambda: cap.downgrade(2),
        lambda: cap.delayed(2),
        cap.clone,
    ):
        with pytest.raises(CapabilityError, match="already dropped"):
            action()
    with pytest.raises(CapabilityError, match="dropped twice"):
        cap.drop()
    with pytest.raises(CapabilityError, match="already dropped"), cap:
        pass
    assert batch.is_empty()  # the failed uses reported nothing


def test_dropping_inside_a_with_block_is_fine() -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    with Capability(1, batch) as cap:
        cap.drop()
    assert batch.is_empty()


def test_equality_and_order() -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    a, b = Capability(1, batch), Capability(2, batch)
    other = Capability(1, ChangeBatch())
    assert a == a.clone() and a != other and a != b
    assert a.less_equal(b) and a.less_than(b) and not b.less_equal(a)
    assert not a.less_equal(other)
    with pytest.raises(TypeError):
        hash(a)
    for cap in (a, b, other):
        cap.drop()


def test_leaked_capability_warns() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Capability(7, ChangeBatch(), Source(1, 0))
        gc.collect()
    assert any(
        issubclass(w.category, ResourceWarning) and "without drop()" in str(w.message)
        for w in caught
    )


def test_held_capability_holds_the_downstream_frontier_back() -> None:
    tracker = _chain(3)
    cap = tracker.capability(Source(0, 0), 0)
    tracker.propagate_all()
    assert tracker.frontier(Target(3, 0)) == Antichain([0])
    # An operator in the middle holds a capability at 2 (e.g. an open window).
    held = tracker.capability(Source(1, 0), 2)
    cap.downgrade(10)
    tracker.propagate_all()
    assert tracker.frontier(Target(1, 0)) == Antichain([10])
    assert tracker.frontier(Target(2, 0)) == Antichain([2])
    assert tracker.frontier(Target(3, 0)) == Antichain([2])
    held.downgrade(8)
    tracker.propagate_all()
    assert tracker.frontier(Target(3, 0)) == Antichain([8])
    held.drop()
    tracker.propagate_all()
    assert tracker.frontier(Target(3, 0)) == Antichain([10])
    cap.drop()
    tracker.propagate_all()
    assert tracker.frontier(Target(3, 0)).is_empty()
    assert not tracker.tracking_anything()


def test_capability_changes_wait_for_propagate() -> None:
    tracker = _chain(1)
    cap = tracker.capability(Source(0, 0), 0)
    assert tracker.frontier(Target(1, 0)).is_empty()  # not propagated yet
    assert tracker.tracking_anything()
    tracker.propagate_all()
    assert tracker.frontier(Target(1, 0)) == Antichain([0])
    cap.drop()
    tracker.propagate_all()


def test_capability_ports_are_validated() -> None:
    tracker = _chain(1)
    with pytest.raises(TypeError, match="capabilities live at a Source"):
        tracker.capability(Target(1, 0), 0)  # type: ignore[arg-type]
    from sealtime.progress import GraphError

    with pytest.raises(GraphError, match="no node 9"):
        tracker.capability(Source(9, 0), 0)
    with pytest.raises(TypeError, match="ChangeBatch"):
        Capability(0, [])  # type: ignore[arg-type]


@settings(max_examples=examples(1000))
@given(st.lists(st.tuples(st.sampled_from(["clone", "delay", "down", "drop"]), st.integers(-2, 3))))
def test_batch_always_counts_live_capabilities(ops: list[tuple[str, int]]) -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    live = [Capability(0, batch)]
    for op, k in ops:
        if not live:
            live.append(Capability(0, batch))
        cap = live[abs(k) % len(live)]
        if op == "clone":
            live.append(cap.clone())
        elif op == "delay" or op == "down":
            new = cap.time() + k
            if k < 0:
                with pytest.raises(DowngradeError):
                    cap.delayed(new) if op == "delay" else cap.downgrade(new)
            elif op == "delay":
                live.append(cap.delayed(new))
            else:
                cap.downgrade(new)
        else:
            cap.drop()
            live = [c for c in live if c is not cap]
        expected: dict[int, int] = {}
        for c in live:
            expected[c.time()] = expected.get(c.time(), 0) + 1
        assert dict(batch.into_inner()) == expected
    for c in live:
        c.drop()
    assert batch.is_empty()
