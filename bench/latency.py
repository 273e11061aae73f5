"""Benchmark: tick latency at 1,000 rows per tick, sealtime vs Spark Structured Streaming.

    python bench/latency.py [--ticks 60] [--warmup 10] [--per-tick 1000] [--rate 1000]

Input is Parquet files of ``--per-tick`` rows, written before the runs (not timed), one
file per sealtime tick (``Files(..., max_per_read=<rows per file>)``) and per Spark SS
micro-batch (``maxFilesPerTrigger=1``, ``trigger(availableNow=True)``); both systems run
in the same process on the same SparkSession over the same files. ``--warmup`` files
come first and their ticks are not measured; before that, a short run of each system
over other files warms the JVM. sealtime's tick time is ``TickReport.seconds`` (from
``flow.run(on_tick=...)``), Spark SS's micro-batch time is
``durationMs.triggerExecution``.

1. Windowed pipeline: bids from bench/gen_events.py (``--rate`` events per second of
   event time, 2 s out-of-order jitter) -> 10 s tumbling windows of ``date_time`` ->
   per channel ``max(price)``, ``count()``; lateness 4 s (sealtime) / watermark 4 s
   (Spark SS, append mode) -> a sink collecting the emitted windows as Arrow.
2. SMILE-shaped view: ``Sellers(item_id, price, qty)`` (``--items`` rows, one file) and
   two streams ``BuyersWest(item_id, qty)``, ``BuyersEast(item_id, qty)`` of
   ``--per-tick / 2`` rows per file; ``west.union(east)`` -> sum of qty per item ->
   join with sellers -> ``avail = qty - total`` -> ``avail > 0`` -> a sink. Spark SS
   rejects this query (stream-stream join after an aggregation) in every output mode;
   the errors are quoted. For context two Spark SS variants that do run are measured
   and checked: sellers as a static table (stream-static join, update mode), and the
   stream-stream query with ``spark.sql.streaming.statefulOperator.checkCorrectness
   .enabled=false``; their output is read as upserts per item.

Results are checked against batch queries (pyarrow / pandas) over all input files.
Results go to bench/results/latency.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.gen_events import FILE_PATTERN, write_events  # noqa: E402
from bench.machine import describe  # noqa: E402
from bench.spark_ss import EVENT_SCHEMA_DDL  # noqa: E402
from bench.state_growth import (  # noqa: E402
    batch_seconds,
    consolidated,
    load_average,
    prepare_spark,
    run_spark_query,
    stamp_in_order,
    tick_stats,
)
from sealtime.sources.files import Files  # noqa: E402
from sealtime.sources.generator import Generator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
WINDOW_COLS = ["window_start", "window_end", "channel", "max_price", "n"]
VIEW_COLS = ["item_id", "price", "qty", "total", "avail"]
SELLERS = pa.schema([("item_id", pa.int64()), ("price", pa.int64()), ("qty", pa.int64())])
BUYERS = pa.schema([("item_id", pa.int64()), ("qty", pa.int64())])
PART = "part-*.parquet"


def measured(seconds_rows: list[tuple], warmup: int) -> tuple[list[float], int]:
    """Seconds of the ticks that read rows, after the first `warmup` of them; and the
    number of ticks that read no rows (not measured). Ticks are ``(seconds, rows, ...)``."""
    data = [t[0] for t in seconds_rows if t[1] > 0]
    return data[warmup:], sum(1 for t in seconds_rows if t[1] == 0)


def emitting(ticks: list[tuple[float, int, int]], warmup: int) -> list[float]:
    """Seconds of the measured ticks (as in `measured`) that emitted at least one
    window: ``(seconds, rows read, rows emitted)``."""
    data = [t for t in ticks if t[1] > 0][warmup:]
    return [t[0] for t in data if t[2] > 0]


# ---------------------------------------------------------------------- windowed
def write_bids(out_dir: Path, files: int, per_tick: int, rate: int, seed: int) -> None:
    paths = write_events(out_dir, files * per_tick, files, seed, rate=rate, out_of_order="2s")
    stamp_in_order(paths)


def windows_truth(events_dir: Path) -> pd.DataFrame:
    t = pq.read_table(events_dir, columns=["date_time", "price", "channel"])
    ms = t.column("date_time").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    arr = ms.to_numpy()
    starts = arr - np.mod(arr, 10_000)
    g = (
        pa.table(
            {"window_start": starts, "channel": t.column("channel"), "price": t.column("price")}
        )
        .group_by(["window_start", "channel"])
        .aggregate([("price", "max"), ("price", "count")])
        .to_pandas()
    )
    return pd.DataFrame(
        {
            "window_start": g["window_start"].astype("int64"),
            "window_end": g["window_start"].astype("int64") + 10_000,
            "channel": g["channel"],
            "max_price": g["price_max"].astype("int64"),
            "n": g["price_count"].astype("int64"),
        }
    )


def same_frame(got: pd.DataFrame, want: pd.DataFrame, cols: list[str], key: list[str]) -> bool:
    if len(got) != len(want):
        return False
    a = got[cols].sort_values(key, ignore_index=True)
    b = want[cols].sort_values(key, ignore_index=True)
    return all(
        (a[c].astype(str) if a[c].dtype == object else a[c].astype("int64"))
        .eq(b[c].astype(str) if b[c].dtype == object else b[c].astype("int64"))
        .all()
        for c in cols
    )


def sealtime_windows(spark, data_dir: str, events_dir: Path, per_tick: int) -> dict:
    flow = st.Dataflow("bench-latency-windows", data_dir=data_dir, spark=spark, record=False)
    src = Files(
        str(events_dir),
        format="parquet",
        schema=Generator().schema,
        pattern=FILE_PATTERN,
        finite=True,
        settle=0,
        max_per_read=per_tick,
    )
    bids = flow.source("bids", src, time="date_time", lateness="4s")
    out = bids.window(st.Tumbling("10s")).aggregate(
        by="channel", max_price=st.max("price"), n=st.count()
    )
    emitted: list[pa.Table] = []
    out.sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
    ticks: list[tuple[float, int, int]] = []
    seen = [0]

    def on_tick(r) -> None:
        rows = sum(t.num_rows for t in emitted)
        ticks.append((r.seconds, r.rows_in, rows - seen[0]))
        seen[0] = rows

    flow.run(on_tick=on_tick)
    late = flow.metrics()["sources"]["bids"]["late"]
    flow.close()
    return {"ticks": ticks, "emitted": emitted, "late": late}


def spark_windows(spark, events_dir: Path, checkpoint_dir: str) -> dict:
    from pyspark.sql import functions as F

    stream = (
        spark.readStream.schema(EVENT_SCHEMA_DDL)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(events_dir))
    )
    query_df = (
        stream.withWatermark("date_time", "4 seconds")
        .groupBy(F.window("date_time", "10 seconds"), "channel")
        .agg(F.max("price").alias("max_price"), F.count(F.lit(1)).alias("n"))
        .select(
            F.unix_millis(F.col("window.start")).alias("window_start"),
            F.unix_millis(F.col("window.end")).alias("window_end"),
            "channel",
            "max_price",
            "n",
        )
    )
    emitted: list[pa.Table] = []
    per_batch: dict[int, int] = {}

    def on_batch(df, bid: int) -> None:
        t = df.toArrow()
        emitted.append(t)
        per_batch[bid] = t.num_rows

    run = run_spark_query(query_df, "append", checkpoint_dir, on_batch)
    dropped = sum(
        int(op.get("numRowsDroppedByWatermark", 0))
        for p in run["progress"]
        for op in p.get("stateOperators", [])
    )
    ticks = [
        (
            (p.get("durationMs") or {}).get("triggerExecution", 0) / 1000,
            int(p["numInputRows"]),
            per_batch.get(int(p["batchId"]), 0),
        )
        for p in run["progress"]
    ]
    return {"ticks": ticks, "emitted": emitted, "dropped": dropped}


def windowed(spark, work: Path, args) -> dict:
    warm_dir, events_dir = work / "warm-bids", work / "bids"
    write_bids(warm_dir, 5, args.per_tick, args.rate, seed=7)
    spark_windows(spark, warm_dir, str(work / "ckpt-warm-bids"))
    sealtime_windows(spark, str(work / "st-warm-bids"), warm_dir, args.per_tick)

    write_bids(events_dir, args.warmup + args.ticks, args.per_tick, args.rate, seed=0)
    truth = windows_truth(events_dir)
    ss = spark_windows(spark, events_dir, str(work / "ckpt-bids"))
    sl = sealtime_windows(spark, str(work / "st-bids"), events_dir, args.per_tick)

    sl_out = consolidated(sl["emitted"], WINDOW_COLS)
    sl_ok = bool((sl_out["_diff"] == 1).all()) and same_frame(
        sl_out, truth, WINDOW_COLS, ["window_start", "channel"]
    )
    ss_frames = [t.to_pandas() for t in ss["emitted"] if t.num_rows]
    ss_out = pd.concat(ss_frames, ignore_index=True) if ss_frames else truth.iloc[:0]
    ss_truth = truth.merge(ss_out[["window_start", "channel"]], on=["window_start", "channel"])
    ss_ok = same_frame(ss_out, ss_truth, WINDOW_COLS, ["window_start", "channel"])
    sl_secs, sl_empty = measured(sl["ticks"], args.warmup)
    ss_secs, ss_empty = measured(ss["ticks"], args.warmup)
    _, ss_empty_secs = batch_seconds(
        [
            {"numInputRows": rows, "durationMs": {"triggerExecution": s * 1000}}
            for s, rows, _ in ss["ticks"]
        ]
    )
    return {
        "truth_windows": len(truth),
        "sealtime": {
            "emitting": tick_stats(emitting(sl["ticks"], args.warmup)),
            "stats": tick_stats(sl_secs),
            "empty": sl_empty,
            "windows": len(sl_out),
            "ok": sl_ok,
            "late": sl["late"],
        },
        "spark": {
            "emitting": tick_stats(emitting(ss["ticks"], args.warmup)),
            "stats": tick_stats(ss_secs),
            "empty": ss_empty,
            "empty_stats": tick_stats(ss_empty_secs),
            "windows": len(ss_out),
            "ok": ss_ok,
            "dropped": ss["dropped"],
        },
    }


# ---------------------------------------------------------------------- SMILE view
def write_smile(root: Path, files: int, per_side: int, items: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sellers = pa.table(
        {
            "item_id": np.arange(items, dtype=np.int64),
            "price": rng.integers(1, 100, items, dtype=np.int64),
            "qty": rng.integers(50, 400, items, dtype=np.int64),
        },
        schema=SELLERS,
    )
    (root / "sellers").mkdir(parents=True, exist_ok=True)
    pq.write_table(sellers, root / "sellers" / "part-00000.parquet")
    stamp_in_order([root / "sellers" / "part-00000.parquet"])
    for side in ("west", "east"):
        d = root / side
        d.mkdir(parents=True, exist_ok=True)
        paths = []
        for i in range(files):
            t = pa.table(
                {
                    "item_id": rng.integers(0, items, per_side, dtype=np.int64),
                    "qty": rng.integers(1, 6, per_side, dtype=np.int64),
                },
                schema=BUYERS,
            )
            paths.append(d / f"part-{i:05d}.parquet")
            pq.write_table(t, paths[-1])
        stamp_in_order(paths)


def smile_truth(root: Path) -> pd.DataFrame:
    sellers = pq.read_table(root / "sellers", schema=SELLERS).to_pandas()
    buys = pd.concat(
        [pq.read_table(root / s, schema=BUYERS).to_pandas() for s in ("west", "east")],
        ignore_index=True,
    )
    totals = buys.groupby("item_id", as_index=False)["qty"].sum().rename(columns={"qty": "total"})
    view = sellers.merge(totals, on="item_id")
    view["avail"] = view["qty"] - view["total"]
    return view[view["avail"] > 0][VIEW_COLS].reset_index(drop=True)


def sealtime_smile(spark, data_dir: str, root: Path, per_side: int) -> dict:
    from pyspark.sql import functions as F

    flow = st.Dataflow("bench-latency-smile", data_dir=data_dir, spark=spark, record=False)

    def files(name: str, schema: pa.Schema, per_read: int) -> Files:
        return Files(
            str(root / name),
            format="parquet",
            schema=schema,
            pattern=PART,
            finite=True,
            settle=0,
            max_per_read=per_read,
        )

    sellers = flow.source("sellers", files("sellers", SELLERS, 1_000_000))
    west = flow.source("buyers_west", files("west", BUYERS, per_side))
    east = flow.source("buyers_east", files("east", BUYERS, per_side))
    totals = west.union(east).aggregate(by="item_id", total=st.sum("qty"))
    view = (
        sellers.join(totals, on="item_id")
        .with_columns(avail=F.col("qty") - F.col("total"))
        .filter("avail > 0")
    )
    emitted: list[pa.Table] = []
    view.sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
    ticks: list[tuple[float, int]] = []
    flow.run(on_tick=lambda r: ticks.append((r.seconds, r.rows_in)))
    flow.close()
    return {"ticks": ticks, "emitted": emitted}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def spark_smile(spark, root: Path, work: Path, truth: pd.DataFrame, warmup: int) -> dict:
    """Try the query in each output mode (errors quoted); then run the two variants that
    Spark SS accepts, measure them and check their upserted output against `truth`."""
    from pyspark.sql import functions as F

    def stream(name: str, ddl: str):
        return (
            spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1).parquet(str(root / name))
        )

    def view_of(sellers):
        west = stream("west", "item_id BIGINT, qty BIGINT")
        east = stream("east", "item_id BIGINT, qty BIGINT")
        totals = west.union(east).groupBy("item_id").agg(F.sum("qty").alias("total"))
        return (
            sellers.join(totals, "item_id")
            .withColumn("avail", F.col("qty") - F.col("total"))
            .filter("avail > 0")
            .select(*VIEW_COLS)
        )

    sellers_ddl = "item_id BIGINT, price BIGINT, qty BIGINT"
    errors: dict[str, str] = {}
    for mode in ("update", "complete", "append"):
        ckpt = str(work / f"ckpt-smile-{mode}")
        try:
            run_spark_query(view_of(stream("sellers", sellers_ddl)), mode, ckpt, lambda d, b: None)
            errors[mode] = "accepted"
        except Exception as exc:
            errors[mode] = f"{type(exc).__name__}: {_first_line(exc)}"

    def measure(query_df, ckpt: str) -> dict:
        emitted: list[tuple[int, pa.Table]] = []
        run = run_spark_query(
            query_df, "update", ckpt, lambda df, bid: emitted.append((bid, df.toArrow()))
        )
        ticks = [
            ((p.get("durationMs") or {}).get("triggerExecution", 0) / 1000, int(p["numInputRows"]))
            for p in run["progress"]
        ]
        secs, empty = measured(ticks, warmup)
        emitted.sort(key=lambda x: x[0])
        frames = [t.to_pandas() for _, t in emitted if t.num_rows]
        rows = pd.concat(frames, ignore_index=True) if frames else truth.iloc[:0]
        upserted = rows.drop_duplicates("item_id", keep="last")
        stale = int((~upserted["item_id"].isin(truth["item_id"])).sum())
        return {
            "stats": tick_stats(secs),
            "empty": empty,
            "ok": same_frame(upserted, truth, VIEW_COLS, ["item_id"]),
            "rows": len(upserted),
            "stale": stale,
        }

    variants = {}
    static = spark.read.schema(sellers_ddl).parquet(str(root / "sellers"))
    variants["static"] = measure(view_of(static), str(work / "ckpt-smile-static"))
    key = "spark.sql.streaming.statefulOperator.checkCorrectness.enabled"
    spark.conf.set(key, "false")
    try:
        variants["unchecked"] = measure(
            view_of(stream("sellers", sellers_ddl)), str(work / "ckpt-smile-unchecked")
        )
    finally:
        spark.conf.unset(key)
    return {"errors": errors, "variants": variants}


def smile(spark, work: Path, args) -> dict:
    per_side = args.per_tick // 2
    warm_root, root = work / "warm-smile", work / "smile"
    write_smile(warm_root, 5, per_side, args.items, seed=7)
    sealtime_smile(spark, str(work / "st-warm-smile"), warm_root, per_side)
    write_smile(root, args.warmup + args.ticks, per_side, args.items, seed=0)
    truth = smile_truth(root)
    sl = sealtime_smile(spark, str(work / "st-smile"), root, per_side)
    acc = consolidated(sl["emitted"], VIEW_COLS)
    ok = bool((acc["_diff"] == 1).all()) and same_frame(acc, truth, VIEW_COLS, ["item_id"])
    secs, empty = measured(sl["ticks"], args.warmup)
    ss = spark_smile(spark, root, work, truth, args.warmup)
    return {
        "sealtime": {"stats": tick_stats(secs), "empty": empty, "ok": ok, "rows": len(acc)},
        "truth_rows": len(truth),
        "items": args.items,
        "spark": ss,
    }


# ---------------------------------------------------------------------- report
def _ms(x: float) -> str:
    return "-" if x != x else f"{x * 1000:,.0f}"


def report(win: dict, sm: dict, args, stamp: str) -> str:
    sl, ss = win["sealtime"], win["spark"]
    ratio = sl["stats"]["p50"] / ss["stats"]["p50"]
    lines = [
        "## Tick latency at 1,000 rows per tick: sealtime vs Spark Structured Streaming",
        "",
        stamp,
        "",
        f"Input: Parquet files of {args.per_tick:,} rows written before the runs, one file "
        "per sealtime tick (`Files(max_per_read=rows per file)`) and per Spark SS "
        "micro-batch (`maxFilesPerTrigger=1`, availableNow); both systems in the same "
        "process on the same SparkSession (local[*], `spark.sql.shuffle.partitions` = "
        f"{args.shuffle_partitions}). After a short run of each system over 5 other files "
        f"(JVM warm-up), the first {args.warmup} ticks of each measured run are not counted; "
        f"percentiles are over the next {args.ticks} ticks / micro-batches that read a file "
        "(p99 of fewer than 100 ticks is their maximum). sealtime: `TickReport.seconds`; "
        "Spark SS: `durationMs.triggerExecution`. Both sinks collect each tick's / "
        "micro-batch's output as Arrow (`st.sinks.Callback`; `foreachBatch` + `toArrow()`). "
        "sealtime runs with the `Dataflow` defaults (soft checkpoint every 50 ticks) and "
        "`record=False`. A shared 2-core machine: wall times are noisy.",
        "",
        "### Windowed aggregate",
        "",
        f"Bids from `bench/gen_events.py` ({args.rate:,} events per second of event time, so "
        f"{args.per_tick / args.rate:g} s of event time per tick; 2 s out-of-order jitter) -> "
        "10 s tumbling windows of `date_time` -> per channel `max(price)`, `count()`; "
        'sealtime lateness 4 s, Spark SS `withWatermark("date_time", "4 seconds")`, '
        "append mode.",
        "",
        "| system | ticks | p50 ms | p99 ms | max ms | windows emitted | results |",
        "|---|---:|---:|---:|---:|---:|---|",
        f"| sealtime | {sl['stats']['n']} | {_ms(sl['stats']['p50'])} | "
        f"{_ms(sl['stats']['p99'])} | {_ms(sl['stats']['max'])} | {sl['windows']} of "
        f"{win['truth_windows']} | accumulated output equals the batch query: {sl['ok']}; "
        f"{sl['late']} late rows"
        + (f"; {sl['empty']} tick(s) without rows not counted" if sl["empty"] else "")
        + " |",
        f"| Spark SS | {ss['stats']['n']} | {_ms(ss['stats']['p50'])} | "
        f"{_ms(ss['stats']['p99'])} | {_ms(ss['stats']['max'])} | {ss['windows']} of "
        f"{win['truth_windows']} | emitted windows equal the batch query: {ss['ok']}; "
        f"{ss['dropped']} rows dropped by the watermark"
        + (
            f"; {ss['empty']} no-data micro-batch(es) not counted (p50 "
            f"{_ms(ss['empty_stats']['p50'])} ms)"
            if ss["empty"]
            else ""
        )
        + " |",
        "",
        "Of those, the ticks / micro-batches that emitted at least one window: sealtime "
        f"{sl['emitting']['n']} (p50 {_ms(sl['emitting']['p50'])} ms, p99 "
        f"{_ms(sl['emitting']['p99'])} ms), Spark SS {ss['emitting']['n']} (p50 "
        f"{_ms(ss['emitting']['p50'])} ms, p99 {_ms(ss['emitting']['p99'])} ms). A sealtime "
        "tick whose sealed range holds no window end runs no Spark job: its rows stay in "
        "the log, and the tick that seals the next window end reads the waiting ticks' "
        "rows again in one scan (`docs/dataplane.md`), so the cost moves to those ticks.",
        "",
        f"p50 tick time sealtime / Spark SS: **{ratio:.2f}x** (below 1 = sealtime faster). "
        "Spark SS in append mode emits a window one micro-batch after the watermark "
        "passes its end and never emits the windows still open when the input ends; "
        "sealtime emits every window in the tick its end is sealed, and the rest when the "
        "finite source ends.",
        "",
        "### SMILE-shaped view",
        "",
        f"`Sellers(item_id, price, qty)`: {sm['items']:,} items in one file (read in the "
        f"first tick); `BuyersWest(item_id, qty)` and `BuyersEast(item_id, qty)`: "
        f"{args.per_tick // 2:,} rows each per tick, item ids uniform; "
        '`west.union(east).aggregate(by="item_id", total=st.sum("qty"))`, joined with '
        'sellers on `item_id`, `with_columns(avail=qty - total)`, `filter("avail > 0")`. '
        "Items sell out as the totals grow, so the view retracts rows.",
        "",
    ]
    s = sm["sealtime"]
    lines += [
        "| system | ticks | p50 ms | p99 ms | max ms | results |",
        "|---|---:|---:|---:|---:|---|",
        f"| sealtime | {s['stats']['n']} | {_ms(s['stats']['p50'])} | "
        f"{_ms(s['stats']['p99'])} | {_ms(s['stats']['max'])} | accumulated output "
        f"({s['rows']} rows) equals the batch query ({sm['truth_rows']} rows): {s['ok']} |",
        "| Spark SS | - | - | - | - | **not expressible** (see below) |",
        "",
        "Spark SS, the same query with sellers as a file stream, in each output mode:",
        "",
    ]
    for mode, msg in sm["spark"]["errors"].items():
        lines.append(f"* {mode}: `{msg}`")
    labels = {
        "static": "sellers as a static table (stream-static join), update mode",
        "unchecked": "the same stream-stream query with "
        "`spark.sql.streaming.statefulOperator.checkCorrectness.enabled=false`, update mode",
    }
    lines += [
        "",
        "For context, two Spark SS variants that do run (output read as upserts per "
        "`item_id`, the best a consumer of update-mode rows can do; a sold-out item's "
        "last row is never retracted):",
        "",
        "| Spark SS variant | micro-batches | p50 ms | p99 ms | equals the batch view | "
        "stale rows (sold-out items still shown) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for name, v in sm["spark"]["variants"].items():
        lines.append(
            f"| {labels[name]} | {v['stats']['n']} | {_ms(v['stats']['p50'])} | "
            f"{_ms(v['stats']['p99'])} | {v['ok']} | {v['stale']} |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ticks", type=int, default=60, help="measured ticks")
    ap.add_argument("--warmup", type=int, default=10, help="ticks not measured, first")
    ap.add_argument("--per-tick", type=int, default=1000, help="rows per file / tick")
    ap.add_argument("--rate", type=int, default=1000, help="bids per second of event time")
    ap.add_argument("--items", type=int, default=1000, help="sellers' items")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument("--work-dir", help="where files, logs and checkpoints go (default: temp)")
    ap.add_argument("--out", default=str(RESULTS / "latency.md"))
    args = ap.parse_args(argv)
    if args.per_tick < 2 or args.per_tick % 2:
        ap.error("--per-tick must be an even number >= 2 (two buyer streams)")

    spark = prepare_spark(args.shuffle_partitions)
    work = Path(tempfile.mkdtemp(prefix="sealtime-latency-", dir=args.work_dir))
    cmd = "python bench/latency.py " + " ".join(argv if argv is not None else sys.argv[1:])
    before = load_average()
    try:
        t0 = time.perf_counter()
        win = windowed(spark, work, args)
        print(f"windowed part: {time.perf_counter() - t0:.0f} s", flush=True)
        t0 = time.perf_counter()
        sm = smile(spark, work, args)
        print(f"SMILE part: {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stamp = (
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average (1/5/15 min) "
        f"before: {before}; after: {load_average()}."
    )
    text = report(win, sm, args, stamp)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
