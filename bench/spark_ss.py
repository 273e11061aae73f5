"""Baseline: Spark Structured Streaming over the generator's Parquet files.

    python bench/spark_ss.py [--events 1000000] [--files 4] [--max-files-per-trigger 1]

The query is the classic event-time window: ``withWatermark("date_time", watermark)``,
tumbling ``window(date_time, 10 s)``, ``max(price)`` and ``count(*)`` per window, append
output mode, ``trigger(availableNow=True)``, a ``foreachBatch`` sink that collects the
emitted windows. In append mode Spark emits a window only once the watermark (max event
time seen − delay) passes its end, so the windows within the delay of the last event are
never emitted by an availableNow run; the result reports emitted vs distinct windows and
checks the emitted ones against a pyarrow batch computation.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

try:
    from sealtime.durations import parse_duration
except ImportError:  # run as a script from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sealtime.durations import parse_duration

__all__ = ["EVENT_SCHEMA_DDL", "batch_windows", "run_spark_ss"]

#: The generator's columns as a Spark DDL schema (a file stream needs it up front).
EVENT_SCHEMA_DDL = (
    "event_id BIGINT, auction BIGINT, bidder BIGINT, price BIGINT, "
    "channel STRING, date_time TIMESTAMP"
)
RESULT_COLUMNS = ["window_start", "window_end", "max_price", "count"]


def _parquet_files(parquet_dir: str | Path) -> list[Path]:
    files = sorted(
        p for p in Path(parquet_dir).glob("*.parquet") if not p.name.startswith(("_", "."))
    )
    if not files:
        raise ValueError(f"parquet_dir={str(parquet_dir)!r}: no .parquet files")
    return files


def batch_windows(parquet_dir: str | Path, window: str = "10 seconds") -> pd.DataFrame:
    """The true per-window (max price, count) of all events, computed with pyarrow.

    Windows are ``[k * size, (k + 1) * size)`` in epoch ms, like Spark's tumbling windows.
    """
    size = parse_duration(window, "window")
    table = pa.concat_tables(
        pq.read_table(f, columns=["date_time", "price"]) for f in _parquet_files(parquet_dir)
    )
    t = table.column("date_time").cast(pa.int64()).to_numpy()
    start = t - np.mod(t, size)
    grouped = (
        pa.table({"start": start, "price": table.column("price")})
        .group_by("start")
        .aggregate([("price", "max"), ("price", "count")])
        .to_pandas()
        .sort_values("start", ignore_index=True)
    )
    return pd.DataFrame(
        {
            "window_start": pd.to_datetime(grouped["start"], unit="ms"),
            "window_end": pd.to_datetime(grouped["start"] + size, unit="ms"),
            "max_price": grouped["price_max"].astype("int64"),
            "count": grouped["price_count"].astype("int64"),
        }
    )


def run_spark_ss(
    spark,
    parquet_dir: str | Path,
    checkpoint_dir: str | Path,
    window: str = "10 seconds",
    watermark: str = "4 seconds",
    *,
    max_files_per_trigger: int | None = 1,
    check: bool = True,
) -> dict[str, Any]:
    """Run the windowed aggregate as a Structured Streaming query over `parquet_dir`.

    `max_files_per_trigger` files per micro-batch (None = all files in one batch).
    `checkpoint_dir` must be missing or empty (a used one would resume and read nothing).
    Returns ``events`` (rows in the files), ``rows_read`` (rows the query read),
    ``seconds`` (wall time from ``start()`` to termination), ``events_per_s``,
    ``batches`` (micro-batches), ``windows_emitted``, ``distinct_windows`` (in the data),
    ``rows_dropped_by_watermark``, ``phase_ms`` (Spark's durationMs summed over the
    micro-batches), ``matches_batch`` (emitted windows equal the pyarrow
    truth; None when `check` is False) and ``results`` (pandas: window_start, window_end,
    max_price, count, sorted).
    """
    from pyspark.sql import functions as F

    files = _parquet_files(parquet_dir)
    ckpt = Path(checkpoint_dir)
    if ckpt.exists() and any(ckpt.iterdir()):
        raise ValueError(
            f"checkpoint_dir={str(ckpt)!r} is not empty: the query would resume from it; "
            "pass a new directory"
        )
    events = sum(pq.ParquetFile(f).metadata.num_rows for f in files)

    reader = spark.readStream.schema(EVENT_SCHEMA_DDL)
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    stream = reader.parquet(str(Path(parquet_dir).resolve()))
    query_df = (
        stream.withWatermark("date_time", watermark)
        .groupBy(F.window("date_time", window))
        .agg(F.max("price").alias("max_price"), F.count(F.lit(1)).alias("count"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "max_price",
            "count",
        )
    )
    emitted: list[pd.DataFrame] = []

    def collect(batch_df, batch_id: int) -> None:
        emitted.append(batch_df.toPandas())

    writer = (
        query_df.writeStream.outputMode("append")
        .option("checkpointLocation", str(ckpt.resolve()))
        .trigger(availableNow=True)
        .foreachBatch(collect)
    )
    t0 = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    if query.exception() is not None:
        raise RuntimeError(f"Spark Structured Streaming query failed: {query.exception()}")
    progress = [json.loads(p.json) for p in query.recentProgress]
    rows_read = sum(int(p.get("numInputRows", 0)) for p in progress)
    dropped = sum(
        int(op.get("numRowsDroppedByWatermark", 0))
        for p in progress
        for op in p.get("stateOperators", [])
    )
    phase_ms: dict[str, int] = {}
    for p in progress:
        for phase, ms in (p.get("durationMs") or {}).items():
            phase_ms[phase] = phase_ms.get(phase, 0) + int(ms)
    results = (
        pd.concat(emitted, ignore_index=True)
        if emitted
        else pd.DataFrame({c: pd.Series(dtype="int64") for c in RESULT_COLUMNS})
    )
    results = results.sort_values("window_start", ignore_index=True)[RESULT_COLUMNS]
    truth = batch_windows(parquet_dir, window) if check else None
    matches = None
    if truth is not None:
        merged = results.merge(truth, on=["window_start", "window_end"], suffixes=("", "_t"))
        matches = len(merged) == len(results) and bool(
            (merged["max_price"] == merged["max_price_t"]).all()
            and (merged["count"] == merged["count_t"]).all()
        )
    return {
        "events": events,
        "rows_read": rows_read,
        "seconds": seconds,
        "events_per_s": events / seconds if seconds > 0 else float("inf"),
        "batches": len(progress),
        "windows_emitted": len(results),
        "distinct_windows": None if truth is None else len(truth),
        "rows_dropped_by_watermark": dropped,
        "phase_ms": phase_ms,
        "matches_batch": matches,
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-of-order", default="0s", help="generator jitter, e.g. 2s")
    p.add_argument("--late-fraction", type=float, default=0.0)
    p.add_argument("--window", default="10 seconds")
    p.add_argument("--watermark", default="4 seconds")
    p.add_argument(
        "--max-files-per-trigger", type=int, default=1, help="0 = all files in one micro-batch"
    )
    p.add_argument("--work-dir", help="where data and checkpoint go (default: a temp dir)")
    args = p.parse_args(argv)

    try:
        from bench.gen_events import write_events
    except ImportError:  # run as `python bench/spark_ss.py`: bench/ is on sys.path
        from gen_events import write_events
    from sealtime.spark.session import get_or_create_session

    with tempfile.TemporaryDirectory(prefix="sealtime-spark-ss-", dir=args.work_dir) as tmp:
        data_dir, ckpt = Path(tmp) / "events", Path(tmp) / "checkpoint"
        t0 = time.perf_counter()
        write_events(
            data_dir,
            args.events,
            args.files,
            args.seed,
            out_of_order=args.out_of_order,
            late_fraction=args.late_fraction,
        )
        gen_seconds = time.perf_counter() - t0
        spark = get_or_create_session()
        out = run_spark_ss(
            spark,
            data_dir,
            ckpt,
            window=args.window,
            watermark=args.watermark,
            max_files_per_trigger=args.max_files_per_trigger or None,
        )
        out.pop("results")
        out["generate_and_write_seconds"] = round(gen_seconds, 3)
        out["files"] = args.files
        out["max_files_per_trigger"] = args.max_files_per_trigger or None
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
