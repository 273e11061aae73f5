"""View mode (SUBSCRIBE-like): snapshot + updates + progress, resume with no gap/duplicate."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.pubsub import (
    Closed,
    Epoch,
    InMemoryHistory,
    Progress,
    Publisher,
    Snapshot,
    SubscribeError,
    subscribe_view,
)
from sealtime.time import Antichain, Product
from tests.conftest import examples
from tests.pubsub.conftest import read_all, start


def updates(pairs: list[tuple[str, int]]) -> pa.Table:
    keys = [k for k, _ in pairs]
    diffs = [d for _, d in pairs]
    return pa.Table.from_arrays(
        [pa.array(keys, pa.string()), pa.array(diffs, pa.int64())], names=["k", "_diff"]
    )


def accumulate(counter: Counter, table: pa.Table) -> None:
    if table.num_rows == 0:
        return
    summed = table.group_by("k").aggregate([("_diff", "sum")])
    for k, d in zip(summed.column("k").to_pylist(), summed.column("_diff_sum").to_pylist()):
        counter[k] += d
        if counter[k] == 0:
            del counter[k]


_SUMS: dict = {}


def _summed(table: pa.Table) -> Counter:
    key = id(table)
    if key not in _SUMS:
        acc: Counter = Counter()
        accumulate(acc, table)
        _SUMS[key] = (table, acc)  # keep the table alive so its id stays unique
    return _SUMS[key][1]


def oracle(history: list, lower: Antichain) -> Counter:
    """The view's contents at `lower`: all updates at times not ≥ it, consolidated."""
    acc: Counter = Counter()
    for t, table in history:
        if not lower.less_equal(t):
            acc.update(_summed(table))
    return Counter({k: v for k, v in acc.items() if v})


def replay(events: list, history: list, counter: Counter | None = None) -> Counter:
    """Accumulate a view subscriber's events, checking it against the oracle at each Progress."""
    acc: Counter = Counter() if counter is None else counter
    seen: set = set()
    for event in events:
        if isinstance(event, Snapshot):
            accumulate(acc, event.table)
            assert acc == oracle(history, event.as_of)
        elif isinstance(event, Epoch):
            assert event.time not in seen, f"updates of {event.time} delivered twice"
            seen.add(event.time)
            accumulate(acc, event.table)
        elif isinstance(event, Progress):
            assert acc == oracle(history, event.lower), f"view differs at {event.lower}"
    return acc


op = st.tuples(
    st.integers(0, 9),  # 0-5 send, 6-8 advance, 9 join
    st.integers(0, 3),
    st.integers(0, 1),
    st.integers(0, 1),
    st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from([-1, 1, 2])), max_size=4),
)


@settings(max_examples=examples(ci=30, dev=10), deadline=None)
@given(ops=st.lists(op, min_size=3, max_size=40))
def test_view_subscribers_see_the_oracle_at_every_progress(ops):
    history: list = []
    subs: list = []
    pub = Publisher("view", lower=[Product(0, 0)], history=InMemoryHistory()).start()
    try:
        ops = [(9, 0, 0, 0, []), *ops]
        for code, i, da, db, pairs in ops:
            lower = pub.lower
            if code <= 5 and pairs:
                e = lower.elements()[i % len(lower)]
                t = Product(e.outer + da, e.inner + db)
                pub.send(t, updates(pairs))
                history.append((t, updates(pairs)))
            elif 6 <= code <= 8:
                e = lower.elements()[i % len(lower)]
                succ = [Product(e.outer + 1, e.inner), Product(e.outer, e.inner + 1)]
                pub.advance_lower([x for x in lower.elements() if x != e] + succ)
            elif code == 9:
                subs.append(subscribe_view(pub.address, timeout=10))
        pub.advance_lower([])
        pub.close()
        total = oracle(history, Antichain())
        for sub in subs:
            events = read_all(sub)
            assert isinstance(events[0], Snapshot)
            assert events[-2:] == [Progress(Antichain()), Closed("publisher closed")]
            assert replay(events, history) == total
    finally:
        for sub in subs:
            sub.close()
        pub.close()


def test_view_resumes_after_falling_behind_without_gap_or_duplicate(publishers):
    pub = start(publishers, "resume", max_queue_bytes=1 << 20, history=InMemoryHistory())
    history: list = []
    sub = subscribe_view(pub.address, timeout=10)
    events: list = []
    n = 300
    for t in range(n):
        table = updates([(f"k{t % 7}", 1 if t % 3 else -1)] * 4000)  # ~56 kB per epoch
        pub.send(t, table)
        history.append((t, table))
        pub.advance_lower([t + 1])
        if t == 60:  # read a little, then stall
            while len([e for e in events if isinstance(e, Epoch)]) < 10:
                events.append(sub.next_event(timeout=5))
    # The stalled view subscriber was cut off; it drains what reached it, then resumes.
    assert any("fell behind" in d.reason for d in pub.disconnections)
    events += read_all(sub)
    assert "fell behind at time" in events[-1].reason
    acc = replay(events[:-1], history)
    resume_from = sub.lower  # the last Progress it saw
    assert not resume_from.is_empty() and resume_from.elements()[0] < n
    again = subscribe_view(pub.address, resume_from=resume_from, timeout=10)
    more = []
    while not more or more[-1] != Progress(Antichain([n])):
        more.append(again.next_event(timeout=5))
    assert not any(isinstance(e, Snapshot) for e in more)
    times = [e.time for e in events + more if isinstance(e, Epoch)]
    assert times == list(range(n))  # every time exactly once, in order
    assert replay(more, history, acc) == oracle(history, Antichain([n]))
    again.close()


def test_view_resume_below_since_or_beyond_lower_is_refused(publishers):
    history = InMemoryHistory()
    pub = start(publishers, "since", history=history)
    for t in range(5):
        pub.send(t, updates([("a", 1)]))
        pub.advance_lower([t + 1])
    history.compact(Antichain([3]))  # a durable provider would do this as readers advance
    with pytest.raises(SubscribeError, match="compacted up to since"):
        subscribe_view(pub.address, resume_from=[1], timeout=10)
    with pytest.raises(SubscribeError, match="beyond the lower frontier"):
        subscribe_view(pub.address, resume_from=[9], timeout=10)
    sub = subscribe_view(pub.address, resume_from=[3], timeout=10)
    assert [e.time for e in (sub.next_event(timeout=5) for _ in range(2)) if isinstance(e, Epoch)]
    sub.close()
    snap = subscribe_view(pub.address, timeout=10).next_event(timeout=5)
    assert isinstance(snap, Snapshot) and snap.table.to_pylist() == [{"k": "a", "_diff": 5}]


def test_publisher_with_history_needs_updates():
    pub = Publisher("diff", history=InMemoryHistory())
    with pytest.raises(ValueError, match="_diff"):
        pub.send(0, pa.Table.from_arrays([pa.array([1])], names=["x"]))


def test_view_options_are_checked():
    with pytest.raises(ValueError, match="per partition"):
        from sealtime.pubsub import Subscription

        Subscription(["127.0.0.1:1", "127.0.0.1:2"], mode="view")
    with pytest.raises(ValueError, match="stream mode keeps no history"):
        from sealtime.pubsub import subscribe_stream  # noqa: F401
        from sealtime.pubsub.subscriber import Subscription as S

        S(["127.0.0.1:1"], resume=[0])
