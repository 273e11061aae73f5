"""Benchmark: windowed aggregation, sealtime vs Spark Structured Streaming, same run.

    python bench/bench_windows.py [--events 10000000] [--files 10] [--per-tick 0] [--repeat 3]

Workload: bid-like events from sealtime's generator (10,000 events/s of event time, 2 s
out-of-order jitter), max(price) and count(*) per 10 s tumbling window of event time.
The events are written once as Parquet files (not timed); then, in the same process on
the same SparkSession, alternating, `--repeat` times each:

* Spark Structured Streaming: a file source over the Parquet files, 4 s watermark,
  append mode, ``trigger(availableNow=True)``, all files in one micro-batch (its fastest
  setting), a ``foreachBatch`` sink collecting the emitted windows.
* sealtime: ``Files(dir, format="parquet")`` over the same files -> ingest log -> event
  time ``date_time`` with lateness 4 s -> tumbling window -> aggregate -> a callback sink,
  and the source's ``late`` output -> a callback sink. Timed from `run()` to the end:
  reading the files, the ingest log (zero-copy: the immutable files are hard-linked
  into the log and the late decision is made on the time column), the frontier and the
  Spark work. ``--per-tick 0`` reads everything in one tick, like availableNow.

A second sealtime row (once) runs the same pipeline over sealtime's `Generator` source:
it also generates the events in Python/numpy and copies them into the ingest log.

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

import pandas as pd
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.gen_events import FILE_PATTERN, write_events  # noqa: E402
from bench.machine import describe  # noqa: E402
from bench.spark_ss import batch_windows, run_spark_ss  # noqa: E402
from sealtime.sources.files import Files  # noqa: E402
from sealtime.sources.generator import Generator  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

GEN = {"rate": 10_000, "out_of_order": "2s"}


def files_source(events_dir: str, per_tick: int | None) -> Files:
    return Files(
        events_dir,
        format="parquet",
        schema=Generator().schema,
        pattern=FILE_PATTERN,
        finite=True,
        settle=0,
        max_per_read=per_tick or 2**62,
    )


def run_sealtime(
    spark, data_dir: str, source, per_tick: int | None, sink_late: bool = False
) -> dict:
    """The windowed aggregate; late rows are always decided, logged and counted, and with
    `sink_late` also delivered to a callback sink through the source's `late` output."""
    flow = st.Dataflow("bench-windows", data_dir=data_dir, spark=spark, record=False)
    bids = flow.source("bids", source, time="date_time", lateness="4s", max_rows_per_tick=per_tick)
    per_window = bids.window(st.Tumbling("10s")).aggregate(
        max_price=st.max("price"), count=st.count()
    )
    emitted: list[pa.Table] = []
    late_rows: list[int] = []
    per_window.sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
    if sink_late:
        bids.late.sink(st.sinks.Callback(lambda t, lo, hi: late_rows.append(t.num_rows)))
    t0 = time.perf_counter()
    reports = flow.run()
    seconds = time.perf_counter() - t0
    table = pa.concat_tables(emitted) if emitted else None
    events = sum(r.rows_in for r in reports)
    return {
        "events": events,
        "seconds": seconds,
        "events_per_s": events / seconds,
        "ticks": len(reports),
        "windows": 0 if table is None else table.num_rows,
        "late": flow.metrics()["sources"]["bids"]["late"],
        "late_sunk": sum(late_rows) if sink_late else None,
        "table": table,
    }


