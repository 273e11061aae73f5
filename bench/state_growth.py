"""Benchmark: a running aggregate as its state grows, sealtime vs Spark Structured Streaming.

    python bench/state_growth.py [--part both|a|b] [--repeat 3]
        [--keys 100000,500000,1000000,2000000,5000000] [--ticks 10]

The query is ``group by key: sum(value), count()`` in ingestion time (no event-time
column) over Parquet files of ``--rows-per-file`` (100,000) rows ``(key bigint, value
bigint)``, written before the runs (not timed). Both systems run in the same process on
the same SparkSession over the same files, in *streaming shape*: one file per sealtime
tick (``Files(..., max_per_read=<rows per file>)``) and one file per Spark SS
micro-batch (``maxFilesPerTrigger=1``, ``trigger(availableNow=True)``, update output
mode). The sinks are equivalent: each tick's / micro-batch's updated rows are collected
as Arrow through the same function, `sealtime.spark.frames.to_arrow` (sealtime
``st.sinks.Callback``; Spark SS ``foreachBatch`` calling it). sealtime's updates are differential (a changed key
is a retraction of its old row plus its new row); Spark's update mode sends the new row.

* (a) throughput: ``--keys-a`` (200,000) distinct keys, ``--files`` (10) files with keys
  uniform at random; events/s = rows / wall time of the run, alternating the systems,
  ``--repeat`` runs each after a warm-up run of each; per-tick p50/p99 over the ticks of
  all runs.
* (b) per-tick time against state size: for each K of ``--keys``, the state is first
  built by K / rows-per-file files that insert every key once (a random permutation of
  0..K-1 cut into files of rows-per-file rows: build ticks in the same streaming shape),
  then ``--ticks`` (10) files of rows-per-file rows with keys uniform among the K;
  per-tick p50/p99 over those measured ticks, for both systems.

Results are checked: sealtime's accumulated output (updates consolidated by summing
``_diff``) and Spark SS's final value per key (its last update) must equal a plain batch
aggregation (pyarrow) of all the input files. Results go to
bench/results/state_growth.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.machine import describe  # noqa: E402
from sealtime.sources.files import Files  # noqa: E402
from sealtime.spark.frames import to_arrow  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

__all__ = [
    "consolidated",
    "load_average",
    "percentile",
    "prepare_spark",
    "run_spark_query",
    "stamp_in_order",
    "tick_stats",
]

SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.int64())])
DDL = "key BIGINT, value BIGINT"
PATTERN = "part-*.parquet"
STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
RESULTS = Path(__file__).resolve().parent / "results"


# ---------------------------------------------------------------------- shared helpers
def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (as in bench_windows.py); p99 of < 100 values is the max."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def tick_stats(seconds: Sequence[float]) -> dict[str, Any]:
    if not seconds:
        return {"n": 0, "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {
        "n": len(seconds),
        "p50": statistics.median(seconds),
        "p99": percentile(seconds, 0.99),
        "max": max(seconds),
    }


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def stamp_in_order(paths: Sequence[Path]) -> None:
    """Give the files strictly increasing modification times (1 s apart) in name order:
    Spark's file source takes files in modification-time order, sealtime's `Files` in
    name order, so both read them in the same order."""
    base = time.time() - len(paths) - 60
    for i, p in enumerate(paths):
        os.utime(p, (base + i, base + i))


def prepare_spark(shuffle_partitions: int, state_store: str | None = None):
    """The shared SparkSession (sealtime's defaults), with the benchmark's settings."""
    spark = get_or_create_session(app_name="sealtime-bench")
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    # Keep the progress of every micro-batch (default: the last 100).
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    if state_store is not None:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", STATE_STORES[state_store])
    return spark


def run_spark_query(
    query_df,
    mode: str,
    checkpoint_dir: str,
    on_batch: Callable[[Any, int], None],
) -> dict[str, Any]:
    """Run a streaming DataFrame with ``trigger(availableNow=True)`` and a foreachBatch
    sink `on_batch`; return the wall ``seconds`` (from start() to termination) and the
    ``progress`` of every micro-batch (dicts of StreamingQueryProgress)."""
    if os.path.exists(checkpoint_dir) and os.listdir(checkpoint_dir):
        raise ValueError(f"checkpoint_dir={checkpoint_dir!r} is not empty: pass a new one")
    writer = (
        query_df.writeStream.outputMode(mode)
        .option("checkpointLocation", checkpoint_dir)
        .trigger(availableNow=True)
        .foreachBatch(on_batch)
    )
    t0 = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    if query.exception() is not None:
        raise RuntimeError(f"Spark Structured Streaming query failed: {query.exception()}")
    progress = sorted(
        (json.loads(p.json) for p in query.recentProgress), key=lambda p: p["batchId"]
    )
    if progress and len(progress) != progress[-1]["batchId"] + 1:
        raise RuntimeError(
            f"kept the progress of {len(progress)} of {progress[-1]['batchId'] + 1} micro-batches; "
            "raise spark.sql.streaming.numRecentProgressUpdates"
        )
    return {"seconds": seconds, "progress": progress}


def batch_seconds(progress: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(seconds of the micro-batches that read rows, seconds of those that read none),
    from ``durationMs.triggerExecution``."""
    data, empty = [], []
    for p in progress:
        ms = (p.get("durationMs") or {}).get("triggerExecution", 0) / 1000
        (data if int(p.get("numInputRows", 0)) > 0 else empty).append(ms)
    return data, empty


def consolidated(tables: list[pa.Table], columns: list[str]) -> pd.DataFrame:
    """Accumulated contents of a stream of differential updates: sum ``_diff`` per row of
    `columns`, drop zeros. Returns the rows with their net multiplicity ``_diff``."""
    if not tables:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in [*columns, "_diff"]})
    t = pa.concat_tables([x.select([*columns, "_diff"]) for x in tables])
    g = t.group_by(columns, use_threads=False).aggregate([("_diff", "sum")]).to_pandas()
    g = g.rename(columns={"_diff_sum": "_diff"})
    return g[g["_diff"] != 0].reset_index(drop=True)


