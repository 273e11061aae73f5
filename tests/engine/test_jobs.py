"""Which Spark jobs a tick runs: a stateful operator's state is written even when no sink
computes its output (a sink that skips a range committed before a restart, or no sink)."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

import sealtime as st
from sealtime.arrangement.runs import live_spine, partition_dir
from sealtime.sources.rows import Rows


class SkippingSink(st.sinks.Sink):
    """A sink that never runs the plan it is given (like a range committed before a
    restart, which an exactly-once sink skips)."""

    def __init__(self) -> None:
        self.ranges = []

    def commit(self, delta, lo, hi, context) -> bool:
        self.ranges.append((lo, hi))
        return False


def arrangement_dirs(flow):
    """Each reduce's arrangement directory of the data dir's owner (its epoch's)."""
    root = os.path.join(flow.data_dir, "state")
    out = []
    for d in os.listdir(root):
        if d.endswith("-reduce"):
            base = os.path.join(root, d, "arrangement")
            epochs = sorted(e for e in os.listdir(base) if e.startswith("e"))
            out.append(os.path.join(base, epochs[-1]) if epochs else base)
    return out


def test_state_is_written_when_no_sink_computes_the_output(make_flow):
    items = [(t, {"k": f"k{t % 3}", "v": t}) for t in range(6)]
    flow = make_flow(record=False, shuffle_partitions=2, checkpoint_every=0)
    src = flow.source("s", Rows({"k": "string", "v": "long"}, items, times_per_tick=2))
    sink = SkippingSink()
    src.aggregate(by="k", total=st.sum("v")).sink(sink)
    src.aggregate(by="k", n=st.count())  # no sink at all
    flow.run()
    assert len(sink.ranges) == 3
    dirs = arrangement_dirs(flow)
    assert len(dirs) == 2
    for directory in dirs:
        # the three versions the operator stepped through are in every partition that
        # holds keys (a partition no key hashes to writes no runs)
        parts = [p for p in range(2) if os.path.isdir(str(partition_dir(directory, p)))]
        assert parts
        for p in parts:
            assert live_spine(partition_dir(directory, p), 3)[-1].last == 3


def test_log_output_is_a_chain_of_stateless_operators_over_the_log(make_flow):
    """`Engine.log_output` builds a log-derived node's output over a range spanning
    several ticks as one plan: the same rows as the ticks' outputs together; a node that
    is not derived from one source's log alone is refused."""
    items = [(t, {"k": f"k{t % 3}", "v": t}) for t in range(8)]
    flow = make_flow(record=True, checkpoint_every=0)
    src = flow.source("s", Rows({"k": "string", "v": "long"}, items, times_per_tick=1))
    doubled = src.filter("v % 2 = 0").with_columns(w=F.expr("v * 2"))
    totals = doubled.aggregate(by="k", n=st.count())
    flow.run()
    engine = flow.engine
    node = next(n for n in engine.plan.nodes if n.name == doubled.name)
    again = engine.dataplane.log_output(node, 2, 7).orderBy("_time").collect()
    assert [(r.v, r.w, r._time, r._diff) for r in again] == [(t, 2 * t, t, 1) for t in (2, 4, 6)]
    reduce_node = next(n for n in engine.plan.nodes if n.name == totals.name)
    with pytest.raises(ValueError, match="not derived from one source's log"):
        engine.dataplane.log_output(reduce_node, 2, 7)