def equals_truth(table: pa.Table | None, truth: pd.DataFrame) -> bool:
    if table is None:
        return False
    got = table.to_pandas().sort_values("window_start")
    return (
        len(got) == len(truth)
        and list(got["count"]) == list(truth["count"])
        and list(got["max_price"]) == list(truth["max_price"])
    )


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


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
    # Warm-up: at 10,000 events/s of event time the first rows are sealed only after
    # lateness (4 s) of event time has been read, and a window closes every 1 s after that;
    # measure the steady state, where every tick seals new rows and some emit windows.
    warm = 3 + (5_000 * GEN["rate"] // 1000) // per_tick
    reports = flow.run(ticks=warm + ticks)
    secs = sorted(r.seconds for r in reports[warm:])
    return {
        "ticks": len(secs),
        "p50": statistics.median(secs),
        "p99": secs[min(len(secs) - 1, int(round(0.99 * (len(secs) - 1))))],
        "max": secs[-1],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--per-tick", type=int, default=0, help="rows per tick; 0 = all in one")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each system (alternating)")
    ap.add_argument("--no-generator", action="store_true", help="skip the generator row")
    ap.add_argument("--latency-ticks", type=int, default=40)
    ap.add_argument("--latency-batch", type=int, default=1000)
    ap.add_argument(
        "--out", default=str(Path(__file__).resolve().parent / "results" / "windows.md")
    )
    args = ap.parse_args(argv)
    per_tick = args.per_tick or None

    spark = get_or_create_session(app_name="sealtime-bench")
    work = tempfile.mkdtemp(prefix="sealtime-bench-")
    load_before = _load()
    try:
        events_dir = os.path.join(work, "events")
        write_events(events_dir, args.events, args.files, seed=0, **GEN)
        truth = batch_windows(events_dir).sort_values("window_start")
        # Warm up the JVM for both systems on a small input.
        warm = os.path.join(work, "warm")
        write_events(warm, 100_000, 2, seed=0, **GEN)
        run_spark_ss(
            spark, warm, os.path.join(work, "ckpt-warm"), max_files_per_trigger=None, check=False
        )
        run_sealtime(spark, os.path.join(work, "st-warm"), files_source(warm, None), None)

        ss_runs, sl_runs, lt_runs = [], [], []
        for i in range(args.repeat):
            ss_runs.append(
                run_spark_ss(
                    spark, events_dir, os.path.join(work, f"ckpt-{i}"), max_files_per_trigger=None
                )
            )
            sl = run_sealtime(
                spark, os.path.join(work, f"st-{i}"), files_source(events_dir, per_tick), per_tick
            )
            sl["ok"] = equals_truth(sl.pop("table"), truth)
            sl_runs.append(sl)
            shutil.rmtree(os.path.join(work, f"st-{i}"), ignore_errors=True)
            lt = run_sealtime(
                spark,
                os.path.join(work, f"lt-{i}"),
                files_source(events_dir, per_tick),
                per_tick,
                sink_late=True,
            )
            lt["ok"] = equals_truth(lt.pop("table"), truth)
            lt_runs.append(lt)
            shutil.rmtree(os.path.join(work, f"lt-{i}"), ignore_errors=True)
        gen = None
        if not args.no_generator:
            gen_tick = per_tick or 2_500_000
            gen = run_sealtime(
                spark,
                os.path.join(work, "st-gen"),
                Generator(seed=0, limit=args.events, max_per_read=gen_tick, **GEN),
                gen_tick,
            )
            gen["ok"] = equals_truth(gen.pop("table"), truth)
        lat = tick_latency(spark, os.path.join(work, "lat"), args.latency_ticks, args.latency_batch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = _load()

    def median_run(runs, key="seconds"):
        return sorted(runs, key=lambda r: r[key])[len(runs) // 2]

    ss, sl, lt = median_run(ss_runs), median_run(sl_runs), median_run(lt_runs)
    ratio = sl["events_per_s"] / ss["events_per_s"]
    ratios = [a["events_per_s"] / b["events_per_s"] for a, b in zip(sl_runs, ss_runs)]
    all_ok = all(r["ok"] for r in sl_runs)
    all_windows = all(r["windows"] == len(truth) for r in sl_runs)
    cmd = "python bench/bench_windows.py " + " ".join(argv if argv is not None else sys.argv[1:])
    secs = ", ".join
    tick_desc = "1 tick (all files)" if per_tick is None else f"ticks of {per_tick:,}"
    lines = [
        "## Windowed aggregation: sealtime vs Spark Structured Streaming",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average (1/5/15 min) "
        f"before: {load_before}; after: {load_after} (a shared 2-core machine: other "
        "processes compete for the cores, so wall times are noisy).",
        "",
        f"{args.events:,} bid-like events (10,000 events/s of event time, 2 s jitter) in "
        f"{args.files} Parquet files written before the runs, max(price) and count per 10 s "
        "tumbling event-time window; lateness / watermark 4 s. Both systems in the same "
        f"process on the same SparkSession, alternating, {args.repeat} runs each; the table "
        "shows the median run.",
        "",
        "| system | events/s | seconds | windows emitted | notes |",
        "|---|---:|---:|---:|---|",
        f"| sealtime, Files(parquet) | {sl['events_per_s']:,.0f} | {sl['seconds']:.2f} | "
        f"{sl['windows']} of {len(truth)} | same Parquet files; {sl['ticks']} tick(s), "
        f"{tick_desc}; full pipeline: ingest log (zero-copy links) -> frontier -> window -> "
        f"aggregate -> sink; late rows decided, logged and counted ({sl['late']} late); "
        f"results equal a batch query in every run: {all_ok} |",
        f"| Spark SS | {ss['events_per_s']:,.0f} | {ss['seconds']:.2f} | "
        f"{ss['windows_emitted']} of {ss['distinct_windows']} | file source of the same "
        f"Parquet files, availableNow, {ss['batches']} micro-batches; emitted windows equal "
        f"a batch query: {ss['matches_batch']} |",
        f"| sealtime, Files(parquet) + late sink | {lt['events_per_s']:,.0f} | "
        f"{lt['seconds']:.2f} | {lt['windows']} of {len(truth)} | as above, and the `late` "
        f"output goes to a second callback sink ({lt['late_sunk']} rows); results equal a "
        f"batch query: {all(r['ok'] for r in lt_runs)} (see the note below) |",
    ]
    if gen is not None:
        lines.append(
            f"| sealtime, Generator | {gen['events_per_s']:,.0f} | {gen['seconds']:.2f} | "
            f"{gen['windows']} of {len(truth)} | not comparable: also *generates* the events "
            f"in Python/numpy and copies them into the ingest log; {gen['ticks']} ticks of "
            f"{per_tick or 2_500_000:,}; results equal a batch query: {gen['ok']} |"
        )
    lines += [
        "",
        f"Ratio sealtime / Spark SS (median runs): **{ratio:.2f}x**; per run: "
        + ", ".join(f"{r:.2f}x" for r in ratios)
        + f"; with the late sink: {lt['events_per_s'] / ss['events_per_s']:.2f}x"
        + ". Seconds per run: sealtime "
        + secs(f"{r['seconds']:.2f}" for r in sl_runs)
        + "; sealtime + late sink "
        + secs(f"{r['seconds']:.2f}" for r in lt_runs)
        + "; Spark SS "
        + secs(f"{r['seconds']:.2f}" for r in ss_runs)
        + ".",
        "",
        f"Floor (sealtime >= 1.0x Spark SS and all windows emitted): "
        f"**{'met' if ratio >= 1.0 and all_windows and all_ok else 'NOT met'}**.",
        "",
        "Note on the late sink: the `late` output reads the source's ingest log itself and "
        "is not a consumer of the source's frame, so sinking it adds no work to the main "
        "path (before the coordinator stopped counting it as a consumer, it forced a "
        "checkpoint of the whole tick and this row ran at 0.51x).",
        "",
        f"Per-tick latency, filter -> window -> aggregate -> sink, {args.latency_batch} events "
        f"per tick ({lat['ticks']} ticks after warm-up): p50 {lat['p50'] * 1000:.0f} ms, "
        f"p99 {lat['p99'] * 1000:.0f} ms, max {lat['max'] * 1000:.0f} ms.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