# ---------------------------------------------------------------------- data
def write_files(out_dir: Path, key_arrays: list[np.ndarray], rng: np.random.Generator) -> int:
    """One Parquet file of ``(key, value)`` per array of keys; values random in [0, 1000)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, keys in enumerate(key_arrays):
        values = rng.integers(0, 1000, len(keys), dtype=np.int64)
        path = out_dir / f"part-{i:05d}.parquet"
        pq.write_table(
            pa.table({"key": keys.astype(np.int64), "value": values}, schema=SCHEMA), path
        )
        paths.append(path)
    stamp_in_order(paths)
    return sum(len(k) for k in key_arrays)


def uniform_files(out_dir: Path, keys: int, files: int, rows: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    return write_files(
        out_dir, [rng.integers(0, keys, rows, dtype=np.int64) for _ in range(files)], rng
    )


def growth_files(out_dir: Path, keys: int, ticks: int, rows: int, seed: int) -> tuple[int, int]:
    """Build files (every key of 0..keys-1 once, shuffled) then `ticks` uniform files.
    Returns (rows, build files)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(keys).astype(np.int64)
    build = [perm[i : i + rows] for i in range(0, keys, rows)]
    touch = [rng.integers(0, keys, rows, dtype=np.int64) for _ in range(ticks)]
    return write_files(out_dir, build + touch, rng), len(build)


def truth_of(files_dir: Path) -> pd.DataFrame:
    t = pq.read_table(files_dir, schema=SCHEMA)
    g = t.group_by("key").aggregate([("value", "sum"), ("value", "count")]).to_pandas()
    return pd.DataFrame({"key": g["key"], "s": g["value_sum"], "n": g["value_count"]})


def same_rows(got: pd.DataFrame, truth: pd.DataFrame) -> bool:
    cols = ["key", "s", "n"]
    if len(got) != len(truth):
        return False
    a = got[cols].astype("int64").sort_values("key", ignore_index=True)
    b = truth[cols].astype("int64").sort_values("key", ignore_index=True)
    return bool((a.to_numpy() == b.to_numpy()).all())


