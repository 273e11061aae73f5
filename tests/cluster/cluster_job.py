"""The dataflow of the cluster tests, run as a script in a child process (a process has
one SparkSession, and the test process has a local one already).

Generator source (event time, lateness 1 s) -> 5 s tumbling window aggregate per channel
(a sink) and a running (unwindowed) aggregate per channel (another sink), both
``st.sinks.Parquet`` under ``<data_dir>/out``. ``record=False`` as in production: state
lives in the data dir (arrangement files, spilled buffers), not in executor memory.

Usage: ``python cluster_job.py MASTER DATA_DIR [PROGRESS_FILE] [--record]``. After each
tick the job writes the tick number to PROGRESS_FILE (atomically, by rename) so that the
test can act mid-run; at the end it prints one JSON line ``{"ticks": n, "seconds": s}``.
With ``--record`` the dataflow keeps its traces (``record=True``, the default of
`st.Dataflow`) and the job writes each sunk collection's ``updates()`` to
``<data_dir>/recorded/<sink>.parquet`` after the run, so the traces, not only the sinks,
are checked after an executor loss.
"""

from __future__ import annotations

import json
import os
import sys
import time

import sealtime as st

__all__ = ["EVENTS", "PER_TICK", "build", "main"]

PER_TICK = 1000
EVENTS = 10 * PER_TICK  # 10 ticks of input (sized for CI)
SEED = 11
#: marks the line that carries the run's result (ticks, seconds) in the job's output
RESULT_PREFIX = "RESULT "


def build(master: str, data_dir: str, record: bool = False) -> tuple[st.Dataflow, dict]:
    """The dataflow on `master` (``local[2]`` or ``spark://...``), state in `data_dir`;
    returns it with its sunk collections by sink name."""
    flow = st.Dataflow(
        "cluster",
        data_dir=data_dir,
        master=master,
        record=record,
        checkpoint_every=3,
        shuffle_partitions=2,
    )
    source = st.sources.Generator(
        seed=SEED, limit=EVENTS, rate=1000, max_per_read=PER_TICK, out_of_order="500ms"
    )
    # lateness >= out_of_order: no record is late, so every event reaches both sinks.
    bids = flow.source("bids", source, time="date_time", lateness="1s", max_rows_per_tick=PER_TICK)
    windows = bids.window(st.Tumbling("5s")).aggregate(
        by="channel", bids=st.count(), max_price=st.max("price"), total=st.sum("price")
    )
    windows.sink(st.sinks.Parquet(os.path.join(data_dir, "out", "windows")))
    running = bids.aggregate(by="channel", bids=st.count(), total=st.sum("price"))
    running.sink(st.sinks.Parquet(os.path.join(data_dir, "out", "running")))
    return flow, {"windows": windows, "running": running}


def main(argv: list[str]) -> int:
    record = "--record" in argv
    argv = [a for a in argv if a != "--record"]
    master, data_dir = argv[0], argv[1]
    progress = argv[2] if len(argv) > 2 else None

    def on_tick(report) -> None:
        if progress:
            tmp = progress + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(report.tick))
            os.replace(tmp, progress)

    started = time.monotonic()
    flow, sunk = build(master, data_dir, record)
    reports = flow.run(on_tick=on_tick)
    if record:
        import pyarrow.parquet as pq

        os.makedirs(os.path.join(data_dir, "recorded"), exist_ok=True)
        for name, collection in sunk.items():
            path = os.path.join(data_dir, "recorded", f"{name}.parquet")
            pq.write_table(collection.updates(), path)
    flow.close()
    result = {"ticks": len(reports), "seconds": round(time.monotonic() - started, 1)}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
