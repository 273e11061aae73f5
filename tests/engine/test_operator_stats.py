"""Per-operator rows in/out and state rows measured inside the kernels' Spark tasks
(`TickReport.operators`) equal the true counts of a small known dataflow."""

from __future__ import annotations

import pyarrow.compute as pc

import sealtime as st

ROWS = [
    (5, {"k": "a", "v": 1}),
    (5, {"k": "b", "v": 2}),
    (9, {"k": "a", "v": 3}),
    (9, {"k": "c", "v": 4}),
    (12, {"k": "a", "v": 5}),
    (12, {"k": "d", "v": 6}),
    (12, {"k": "d", "v": 7}),
]
NAMES = [(0, {"k": "a", "name": "alpha"}), (9, {"k": "c", "name": "gamma"})]


def _in_range(updates, lo, hi) -> int:
    t = updates.column("_time")
    keep = pc.greater_equal(t, lo if lo is not None else -(2**63))
    if hi is not None:
        keep = pc.and_(keep, pc.less(t, hi))
    return int(pc.sum(keep.cast("int64")).as_py() or 0)


def test_kernel_counts_equal_true_counts(make_flow):
    flow = make_flow()
    src = flow.source("s", st.sources.Rows({"k": "string", "v": "long"}, ROWS))
    names = flow.source("names", st.sources.Rows({"k": "string", "name": "string"}, NAMES))
    agg = src.aggregate(by="k", n=st.count(), total=st.sum("v"))
    joined = agg.join(names, on="k")
    kept = src.filter("v > 0")
    kept.sink(st.sinks.Callback(lambda *a: None))
    reports = flow.run()
    assert len(reports) >= 2, "the test wants several ticks"

    ins = {agg.node.id: [src.updates()], joined.node.id: [agg.updates(), names.updates()]}
    outs = {agg.node.id: agg.updates(), joined.node.id: joined.updates()}
    for r in reports:
        for nid in (agg.node.id, joined.node.id):
            s = r.operators[nid]
            assert s.counting == "kernel"
            lo, hi = r.sealed[nid]
            assert s.rows_in == sum(_in_range(u, lo, hi) for u in ins[nid]), (r.tick, nid)
            assert s.rows_out == _in_range(outs[nid], lo, hi), (r.tick, nid)
            # (planning is driver time inside the tick; the kernel's time is measured)
            assert 0 <= s.plan_seconds <= r.seconds, (r.tick, nid)
            assert s.kernel_seconds is not None, (r.tick, nid)
        # The aggregate's state: one row per key seen so far.
        hi = r.sealed[agg.node.id][1]
        seen = {row["k"] for t, row in ROWS if hi is None or t < hi}
        assert r.operators[agg.node.id].state_rows == len(seen), r.tick
        # Stateless operators are fused into their consumer's stage: no made-up count.
        f = r.operators[kept.node.id]
        assert f.counting == "fused" and f.rows_in is None and f.rows_out is None
        # Sources: rows read this tick.
        assert r.operators[src.node.id].counting == "source"
    assert sum(r.operators[src.node.id].rows_in for r in reports) == len(ROWS)
    # Over the run, the aggregate took every input update once.
    assert sum(r.operators[agg.node.id].rows_in for r in reports) == len(ROWS)
    assert sum(r.operators[agg.node.id].kernel_seconds for r in reports) > 0