# ---------------------------------------------------------------------- systems
def run_sealtime(spark, data_dir: str, files_dir: Path, rows_per_file: int, truth=None) -> dict:
    flow = st.Dataflow("bench-state-growth", data_dir=data_dir, spark=spark, record=False)
    src = Files(
        str(files_dir),
        format="parquet",
        schema=SCHEMA,
        pattern=PATTERN,
        finite=True,
        settle=0,
        max_per_read=rows_per_file,
    )
    totals = flow.source("rows", src).aggregate(by="key", s=st.sum("value"), n=st.count())
    emitted: list[pa.Table] = []
    totals.sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
    t0 = time.perf_counter()
    reports = flow.run()
    seconds = time.perf_counter() - t0
    flow.close()
    rows = sum(r.rows_in for r in reports)
    out: dict[str, Any] = {
        "rows": rows,
        "seconds": seconds,
        "events_per_s": rows / seconds,
        "ticks": len(reports),
        "tick_seconds": [r.seconds for r in reports if r.rows_in > 0],
        "empty_tick_seconds": [r.seconds for r in reports if r.rows_in == 0],
        "updates": sum(t.num_rows for t in emitted),
        "ok": None,
    }
    if truth is not None:
        acc = consolidated(emitted, ["key", "s", "n"])
        out["ok"] = bool((acc["_diff"] == 1).all()) and same_rows(acc, truth)
    return out


def run_spark_ss(spark, files_dir: Path, checkpoint_dir: str, truth=None) -> dict:
    from pyspark.sql import functions as F

    stream = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(files_dir))
    query_df = stream.groupBy("key").agg(F.sum("value").alias("s"), F.count(F.lit(1)).alias("n"))
    emitted: list[tuple[int, pa.Table]] = []
    # The same collector as sealtime's Callback sink: `frames.to_arrow` (Arrow files
    # written by the tasks in local mode), not `toArrow()`.
    run = run_spark_query(
        query_df, "update", checkpoint_dir, lambda df, bid: emitted.append((bid, to_arrow(df)))
    )
    data, empty = batch_seconds(run["progress"])
    rows = sum(int(p.get("numInputRows", 0)) for p in run["progress"])
    out: dict[str, Any] = {
        "rows": rows,
        "seconds": run["seconds"],
        "events_per_s": rows / run["seconds"],
        "ticks": len(run["progress"]),
        "tick_seconds": data,
        "empty_tick_seconds": empty,
        "updates": sum(t.num_rows for _, t in emitted),
        "ok": None,
    }
    if truth is not None:
        emitted.sort(key=lambda x: x[0])
        frames = [t.to_pandas() for _, t in emitted]
        allrows = pd.concat(frames, ignore_index=True) if frames else truth.iloc[:0]
        final = allrows.drop_duplicates("key", keep="last")
        out["ok"] = same_rows(final, truth)
    return out


def warm_up(spark, work: Path, rows_per_file: int, systems: set[str]) -> None:
    """A short run of each system (2 files), so that the JVM is warm; not reported."""
    warm = work / "warm"
    uniform_files(warm, 2 * rows_per_file, 2, rows_per_file, seed=99)
    if "spark" in systems:
        run_spark_ss(spark, warm, str(work / "ckpt-warm"))
    if "sealtime" in systems:
        run_sealtime(spark, str(work / "st-warm"), warm, rows_per_file)
    shutil.rmtree(warm, ignore_errors=True)


# ---------------------------------------------------------------------- parts
def part_a(spark, work: Path, args, systems: set[str]) -> dict:
    files_dir = work / "a-files"
    uniform_files(files_dir, args.keys_a, args.files, args.rows_per_file, seed=1)
    truth = truth_of(files_dir)
    runs: dict[str, list[dict]] = {"sealtime": [], "spark": []}
    for i in range(args.repeat):
        # alternating rounds: Spark SS first in even rounds, sealtime first in odd ones
        for system in ("spark", "sealtime") if i % 2 == 0 else ("sealtime", "spark"):
            if system not in systems:
                continue
            if system == "spark":
                r = run_spark_ss(spark, files_dir, str(work / f"a-ckpt-{i}"), truth)
            else:
                d = str(work / f"a-st-{i}")
                r = run_sealtime(spark, d, files_dir, args.rows_per_file, truth)
                shutil.rmtree(d, ignore_errors=True)
            runs[system].append(r)
            name = "Spark SS" if system == "spark" else "sealtime"
            print(f"(a) run {i}: {name} {r['seconds']:.2f} s", flush=True)
    shutil.rmtree(files_dir, ignore_errors=True)
    return runs


