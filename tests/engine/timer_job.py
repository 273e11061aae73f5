"""The dataflow of the timer determinism test, as a job
(`sealtime run tests.engine.timer_job:build`).

readings (files, event time, lateness 1 s) and a `Timer(every="3s")` → the sensors of
the readings plus a ``"timer"`` key per firing → ``timeout(by="sensor", after="2s")`` →
Persist sink ``silent``; the firings → Persist sink ``fired``. Checkpoints every 4
ticks (log truncation unless ``TIMER_TRUNCATE=0``, which replay needs).

The ticker's clock is injected and advances one second per tick (a function of the
tick number the engine restores from its bindings), so a run killed and restarted mints
the same binding times as one that never stopped — the test compares outputs, not
wall-clock luck. Input directory: ``TIMER_INPUT``.
"""

from __future__ import annotations

import os

from pyspark.sql import functions as F

import sealtime as st

SCHEMA = {"sensor": "string", "value": "long", "ts": "long"}
BASE = 1_700_000_000_000
PER_TICK = 20
TICKS = 30


def build(data_dir: str, spark=None) -> st.Dataflow:
    holder: list[st.Dataflow] = []

    def clock() -> float:
        engine = holder[0].engine if holder and holder[0].started else None
        return (BASE + 1_000 * (engine.tick_no if engine is not None else 0)) / 1000

    flow = st.Dataflow(
        "timers",
        data_dir=data_dir,
        spark=spark,
        clock=clock,
        record=False,
        checkpoint_every=4,
        truncate_log=os.environ.get("TIMER_TRUNCATE", "1") == "1",
        shuffle_partitions=2,
    )
    holder.append(flow)
    readings = flow.source(
        "readings",
        st.sources.Files(
            os.environ["TIMER_INPUT"],
            format="jsonl",
            schema=SCHEMA,
            finite=True,
            settle=0,
            max_per_read=PER_TICK,
        ),
        time="ts",
        lateness="1s",
        max_rows_per_tick=PER_TICK,
    )
    fired = flow.source("timer", st.sources.Timer(every="3s"))
    fired.sink(st.sinks.Persist("fired"))
    beats = fired.select(F.lit("timer").alias("sensor"))
    keys = readings.select("sensor").union(beats)
    keys.timeout(by="sensor", after="2s").sink(st.sinks.Persist("silent"))
    return flow
