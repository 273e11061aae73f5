"""The dataflow of the ownership tests (`sealtime run tests.engine.ownership_job:build`).

bids (files, event time, lateness 2 s) -> 10 s tumbling windows per channel (count, max
price) -> Persist sink; running total of prices per channel -> Parquet sink under the
data dir. Checkpoints every 3 ticks with log truncation, so a takeover restores
arrangements, spills and logs written by the previous owner.

A gate holds a run still at a known point, outside any transaction of the metadata
store: with ``OWN_GATE=<file>``, the first sink (a callback on the bids, committed
first in each tick) creates ``<file>.waiting`` at its ``OWN_GATE_AT``-th range and waits
until ``<file>`` exists. Environment: ``OWN_INPUT`` (the input directory),
``OWN_METADATA`` (a PostgreSQL URL; default the data dir's SQLite file).
"""

from __future__ import annotations

import os
import time

import sealtime as st

SCHEMA = {"bid": "long", "channel": "string", "price": "long", "ts": "long"}
PER_TICK = 200


def build(data_dir: str, spark=None) -> st.Dataflow:
    flow = st.Dataflow(
        "own",
        data_dir=data_dir,
        spark=spark,
        metadata=os.environ.get("OWN_METADATA") or None,
        record=False,
        checkpoint_every=3,
        truncate_log=True,
        shuffle_partitions=2,
    )
    src = st.sources.Files(
        os.environ["OWN_INPUT"],
        format="jsonl",
        schema=SCHEMA,
        finite=True,
        settle=0,
        max_per_read=PER_TICK,
    )
    bids = flow.source("bids", src, time="ts", lateness="2s", max_rows_per_tick=PER_TICK)
    bids.select("bid").sink(st.sinks.Callback(Gate(), skip_empty=False))
    windows = bids.window(st.Tumbling("10s")).aggregate(
        by="channel", max_price=st.max("price"), bids=st.count()
    )
    windows.sink(st.sinks.Persist("windows"))
    totals = bids.aggregate(by="channel", total=st.sum("price"))
    totals.sink(st.sinks.Parquet(os.path.join(data_dir, "out", "totals")))
    return flow


class Gate:
    """The callback that holds the run at its ``OWN_GATE_AT``-th range (see above)."""

    def __init__(self) -> None:
        self.path = os.environ.get("OWN_GATE")
        self.at = int(os.environ.get("OWN_GATE_AT", "2"))
        self.calls = 0

    def __call__(self, table, lo, hi) -> None:
        self.calls += 1
        if self.path is None or self.calls != self.at:
            return
        open(self.path + ".waiting", "w").close()
        while not os.path.exists(self.path):
            time.sleep(0.05)  # (waits for the test to open the gate)
