"""Which Spark jobs a tick runs: a stateful operator's state is written even when no sink
computes its output (a sink that skips a range committed before a restart, or no sink)."""

from __future__ import annotations

import os

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
    root = os.path.join(flow.data_dir, "state")
    return [os.path.join(root, d, "arrangement") for d in os.listdir(root) if d.endswith("-reduce")]


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
        # the three versions the operator stepped through are in every partition
        for p in range(2):
            assert live_spine(partition_dir(directory, p), 3)[-1].last == 3
