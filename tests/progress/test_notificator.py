"""Notificator: timely's FrontierNotificator semantics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.progress import (
    Capability,
    CapabilityError,
    GraphBuilder,
    Notificator,
    Probe,
    Source,
    Target,
)
from sealtime.time import Antichain, ChangeBatch, MutableAntichain, Product, sort_key
from tests.conftest import examples


def test_timely_delivers_notifications_in_topo_order() -> None:
    frontier = MutableAntichain.new_bottom(Product(0, 0))
    root = Capability(Product(0, 0), ChangeBatch())
    times = [(3, 5), (5, 4), (1, 2), (1, 1), (1, 1), (5, 4), (6, 0), (6, 2), (5, 8)]
    notificator = Notificator(root.delayed(Product(*t)) for t in times)
    assert notificator.next([frontier]) is None
    frontier.update_iter([(Product(0, 0), -1), (Product(5, 7), 1), (Product(6, 1), 1)])
    got = [cap.time() for cap, _ in notificator.ready([frontier])]
    assert got == [Product(1, 1), Product(1, 2), Product(3, 5), Product(5, 4), Product(6, 0)]
    frontier.update_iter([(Product(5, 7), -1), (Product(6, 1), -1), (Product(6, 10), 1)])
    session = notificator.ready([frontier])
    first, _ = next(session)
    # (5, 8) comes before (6, 0) in the total order but not in the partial order: no
    # promise about the total order, only that nothing ≤ a delivered time is pending.
    assert first.time() == Product(5, 8)
    notificator.notify_at_frontiered(root.delayed(Product(5, 9)), [frontier])
    assert [cap.time() for cap, _ in session] == [Product(5, 9), Product(6, 2)]
    assert notificator.next([frontier]) is None


def test_counts_merge_and_duplicates_are_released() -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    n = Notificator([Capability(2, batch), Capability(2, batch), Capability(1, batch)])
    assert n.pending_times() == [1, 2] and len(n) == 3
    delivered = list(n.ready(Antichain([3])))
    assert [(cap.time(), k) for cap, k in delivered] == [(1, 1), (2, 2)]
    # The merged duplicate was dropped; the handed-back capabilities are still held.
    assert batch.into_inner() == [(1, 1), (2, 1)]
    for cap, _ in delivered:
        cap.drop()
    assert batch.is_empty()


def test_for_each_drops_after_logic() -> None:
    batch: ChangeBatch[int] = ChangeBatch()
    n = Notificator([Capability(t, batch) for t in (5, 1, 3)])
    seen: list[int] = []
    kept: list[Capability[int]] = []

    def logic(cap: Capability[int], count: int) -> None:
        seen.append(cap.time())
        if cap.time() == 3:
            kept.append(cap.delayed(4))  # keep producing later

    n.for_each(Antichain([4]), logic)
    assert seen == [1, 3]
    assert batch.into_inner() == [(4, 1), (5, 1)]
    kept[0].drop()
    n.clear()
    assert batch.is_empty()


def test_notificator_with_a_tracker_probe() -> None:
    b = GraphBuilder()
    b.add_node(0, 0, 1)
    b.add_node(1, 1, 1, name="window")
    b.add_edge(Source(0, 0), Target(1, 0))
    tracker = b.build()
    probe = Probe(tracker, Target(1, 0))
    input_cap = tracker.capability(Source(0, 0), 0)
    window_cap = tracker.capability(Source(1, 0), 0)
    n: Notificator[int] = Notificator()
    n.notify_at(window_cap.delayed(10))
    window_cap.drop()
    tracker.propagate_all()
    assert list(n.ready(probe)) == []
    input_cap.downgrade(10)
    tracker.propagate_all()
    assert list(n.ready(probe)) == []  # 10 itself may still arrive
    input_cap.downgrade(11)
    tracker.propagate_all()
    ((cap, count),) = list(n.ready(probe))
    assert cap.time() == 10 and count == 1
    # While the notified capability is held, the window output is held at 10.
    assert tracker.frontier(Source(1, 0)) == Antichain([10])
    cap.drop()
    input_cap.drop()
    tracker.propagate_all()
    assert not tracker.tracking_anything()


def test_notify_with_dropped_capability_is_an_error() -> None:
    cap = Capability(1, ChangeBatch())
    cap.drop()
    with pytest.raises(CapabilityError, match="already dropped"):
        Notificator().notify_at(cap)
    with pytest.raises(TypeError, match="needs a Capability"):
        Notificator().notify_at(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="less_equal"):
        Notificator([Capability(1, ChangeBatch())]).make_available([1])  # type: ignore[list-item]


@settings(max_examples=examples(1000))
@given(
    st.lists(
        st.tuples(st.integers(0, 14), st.lists(st.integers(0, 12), max_size=4)),
        min_size=1,
        max_size=6,
    )
)
def test_each_request_is_delivered_once_in_order_after_the_frontier_passes(
    rounds: list[tuple[int, list[int]]],
) -> None:
    # Each round: new requests arrive, then the (monotone) frontier moves and ready
    # notifications are taken. A last round with the empty frontier flushes the rest.
    batch: ChangeBatch[int] = ChangeBatch()
    n: Notificator[int] = Notificator()
    requested: dict[int, int] = {}
    delivered: dict[int, int] = {}
    steps = sorted(step for step, _ in rounds)
    for (_, new), step in zip([*rounds, (0, [])], [*steps, None]):
        for t in new:
            n.notify_at(Capability(t, batch))
            requested[t] = requested.get(t, 0) + 1
        frontier = Antichain() if step is None else Antichain([step])
        times = []
        for cap, count in n.ready(frontier):
            t = cap.time()
            assert not frontier.less_equal(t)  # the frontier has passed it
            times.append(t)
            delivered[t] = delivered.get(t, 0) + count
            cap.drop()
        assert times == sorted(set(times))  # in time order, one delivery per time
    assert delivered == requested  # everything, exactly once (counts merged)
    assert len(n) == 0 and batch.is_empty()


@settings(max_examples=examples(1000))
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=8),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=3),
)
def test_product_notifications_respect_the_partial_order(
    requests: list[tuple[int, int]], frontier_elems: list[tuple[int, int]]
) -> None:
    batch: ChangeBatch[Product] = ChangeBatch()
    n = Notificator([Capability(Product(*t), batch) for t in requests])
    frontier = Antichain(Product(*t) for t in frontier_elems)
    caps = [cap for cap, _ in n.ready(frontier)]
    out = [cap.time() for cap in caps]
    expected = sorted(
        {Product(*t) for t in requests if not frontier.less_equal(Product(*t))}, key=sort_key
    )
    assert out == expected
    n.ready(Antichain())  # a generator: nothing happens until iterated
    assert sorted(n.pending_times(), key=sort_key) == sorted(
        {Product(*t) for t in requests} - set(expected), key=sort_key
    )
    n.clear()
    assert batch.into_inner() == [(t, 1) for t in expected]  # only the handed-back ones
    for cap in caps:
        cap.drop()
