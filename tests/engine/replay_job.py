"""The job of the replay crash test (`sealtime run tests.engine.replay_job:build`): the
crash tests' pipeline with every setting at its default — above all ``truncate_log``
and ``retain_history`` — so that what a default-settings data dir keeps is what the
replay gets.

file source (event time, lateness 2 s) -> 10 s tumbling window aggregate per channel ->
join with a channel table -> Persist sink. ``REPLAY_INPUT`` names the input directory.
"""

from __future__ import annotations

import os

import sealtime as st
from tests.engine.crash_job import CHANNELS, PER_TICK, SCHEMA


def build(data_dir: str, spark=None) -> st.Dataflow:
    flow = st.Dataflow("replayed", data_dir=data_dir, spark=spark)
    files = st.sources.Files(
        os.environ["REPLAY_INPUT"],
        format="jsonl",
        schema=SCHEMA,
        finite=True,
        settle=0,
        max_per_read=PER_TICK,
    )
    bids = flow.source("bids", files, time="ts", lateness="2s", max_rows_per_tick=PER_TICK)
    channels = flow.source(
        "channels",
        st.sources.Rows(
            {"channel": "string", "owner": "string"},
            [(0, {"channel": c, "owner": o}) for c, o in CHANNELS],
        ),
    )
    stats = bids.window(st.Tumbling("10s")).aggregate(
        by="channel", max_price=st.max("price"), bids=st.count()
    )
    stats.join(channels, on="channel").sink(st.sinks.Persist("windows"))
    return flow
