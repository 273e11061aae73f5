"""`col.publish(..., mode="view")`, `partitions=N` and dataflow-to-dataflow subscriptions,
on a real Dataflow (Spark), checked against `to_spark(as_of=t)` / `updates()`."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pyarrow as pa

import sealtime as st
from sealtime.pubsub import Closed, Epoch, Progress, Snapshot, SubscribeError, subscribe_view
from sealtime.pubsub.catalog import open_catalog
from sealtime.sinks.publish import Publish
from sealtime.sources.rows import Rows
from sealtime.time import Antichain
from tests.pubsub.proxy import FaultProxy

COLS = ["k", "n", "total"]


def _rows() -> list:
    rows = [(t, {"k": "abc"[t % 3], "v": t}) for t in range(6)]
    rows += [(t, {"k": "d", "v": 10 * t}) for t in (1, 4)]
    return rows + [(3, {"k": "a", "v": 0}, -1), (5, {"k": "d", "v": 10}, -1)]


def _accumulate(view: Counter, table: pa.Table) -> None:
    for r in table.to_pylist():
        view[tuple(r[c] for c in COLS)] += r["_diff"]
        if view[tuple(r[c] for c in COLS)] == 0:
            del view[tuple(r[c] for c in COLS)]


def _follow(
    address, record: list, epochs: list, stop: threading.Event, reasons: list, state: dict
) -> int:
    """Follow a view through faults: reconnect from the last progress after every cut.
    Records (lower, accumulated view) at each progress and (time, rows) per epoch."""
    view: Counter = Counter()
    lower = None
    reconnects = 0
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            sub = subscribe_view(address, lower, timeout=5)
        except SubscribeError as exc:
            reasons.append(str(exc))
            reconnects += 1
            time.sleep(0.01)
            continue
        state["sub"] = sub
        with sub:
            while time.monotonic() < deadline:
                event = sub.next_event(timeout=0.5)
                if event is None:
                    if stop.is_set():
                        return reconnects
                    continue
                if isinstance(event, Snapshot):
                    assert lower is None, "a resumed subscription must not get a snapshot"
                    view.clear()  # cut before its first progress: start again from scratch
                    _accumulate(view, event.table)
                elif isinstance(event, Epoch):
                    # No gap and no duplicate: epochs come once, in time order, each at a
                    # time at or after the frontier we resumed from.
                    assert lower is None or lower.less_equal(event.time), (lower, event.time)
                    assert not epochs or event.time > epochs[-1][0], (event.time, epochs[-1][0])
                    epochs.append((event.time, event.table.num_rows))
                    _accumulate(view, event.table)
                elif isinstance(event, Progress):
                    lower = event.lower
                    record.append((lower, Counter(view)))
                    if lower.is_empty():
                        return reconnects
                elif isinstance(event, Closed):
                    reasons.append(event.reason)
                    reconnects += 1
                    break
    return reconnects


def _oracle(col, t: int) -> Counter:
    return Counter(tuple(r[c] for c in COLS) for r in col.to_spark(as_of=t).collect())


def test_view_through_faulty_proxy_matches_to_spark_and_survives_restart(make_flow, tmp_path):
    flow = make_flow()
    src = flow.source("s", Rows({"k": "string", "v": "long"}, _rows(), times_per_tick=1))
    agg = src.aggregate(by="k", n=st.count(), total=st.sum("v"))
    agg.publish("totals", mode="view")
    sink = flow.publications["totals"]
    proxy = FaultProxy(sink.address, seed=7, cut=0.12, duplicate=0.2, delay=0.2)
    record: list = []
    epochs: list = []
    stop = threading.Event()
    result: dict = {}
    reasons: list = []
    state: dict = {}

    def follow() -> None:
        try:
            result["reconnects"] = _follow(proxy.address, record, epochs, stop, reasons, state)
        except BaseException as exc:  # surface failures of the reader thread
            result["error"] = exc

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    for _ in range(8):
        flow.run(ticks=1)
        time.sleep(0.05)
    reader.join(60)
    sub = state.get("sub")
    conn = sub._conns[0] if sub is not None else None
    debug = (
        None
        if conn is None
        else (
            len(conn.decoder._buf),
            conn.decoder._skipping,
            conn.decoder._header,
            conn.seq,
            list(sub._events),
            sub._awaiting_sync,
            sub._closed,
            proxy.frames,
            [(s.cursor, s.reason) for s in sink.publisher._subs],
            sink.publisher._base + len(sink.publisher._log),
        )
    )
    stop.set()
    proxy.close()
    assert "error" not in result, repr(result["error"])
    assert record and record[-1][0].is_empty(), (
        f"the subscriber never saw the end: {record[-1][0] if record else None}, "
        f"reasons {reasons[-10:]}, publisher {sink.publisher.lower} "
        f"{[d.reason for d in sink.publisher.disconnections][-10:]} {debug}"
    )
    assert proxy.cuts >= 1 and proxy.duplicates >= 1, (proxy.cuts, proxy.duplicates)
    assert result["reconnects"] >= 1
    # At every progress point the accumulated view is the view as of that time.
    want_times = sorted(set(agg.updates().column("_time").to_pylist()))
    assert [t for t, _ in epochs] == want_times  # every epoch exactly once
    checked = 0
    for lower, view in record:
        if lower.is_empty():
            assert view == _oracle(agg, want_times[-1])
            checked += 1
        elif lower.elements()[0] > 0:
            assert view == _oracle(agg, lower.elements()[0] - 1), lower
            checked += 1
    assert checked >= 4

    # Restart: the publishers (and their memory) go away; a new publication process on the
    # same store and history dir serves the durable history to a resuming subscriber.
    sink.close()
    schema = sink.schema
    again = Publish(
        "totals",
        mode="view",
        schema=schema,
        store=flow.metadata_store,
        history_dir=f"{flow.data_dir}/publish",
    )
    try:
        assert again.publisher.lower.is_empty()  # the view is finished and durable
        resume = Antichain([want_times[2]])
        with subscribe_view(again.address, resume, timeout=10) as sub:
            replayed = []
            while (event := sub.next_event(timeout=10)) is not None:
                if isinstance(event, Epoch):
                    replayed.append((event.time, event.table.num_rows))
                if isinstance(event, Progress | Closed):
                    break
        assert replayed == [e for e in epochs if e[0] >= want_times[2]]
    finally:
        again.close()


def test_group_over_three_partitions_merges_frontiers_like_brute_force(make_flow):
    flow = make_flow()
    rows = [(t, {"k": f"key{i}", "v": t * i}) for t in range(4) for i in range(12)]
    src = flow.source("s", Rows({"k": "string", "v": "long"}, rows, times_per_tick=1))
    agg = src.aggregate(by="k", total=st.sum("v"))
    agg.publish("parts", partitions=3, by="k")
    sink = flow.publications["parts"]
    entries = open_catalog(flow.data_dir).entry("parts")
    assert [e.partition for e in entries] == [0, 1, 2]
    assert len({e.address for e in entries}) == 3
    assert entries[0].arrow_schema.names == ["k", "total", "_diff"]
    group = st.subscribe("parts", catalog=flow.data_dir, timeout=10)
    singles = [st.subscribe(e.address, timeout=10) for e in entries]
    progress: list = []
    brute: list = []
    got: dict = {}
    for _ in range(6):
        flow.run(ticks=1)
        # Brute force: a time is complete iff it is complete in every partition.
        lowers = [set(p.lower.elements()) for p in sink.publishers]
        candidates = set().union(*lowers)
        merged = sorted(t for t in candidates if not any(u < t for u in candidates))
        if not brute or brute[-1] != merged:
            brute.append(merged)
        deadline = time.monotonic() + 20
        while (not progress or progress[-1] != merged) and time.monotonic() < deadline:
            event = group.next_event(timeout=1)
            if isinstance(event, Progress):
                progress.append(sorted(event.lower.elements()))
            elif isinstance(event, Epoch):
                got.setdefault(event.time, []).extend(event.table.to_pylist())
    assert progress[1:] == brute[-len(progress) + 1 :] and progress[-1] == []
    want: dict = {}
    for r in agg.updates().to_pylist():
        want.setdefault(r.pop("_time"), []).append(r)
    key = lambda r: repr(sorted(r.items()))  # noqa: E731
    assert {t: sorted(v, key=key) for t, v in got.items()} == {
        t: sorted(v, key=key) for t, v in want.items()
    }
    # Deterministic split by key: every key lives in exactly one partition, all are used.
    keys_by_part = []
    for sub in singles:
        keys = set()
        for event in sub:
            if isinstance(event, Epoch):
                keys |= set(event.table.column("k").to_pylist())
            if isinstance(event, Progress) and event.lower.is_empty():
                break
        keys_by_part.append(keys)
        sub.close()
    assert all(keys_by_part) and sum(map(len, keys_by_part)) == 12
    group.close()


def test_dataflow_to_dataflow_keeps_times_and_frontiers(make_flow):
    upstream = make_flow()
    src = upstream.source("s", Rows({"k": "string", "v": "long"}, _rows(), times_per_tick=2))
    agg = src.aggregate(by="k", n=st.count(), total=st.sum("v"))
    agg.publish("totals", mode="view")
    downstream = make_flow()
    source = st.sources.Subscription("totals", catalog=upstream.data_dir, mode="view", finite=True)
    assert source.schema.names == COLS
    copy = downstream.source("in", source)
    # Subscribe before the upstream seals anything: every update then arrives as an epoch
    # at its own time (a later join would get a snapshot stamped just below its as_of).
    downstream.run(ticks=1)
    frontiers = []
    for _ in range(6):
        upstream.run(ticks=1)
        pub_lower = upstream.publications["totals"].publisher.lower
        deadline = time.monotonic() + 10
        while True:  # the downstream frontier follows the publisher's lower frontier
            downstream.run(ticks=1)
            f = downstream.metrics()["sources"]["in"]["frontier"]
            want = pub_lower.elements()[0] if pub_lower.elements() else None
            if f == want or time.monotonic() > deadline:
                frontiers.append((f, want))
                break
            time.sleep(0.05)
    assert all(f == w for f, w in frontiers), frontiers
    assert frontiers[-1] == (None, None)
    assert copy.updates().to_pylist() == agg.updates().to_pylist()