def part_b(spark, work: Path, args, systems: set[str]) -> list[dict]:
    rows_out = []
    for k in args.keys:
        files_dir = work / f"b-files-{k}"
        total, n_build = growth_files(files_dir, k, args.ticks, args.rows_per_file, seed=k)
        truth = truth_of(files_dir)
        row: dict[str, Any] = {"keys": k, "rows": total, "build": n_build}
        for system in ("spark", "sealtime"):
            if system not in systems:
                continue
            try:
                if system == "spark":
                    r = run_spark_ss(spark, files_dir, str(work / f"b-ckpt-{k}"), truth)
                else:
                    d = str(work / f"b-st-{k}")
                    r = run_sealtime(spark, d, files_dir, args.rows_per_file, truth)
                    shutil.rmtree(d, ignore_errors=True)
            except Exception as exc:  # report a failure at one K, go on with the others
                r = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
                print(f"(b) K={k:,} {system} failed: {r['error']}", flush=True)
            else:
                ticks = r["tick_seconds"]
                r["build_stats"] = tick_stats(ticks[:n_build])
                r["stats"] = tick_stats(ticks[n_build:])
                print(
                    f"(b) K={k:,} {system}: measured p50 {r['stats']['p50']:.3f} s, "
                    f"p99 {r['stats']['p99']:.3f} s, ok={r['ok']}",
                    flush=True,
                )
            row[system] = r
        shutil.rmtree(files_dir, ignore_errors=True)
        rows_out.append(row)
    return rows_out


# ---------------------------------------------------------------------- report
def _ms(x: float) -> str:
    return "-" if x != x else f"{x * 1000:,.0f}"


def report_a(runs: dict[str, list[dict]], args) -> str:
    def median_run(rs):
        return sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2] if rs else None

    sl, ss = median_run(runs["sealtime"]), median_run(runs["spark"])
    lines = [
        "### (a) Streaming-shape throughput",
        "",
        f"{args.files} files x {args.rows_per_file:,} rows, keys uniform among "
        f"{args.keys_a:,}; one file per sealtime tick / Spark SS micro-batch; {args.repeat} "
        "runs of each system in alternating rounds (Spark SS first in even rounds, sealtime "
        "first in odd ones), after one warm-up run of each "
        "on 2 other files; the table shows the median run (by wall time); per-tick "
        "percentiles are over the ticks / micro-batches that read a file, in all runs "
        "(p99 of fewer than 100 ticks is their maximum).",
        "",
        "| system | events/s | seconds | ticks | per-tick p50 ms | per-tick p99 ms | "
        "updates sent to the sink | equals batch aggregate |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r, rs in (
        ("sealtime", sl, runs["sealtime"]),
        ("Spark SS", ss, runs["spark"]),
    ):
        if r is None:
            lines.append(f"| {name} | not run | | | | | | |")
            continue
        pooled = tick_stats([s for x in rs for s in x["tick_seconds"]])
        empty = sum(len(x["empty_tick_seconds"]) for x in rs)
        lines.append(
            f"| {name} | {r['events_per_s']:,.0f} | {r['seconds']:.2f} | {r['ticks']}"
            + (f" ({empty} without rows, all runs)" if empty else "")
            + f" | {_ms(pooled['p50'])} | {_ms(pooled['p99'])} | {r['updates']:,} | "
            f"{all(x['ok'] for x in rs)} (all runs) |"
        )
    if sl is not None and ss is not None:
        ratios = [
            a["events_per_s"] / b["events_per_s"] for a, b in zip(runs["sealtime"], runs["spark"])
        ]
        lines += [
            "",
            f"Ratio sealtime / Spark SS events/s (median runs): "
            f"**{sl['events_per_s'] / ss['events_per_s']:.2f}x**; per run: "
            + ", ".join(f"{x:.2f}x" for x in ratios)
            + ". Seconds per run: sealtime "
            + ", ".join(f"{x['seconds']:.2f}" for x in runs["sealtime"])
            + "; Spark SS "
            + ", ".join(f"{x['seconds']:.2f}" for x in runs["spark"])
            + ".",
        ]
    return "\n".join(lines)


