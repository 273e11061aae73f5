"""Group subscriptions over several partitions: merged frontiers against brute force,
cross-partition epoch atomicity, partitions that finish or fail."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.pubsub import Closed, Epoch, Progress, covered_by, subscribe_group
from sealtime.time import Antichain, Product, less_than
from tests.conftest import examples
from tests.pubsub.conftest import ids_table, read_all, start


def brute_min(times) -> set:
    """Minimal elements of a set of times, by exhaustive comparison."""
    times = set(times)
    return {t for t in times if not any(less_than(u, t) for u in times)}


def brute_max(times) -> set:
    """Maximal elements of a set of times, by exhaustive comparison."""
    times = set(times)
    return {t for t in times if not any(less_than(t, u) for u in times)}


def _await_lower(sub, expected: set, events: list, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while set(sub.lower.elements()) != expected:
        left = deadline - time.monotonic()
        assert left > 0, f"merged lower {sub.lower} never reached {expected}"
        event = sub.next_event(timeout=left)
        assert event is not None and not isinstance(event, Closed), event
        events.append(event)


# (kind, partition, i, da, db, n): 0-9 send n rows on a partition at (lower element i) +
# (da, db); 10-15 advance lower element i of a partition to its successors; 16 finish a
# partition (empty lower); 17-19 a group subscriber joins.
op = st.tuples(
    st.integers(0, 19),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 1),
    st.integers(0, 1),
    st.integers(1, 3),
)


@settings(max_examples=examples(ci=40, dev=10), deadline=None)
@given(
    n_parts=st.integers(3, 4),
    ops=st.lists(op, min_size=5, max_size=40),
    first_join=st.integers(0, 40),
)
def test_group_frontiers_match_brute_force(n_parts, ops, first_join):
    pubs: list = []
    subs: list = []
    try:
        for p in range(n_parts):
            start(pubs, "grp", partition=p, lower=[Product(0, 0)])
        sent: dict = {}
        next_id = 0
        ops = list(ops)
        ops.insert(min(first_join, len(ops)), (17, 0, 0, 0, 0, 0))
        for code, p, i, da, db, n in ops:
            pub = pubs[p % n_parts]
            lower = pub.lower
            if code <= 9 and not lower.is_empty():
                e = lower.elements()[i % len(lower)]
                t = Product(e.outer + da, e.inner + db)
                ids = list(range(next_id, next_id + n))
                next_id += n
                pub.send(t, ids_table(ids))
                sent.setdefault(t, []).extend(ids)
            elif code <= 15 and not lower.is_empty():
                e = lower.elements()[i % len(lower)]
                succ = [Product(e.outer + 1, e.inner), Product(e.outer, e.inner + 1)]
                pub.advance_lower([x for x in lower.elements() if x != e] + succ)
            elif code == 16:
                pub.advance_lower([])
            elif code >= 17:
                uppers = [q.upper.elements() for q in pubs]
                lowers = [q.lower.elements() for q in pubs]
                sub = subscribe_group([q.address for q in pubs], timeout=10)
                # The merged snapshot: maximal antichain of the union of the uppers, minimal
                # antichain of the union of the lowers.
                assert set(sub.initial_upper.elements()) == brute_max(
                    t for upper in uppers for t in upper
                )
                assert set(sub.initial_lower.elements()) == brute_min(
                    t for lower in lowers for t in lower
                )
                assert sub.partitions == list(range(n_parts))
                subs.append((sub, []))
            expected = brute_min(t for q in pubs for t in q.lower.elements())
            for sub, events in subs:
                _await_lower(sub, expected, events)
        for pub in pubs:
            pub.advance_lower([])
            pub.close()
        for sub, events in subs:
            events.extend(read_all(sub))
            _check_group_events(sub, events, sent)
    finally:
        for sub, _ in subs:
            sub.close()
        for pub in pubs:
            pub.close()


def _check_group_events(sub, events, sent) -> None:
    upper = sub.initial_upper.elements()
    assert events[-1] == Closed("publisher closed")
    assert events[-2] == Progress(Antichain())
    delivered = {}
    for event in events:
        if isinstance(event, Epoch):
            assert event.time not in delivered
            delivered[event.time] = sorted(event.table.column("id").to_pylist())
    for t, ids in sent.items():
        if covered_by(upper, t):
            assert t not in delivered, f"{t} is covered by {upper}"
        else:
            # All rows of t, from every partition, in one epoch.
            assert delivered.get(t) == sorted(ids), f"epoch {t} incomplete or missing"
    assert set(delivered) <= set(sent)


def test_group_epoch_waits_for_every_partition(publishers):
    pubs = [start(publishers, "g", partition=p) for p in range(3)]
    sub = subscribe_group([p.address for p in pubs], timeout=10)
    assert sub.next_event(timeout=5) == Progress(Antichain([0]))
    for p in pubs:
        p.send(0, ids_table([p.partition]))
    pubs[0].advance_lower([1])
    pubs[1].advance_lower([1])
    # Two of three partitions sealed time 0: nothing may be delivered yet.
    assert sub.next_event(timeout=0.3) is None
    pubs[2].advance_lower([1])
    epoch = sub.next_event(timeout=5)
    assert isinstance(epoch, Epoch) and epoch.time == 0
    assert sorted(epoch.table.column("id").to_pylist()) == [0, 1, 2]
    assert sub.next_event(timeout=5) == Progress(Antichain([1]))
    sub.close()


def test_group_partition_failure_ends_subscription_without_partial_epochs(publishers):
    pubs = [start(publishers, "g", partition=p, close_timeout=2) for p in range(3)]
    sub = subscribe_group([p.address for p in pubs], timeout=10)
    for p in pubs:
        p.send(5, ids_table([p.partition]))
    pubs[1].close()  # not finished: its lower frontier is still [0]
    events = read_all(sub)
    assert not any(isinstance(e, Epoch) for e in events)
    assert isinstance(events[-1], Closed)
    assert events[-1].reason.startswith("partition 1 (127.0.0.1:")
    assert events[-1].reason.endswith("publisher closed")


def test_group_partition_that_finished_may_leave(publishers):
    pubs = [start(publishers, "g", partition=p) for p in range(3)]
    sub = subscribe_group([p.address for p in pubs], timeout=10)
    pubs[0].send(1, ids_table([10]))
    pubs[0].advance_lower([])
    pubs[0].close()  # finished, then gone: the group goes on
    for p in pubs[1:]:
        p.send(1, ids_table([p.partition]))
        p.send(2, ids_table([p.partition + 20]))
        p.advance_lower([2])
    events = []
    _await_lower(sub, {2}, events)
    epochs = [e for e in events if isinstance(e, Epoch)]
    assert [(e.time, sorted(e.table.column("id").to_pylist())) for e in epochs] == [(1, [1, 2, 10])]
    for p in pubs[1:]:
        p.advance_lower([])
        p.close()
    events = read_all(sub)
    assert [(e.time, sorted(e.table.column("id").to_pylist())) for e in events[:-2]] == [
        (2, [21, 22])
    ]
    assert events[-2:] == [Progress(Antichain()), Closed("publisher closed")]


def test_group_rejects_mixed_streams_and_duplicate_partitions(publishers):
    a0 = start(publishers, "a", partition=0)
    a0_again = start(publishers, "a", partition=0)
    b1 = start(publishers, "b", partition=1)
    with pytest.raises(ValueError, match="one stream"):
        subscribe_group([a0.address, b1.address], timeout=10)
    with pytest.raises(ValueError, match="duplicate partitions"):
        subscribe_group([a0.address, a0_again.address], timeout=10)
