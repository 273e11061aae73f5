"""Epoch atomicity (Strymon): the property test over random publish schedules.

Times are `Product(a, b)` so several epochs are active at once (the lower frontier has
several elements). Sends for different open times interleave, the lower frontier advances
at random points (by both `advance_lower` and capability-style `update_lower`), and
subscribers join at random moments, with and without filtering.

Properties checked for every subscriber S with initial upper snapshot U:

* atomicity: every `Epoch(t)` S receives holds all rows the publisher ever sent at t
  (filter on), and each t is delivered at most once;
* no gaps: every time t the publisher sent with t not ≤ any element of U is delivered
  (completely) — "later" for partial orders means "not covered by U", not "greater than
  the first delivered time";
* filtering: no t ≤ some element of U is delivered (payloads skipped unread);
* without filtering, S gets exactly the rows sent after it joined, at every time;
* an epoch is released exactly when the lower frontier passes it, the Progress frontiers
  only advance, and released epochs respect the partial order;
* the stream ends with `Progress(Antichain([]))` and `Closed("publisher closed")`.
"""

from __future__ import annotations

from hypothesis import event as note_event
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.pubsub import Closed, Epoch, Progress, covered_by, subscribe_stream
from sealtime.time import Antichain, Product, less_equal, less_than
from tests.conftest import examples
from tests.pubsub.conftest import ids_table, read_all, start

N = 3  # time coordinates in 0..N-1 stay small so times collide and epochs interleave

# One operation: (kind, i, da, db, n, flag). By kind: 0-10 send n rows at
# (lower element #i) + (da, db), always a time that is not complete; 11-15 advance lower
# element #i to its two successors (frontiers get several elements); 16-17 the same through
# update_lower, as a capability holder would; 18-19 a subscriber joins (filter = flag).
op = st.tuples(
    st.integers(0, 19),
    st.integers(0, 3),
    st.integers(0, 2),
    st.integers(0, 2),
    st.integers(0, 3),
    st.booleans(),
)


def _kind(code: int) -> str:
    return "send" if code <= 10 else "advance" if code <= 15 else "update" if code <= 17 else "join"


def _pick(frontier: Antichain, i: int) -> Product:
    elements = frontier.elements()
    return elements[i % len(elements)]


def _successors(e: Product) -> list[Product]:
    return [Product(e.outer + 1, e.inner), Product(e.outer, e.inner + 1)]


@settings(max_examples=examples(ci=150, dev=30), deadline=None)
@given(ops=st.lists(op, min_size=5, max_size=60), first_join=st.integers(0, 60))
def test_epoch_atomicity(ops, first_join):
    publishers: list = []
    subs: list = []
    try:
        pub = start(publishers, "atom", lower=[Product(0, 0)], close_timeout=5)
        sent: dict[Product, list[int]] = {}  # every row id ever sent, per time
        next_id = 0
        # Make sure at least one subscriber exists, joining at a random point.
        ops = list(ops)
        ops.insert(min(first_join, len(ops)), (18, 0, 0, 0, 0, True))
        for code, i, da, db, n, flag in ops:
            kind = _kind(code)
            lower = pub.lower
            if kind == "send" and not lower.is_empty():
                e = _pick(lower, i)
                t = Product(e.outer + da, e.inner + db)
                ids = list(range(next_id, next_id + n))
                next_id += n
                pub.send(t, ids_table(ids))
                sent.setdefault(t, []).extend(ids)
                for sub_record in subs:
                    sub_record["after"].setdefault(t, []).extend(ids)
            elif kind == "advance" and not lower.is_empty():
                e = _pick(lower, i)
                new = Antichain([x for x in lower.elements() if x != e] + _successors(e))
                pub.advance_lower(new)
            elif kind == "update" and not lower.is_empty():
                e = _pick(lower, i)
                pub.update_lower([(s, 1) for s in _successors(e)] + [(e, -1)])
            elif kind == "join":
                sub = subscribe_stream(pub.address, filter=flag, timeout=10)
                assert sub.initial_lower == lower
                assert sub.initial_upper == pub.upper
                subs.append({"sub": sub, "filter": flag, "after": {}, "events": []})
            for record in subs:  # read whatever already arrived (interleaved with sends)
                while (ev := record["sub"].next_event(timeout=0)) is not None:
                    record["events"].append(ev)
        pub.advance_lower([])
        pub.close()

        for record in subs:
            sub = record["sub"]
            events = record["events"] + read_all(sub)
            _check_subscriber(sub, events, sent, record["after"], record["filter"])
    finally:
        for record in subs:
            record["sub"].close()
        for p in publishers:
            p.close()


def _check_subscriber(sub, events, sent, after, filtered):
    upper = sub.initial_upper.elements()
    assert isinstance(events[0], Progress) and events[0].lower == sub.initial_lower
    assert events[-1] == Closed("publisher closed")
    assert events[-2] == Progress(Antichain())

    delivered: dict = {}
    lower = sub.initial_lower
    released_since_progress: list = []
    for event in events[1:-1]:
        if isinstance(event, Epoch):
            t = event.time
            assert t not in delivered, f"time {t} delivered twice"
            assert lower.less_equal(t), f"epoch {t} released after its completion was announced"
            for earlier in delivered:
                assert not less_than(t, earlier), f"{t} delivered after {earlier}"
            delivered[t] = sorted(event.table.column("id").to_pylist())
            released_since_progress.append(t)
        else:
            assert isinstance(event, Progress)
            assert lower <= event.lower, "progress went backwards"
            for t in released_since_progress:
                assert not event.lower.less_equal(t), f"epoch {t} released before complete"
            lower = event.lower
            released_since_progress = []

    if filtered:
        for t, rows in delivered.items():
            assert not covered_by(upper, t), f"{t} is covered by the snapshot {upper}"
            assert rows == sorted(sent[t]), f"epoch {t} is not complete"
        for t in sent:
            if not covered_by(upper, t):
                assert t in delivered, f"time {t} (not covered by {upper}) is missing"
    else:
        # Unfiltered: whatever was sent after joining, partial epochs included.
        expected = {t: sorted(ids) for t, ids in after.items()}
        assert delivered == expected
    note_event(
        f"filter={filtered} delivered>0={bool(delivered)} skipped>0={sub.filtered_messages > 0}"
    )
    note_event(f"max frontier width {max(len(e.lower) for e in events if isinstance(e, Progress))}")
    # Sanity of the snapshot itself: every time sent before joining is covered.
    for t in sent:
        if t not in after or len(after[t]) < len(sent[t]):
            assert any(less_equal(t, u) for u in upper)