def report_b(rows: list[dict], args) -> str:
    lines = [
        "### (b) Per-tick time against state size",
        "",
        f"For each K: the state is built by ceil(K / {args.rows_per_file:,}) files that insert "
        "every key once (a random permutation of 0..K-1; build ticks in the same streaming "
        f"shape), then {args.ticks} measured files of {args.rows_per_file:,} rows with keys "
        "uniform among the K. A new sealtime dataflow and a new Spark SS query (new "
        "checkpoint) per K, Spark SS first. Percentiles are over the measured ticks / "
        "micro-batches only (p99 of fewer than 100 ticks is their maximum); the build "
        "columns are the p50 of the build ticks. The time ratio column is sealtime's p50 "
        "divided by Spark SS's (below 1 = sealtime faster).",
        "",
        "| keys K | build ticks | sealtime p50 ms | sealtime p99 ms | sealtime build p50 ms | "
        "Spark SS p50 ms | Spark SS p99 ms | Spark SS build p50 ms | p50 time sealtime / Spark SS "
        "| equals batch aggregate (sealtime / Spark SS) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def cells(r):
        if r is None:
            return ["not run"] * 3, "-"
        if "error" in r:
            return [f"failed: {r['error']}", "", ""], "-"
        return [
            _ms(r["stats"]["p50"]),
            _ms(r["stats"]["p99"]),
            _ms(r["build_stats"]["p50"]),
        ], str(r["ok"])

    for row in rows:
        sl, ss = row.get("sealtime"), row.get("spark")
        c_sl, ok_sl = cells(sl)
        c_ss, ok_ss = cells(ss)
        ratio = "-"
        if sl and ss and "stats" in sl and "stats" in ss:
            ratio = f"{sl['stats']['p50'] / ss['stats']['p50']:.2f}x"
        lines.append(
            f"| {row['keys']:,} | {row['build']} | "
            + " | ".join(c_sl)
            + " | "
            + " | ".join(c_ss)
            + f" | {ratio} | {ok_sl} / {ok_ss} |"
        )

    def p50(system: str, k: int) -> float | None:
        for row in rows:
            r = row.get(system)
            if row["keys"] == k and r and "stats" in r:
                return r["stats"]["p50"]
        return None

    ks = [row["keys"] for row in rows]
    lines.append("")
    if ks:
        lo, hi = min(ks), max(ks)
        for system, label in (("sealtime", "sealtime"), ("spark", "Spark SS")):
            a, b = p50(system, lo), p50(system, hi)
            if a and b:
                lines.append(f"{label}: p50({hi:,} keys) / p50({lo:,} keys) = **{b / a:.2f}x**.")
        a, b = p50("sealtime", lo), p50("sealtime", hi)
        if lo == 100_000 and hi == 5_000_000 and a and b:
            verdict = "met" if b / a <= 1.5 else "NOT met"
            lines.append("")
            lines.append(
                "Target (sealtime's per-tick p50 at 5M keys at most 1.5x its p50 at 100k keys): "
                f"**{verdict}** ({b / a:.2f}x)."
            )
        elif a and b:
            lines.append("")
            lines.append(
                "Target (p50 at 5M keys <= 1.5x p50 at 100k keys): not evaluated, this run's "
                f"key counts are {', '.join(f'{k:,}' for k in ks)}."
            )
    return "\n".join(lines)


_SECTION = re.compile(r"<!-- part (\w) -->\n(.*?)<!-- /part \1 -->", re.S)


def write_report(path: Path, header: str, sections: dict[str, str]) -> str:
    """Write the header and both parts; a part not run this time keeps its section from
    the existing file (each section names its own command and date)."""
    old = dict(_SECTION.findall(path.read_text(encoding="utf-8"))) if path.exists() else {}
    parts = [header]
    for name in ("a", "b"):
        body = sections.get(name) or old.get(name, "").strip()
        if body:
            parts.append(f"<!-- part {name} -->\n{body.strip()}\n<!-- /part {name} -->")
    text = "\n\n".join(parts) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["both", "a", "b"], default="both")
    ap.add_argument("--rows-per-file", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=10, help="(a) files / ticks per run")
    ap.add_argument("--keys-a", type=int, default=200_000, help="(a) distinct keys")
    ap.add_argument("--repeat", type=int, default=5, help="(a) runs of each system")
    ap.add_argument(
        "--keys",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[100_000, 500_000, 1_000_000, 2_000_000, 5_000_000],
        help="(b) state sizes, comma-separated",
    )
    ap.add_argument("--ticks", type=int, default=10, help="(b) measured ticks per K")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument(
        "--spark-state-store",
        choices=sorted(STATE_STORES),
        default="hdfs",
        help="Spark SS state store provider (hdfs = Spark's default)",
    )
    ap.add_argument("--systems", default="sealtime,spark", help="which systems to run")
    ap.add_argument("--work-dir", help="where files, logs and checkpoints go (default: temp)")
    ap.add_argument("--out", default=str(RESULTS / "state_growth.md"))
    args = ap.parse_args(argv)
    systems = {s.strip() for s in args.systems.split(",") if s.strip()}
    if not systems <= {"sealtime", "spark"}:
        ap.error("--systems: use sealtime, spark or both")

    spark = prepare_spark(args.shuffle_partitions, args.spark_state_store)
    work = Path(tempfile.mkdtemp(prefix="sealtime-state-growth-", dir=args.work_dir))
    cmd = "python bench/state_growth.py " + " ".join(argv if argv is not None else sys.argv[1:])
    stamp = (
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average (1/5/15 min) "
        f"before: {load_average()}"
    )
    sections: dict[str, str] = {}
    try:
        warm_up(spark, work, args.rows_per_file, systems)
        if args.part in ("both", "a"):
            runs = part_a(spark, work, args, systems)
            sections["a"] = f"{stamp}; after: {load_average()}.\n\n" + report_a(runs, args)
        if args.part in ("both", "b"):
            rows = part_b(spark, work, args, systems)
            sections["b"] = f"{stamp}; after: {load_average()}.\n\n" + report_b(rows, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    header = "\n".join(
        [
            "## Running aggregate and state growth: sealtime vs Spark Structured Streaming",
            "",
            "`group by key: sum(value), count()` in ingestion time over Parquet files of "
            "`(key bigint, value bigint)`, both systems in the same process on the same "
            "SparkSession (local[*], `spark.sql.shuffle.partitions` = "
            f"{args.shuffle_partitions}, Spark SS state store: {args.spark_state_store}"
            f"{' (Spark default)' if args.spark_state_store == 'hdfs' else ''}), in "
            "streaming shape: one file per sealtime tick (`Files(max_per_read=rows per "
            "file)`) and per Spark SS micro-batch (`maxFilesPerTrigger=1`, availableNow, "
            "update mode). The same collector: the updated rows of each tick / micro-batch are "
            "collected as Arrow through `sealtime.spark.frames.to_arrow` (sealtime "
            "`st.sinks.Callback`; Spark SS `foreachBatch` calling the same function); sealtime's updates are differential (old row retracted, new row "
            "added), Spark's are the new rows. sealtime tick time = `TickReport.seconds`; "
            "Spark SS micro-batch time = `durationMs.triggerExecution`. SparkSession start "
            "and file writing are not timed. sealtime runs with the `Dataflow` defaults (soft "
            "checkpoint every 50 ticks, log truncation) and `record=False`; Spark SS commits "
            "offsets and state every micro-batch. A shared 2-core machine: wall times are "
            "noisy.",
            "",
            "Results are checked against a batch aggregation (pyarrow) of all input files: "
            "sealtime's accumulated updates (summed `_diff`) and Spark SS's last update per "
            "key.",
        ]
    )
    text = write_report(Path(args.out), header, sections)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
