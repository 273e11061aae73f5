"""Benchmark: windowed aggregation, sealtime vs Spark Structured Streaming, same run.

    python bench/bench_windows.py [--events 10000000] [--per-tick 2500000]

Workload: bid-like events from sealtime's generator (10,000 events/s of event time, 2 s
out-of-order jitter), max(price) and count(*) per 10 s tumbling window of event time.

* sealtime: generator -> ingest log (Parquet) -> event time with lateness 4 s -> window
  -> aggregate -> a callback sink; timed from `run()` to the end, including generating
  the events and writing the ingest log. Every window is emitted once, when sealed, and
  the last ones when the source ends.
* Spark Structured Streaming: a file source over the same events already written as
  Parquet (writing them is not timed), 4 s watermark, append mode,
  ``trigger(availableNow=True)``, all files in one micro-batch (its fastest setting).

Also: per-tick latency of a 3-operator pipeline (filter -> window -> aggregate) at small
batches. Results go to bench/results/windows.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.gen_events import write_events  # noqa: E402
from bench.machine import describe  # noqa: E402
from bench.spark_ss import batch_windows, run_spark_ss  # noqa: E402
from sealtime.sources.generator import Generator  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

GEN = {"rate": 10_000, "out_of_order": "2s"}


def run_sealtime(spark, data_dir: str, events: int, per_tick: int) -> dict:
    flow = st.Dataflow("bench-windows", data_dir=data_dir, spark=spark, record=False)
    bids = flow.source(
        "bids",
        Generator(seed=0, limit=events, max_per_read=per_tick, **GEN),
        time="date_time",
        lateness="4s",
        max_rows_per_tick=per_tick,
    )
    late = bids.late
    per_window = bids.window(st.Tumbling("10s")).aggregate(
        max_price=st.max("price"), count=st.count()
    )
    emitted: list[pa.Table] = []
    late_rows: list[int] = []
    per_window.sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
    late.sink(st.sinks.Callback(lambda t, lo, hi: late_rows.append(t.num_rows)))
    t0 = time.perf_counter()
    reports = flow.run()
    seconds = time.perf_counter() - t0
    table = pa.concat_tables(emitted) if emitted else None
    return {
        "events": events,
        "seconds": seconds,
        "events_per_s": events / seconds,
        "ticks": len(reports),
        "windows": 0 if table is None else table.num_rows,
        "late": sum(late_rows),
        "table": table,
    }


def tick_latency(spark, data_dir: str, ticks: int, per_tick: int) -> dict:
    flow = st.Dataflow("bench-latency", data_dir=data_dir, spark=spark, record=False)
    bids = flow.source(
        "bids",
        Generator(seed=1, **GEN),
        time="date_time",
        lateness="4s",
        max_rows_per_tick=per_tick,
    )
    out = bids.filter("price > 0").window(st.Tumbling("1s")).aggregate(by="channel", n=st.count())
    out.sink(st.sinks.Callback(lambda t, lo, hi: None))
    reports = flow.run(ticks=ticks)
    secs = sorted(r.seconds for r in reports[3:])  # after warm-up
    return {
        "ticks": len(secs),
        "p50": statistics.median(secs),
        "p99": secs[min(len(secs) - 1, int(round(0.99 * (len(secs) - 1))))],
        "max": secs[-1],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--per-tick", type=int, default=2_500_000)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--latency-ticks", type=int, default=40)
    ap.add_argument("--latency-batch", type=int, default=1000)
    ap.add_argument(
        "--out", default=str(Path(__file__).resolve().parent / "results" / "windows.md")
    )
    args = ap.parse_args(argv)

    spark = get_or_create_session(app_name="sealtime-bench")
    work = tempfile.mkdtemp(prefix="sealtime-bench-")
    try:
        events_dir = os.path.join(work, "events")
        write_events(events_dir, args.events, args.files, seed=0, **GEN)
        truth = batch_windows(events_dir)
        # Warm up the JVM for both systems on a small input.
        warm = os.path.join(work, "warm")
        write_events(warm, 100_000, 2, seed=0, **GEN)
        run_spark_ss(
            spark, warm, os.path.join(work, "ckpt-warm"), max_files_per_trigger=None, check=False
        )
        run_sealtime(spark, os.path.join(work, "st-warm"), 100_000, 50_000)

        ss = run_spark_ss(spark, events_dir, os.path.join(work, "ckpt"), max_files_per_trigger=None)
        sl = run_sealtime(spark, os.path.join(work, "st"), args.events, args.per_tick)
        got = sl["table"].to_pandas().sort_values("window_start")
        truth = truth.sort_values("window_start")
        ok = (
            len(got) == len(truth)
            and list(got["count"]) == list(truth["count"])
            and list(got["max_price"]) == list(truth["max_price"])
        )
        lat = tick_latency(spark, os.path.join(work, "lat"), args.latency_ticks, args.latency_batch)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ratio = sl["events_per_s"] / ss["events_per_s"]
    cmd = "python bench/bench_windows.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "## Windowed aggregation: sealtime vs Spark Structured Streaming",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`.",
        "",
        f"{args.events:,} bid-like events (10,000 events/s of event time, 2 s jitter), max(price) and "
        "count per 10 s tumbling event-time window; lateness / watermark 4 s.",
        "",
        "| system | events/s | seconds | windows emitted | notes |",
        "|---|---:|---:|---:|---|",
        f"| sealtime | {sl['events_per_s']:,.0f} | {sl['seconds']:.2f} | {sl['windows']} of {len(truth)} | "
        f"{sl['ticks']} ticks of {args.per_tick:,}; includes generating + logging the events; "
        f"{sl['late']} late; results equal a batch query: {ok} |",
        f"| Spark SS | {ss['events_per_s']:,.0f} | {ss['seconds']:.2f} | {ss['windows_emitted']} of {ss['distinct_windows']} | "
        f"file source of pre-written Parquet, availableNow, {ss['batches']} micro-batches; "
        f"emitted windows equal a batch query: {ss['matches_batch']} |",
        "",
        f"Ratio sealtime / Spark SS: **{ratio:.2f}x**.",
        "",
        f"Per-tick latency, filter -> window -> aggregate -> sink, {args.latency_batch} events per tick "
        f"({lat['ticks']} ticks after warm-up): p50 {lat['p50'] * 1000:.0f} ms, p99 {lat['p99'] * 1000:.0f} ms, "
        f"max {lat['max'] * 1000:.0f} ms.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
