"""Benchmark: two ways to keep keyed state on Spark, per-tick time against state size.

    python bench/arrangement_mechanisms.py [--keys 100000,1000000,5000000] [--ticks 6]

The workload is the running aggregate ``group by key: sum(value), count()``: a state of
K keys is built first, then each measured tick applies 100,000 updates to random keys
(ingestion time, one time per tick) and produces the changed rows.

* **cached state, co-partitioned** — the state is a DataFrame hash-partitioned by key
  and cut with ``localCheckpoint``; a tick unions the aggregated delta with it and
  re-aggregates (the probe of /work/shared/PROBES.md: no state shuffle, but every
  tick reads and rewrites every state row).
* **arrangement (sealtime)** — `sealtime.arrangement`: per-partition sorted Arrow runs
  read and written inside ``mapInArrow`` by the accumulable kernel; a tick shuffles
  only its delta and touches only its keys (the mechanism sealtime uses).

Spark's own state store (RocksDB or HDFS-backed, through a streaming query) is
measured by bench/state_growth.py as the Spark Structured Streaming side. Results go to
bench/results/arrangement_mechanisms.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.machine import describe  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

DELTA = 100_000


def delta_frame(spark, keys: int, seed: int):
    rng = np.random.default_rng(seed)
    table = pa.table({"key": rng.integers(0, keys, DELTA), "value": rng.integers(0, 1000, DELTA)})
    return spark.createDataFrame(table)


def cached_state(spark, keys: int, ticks: int, partitions: int) -> list[float]:
    state = (
        spark.range(keys)
        .select(
            F.col("id").alias("key"),
            F.lit(1).cast("long").alias("s"),
            F.lit(1).cast("long").alias("n"),
        )
        .repartition(partitions, "key")
        .localCheckpoint(eager=True)
    )
    times = []
    for i in range(ticks):
        d = delta_frame(spark, keys, i).cache()
        d.count()
        t0 = time.perf_counter()
        agg = d.groupBy("key").agg(F.sum("value").alias("s"), F.count(F.lit(1)).alias("n"))
        new = (
            state.unionByName(agg.repartition(partitions, "key"))
            .groupBy("key")
            .agg(F.sum("s").alias("s"), F.sum("n").alias("n"))
            .localCheckpoint(eager=True)
        )
        changed = new.join(agg.select("key"), "key", "left_semi")
        changed.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - t0)
        state = new
    return times


def arrangement(spark, keys: int, ticks: int, partitions: int) -> list[float]:
    import sealtime as st

    work = tempfile.mkdtemp(prefix="sealtime-mech-")
    rng = np.random.default_rng(0)
    import pyarrow.parquet as pq

    in_dir = os.path.join(work, "in")
    os.makedirs(in_dir)
    # the build: every key once, in ticks of 100,000 rows (one file per tick)
    ks = np.arange(keys)
    build = max(1, -(-keys // DELTA))
    for i, chunk in enumerate(np.array_split(ks, build)):
        pq.write_table(
            pa.table({"key": chunk, "value": np.ones(len(chunk), np.int64)}),
            os.path.join(in_dir, f"a{i:04d}.parquet"),
        )
    for i in range(ticks):
        pq.write_table(
            pa.table({"key": rng.integers(0, keys, DELTA), "value": rng.integers(0, 1000, DELTA)}),
            os.path.join(in_dir, f"b{i:04d}.parquet"),
        )
    from sealtime.sources.files import Files

    schema = pa.schema([("key", pa.int64()), ("value", pa.int64())])
    flow = st.Dataflow(
        "mech",
        data_dir=os.path.join(work, "data"),
        spark=spark,
        record=False,
        checkpoint_every=0,
        shuffle_partitions=partitions,
    )
    src = flow.source(
        "in",
        Files(in_dir, format="parquet", schema=schema, finite=True, settle=0, max_per_read=DELTA),
    )
    agg = src.aggregate(by="key", s=st.sum("value"), n=st.count())
    agg.sink(st.sinks.Callback(lambda t, lo, hi: None))
    reports = flow.run()
    return [r.seconds for r in reports[build:]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--keys", default="100000,1000000,5000000")
    p.add_argument("--ticks", type=int, default=6)
    p.add_argument("--partitions", type=int, default=2)
    args = p.parse_args(argv)
    spark = get_or_create_session(conf={"spark.sql.shuffle.partitions": str(args.partitions)})
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    started = describe()
    load0 = os.getloadavg()
    rows = []
    for keys in [int(k) for k in args.keys.split(",")]:
        for name, fn in (
            ("cached state, co-partitioned", cached_state),
            ("arrangement", arrangement),
        ):
            fn(spark, min(keys, 100_000), 2, args.partitions)  # warm-up
            times = fn(spark, keys, args.ticks, args.partitions)
            rows.append((name, keys, statistics.median(times), max(times)))
            print(
                f"{name:32s} {keys:>9,d} keys: median {statistics.median(times):.2f}s max {max(times):.2f}s",
                flush=True,
            )
    load1 = os.getloadavg()
    lines = [
        "## Keyed state mechanisms: per-tick time against state size",
        "",
        f"Machine: {started}. Command: `python bench/arrangement_mechanisms.py --keys {args.keys} "
        f"--ticks {args.ticks} --partitions {args.partitions}`. Load average before: "
        f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}; after: {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}.",
        "",
        "The running aggregate `sum(value), count() by key`: a state of K keys, then "
        f"{args.ticks} measured ticks of 100,000 updates to random keys each. Median and "
        "maximum seconds per tick.",
        "",
        "| mechanism | state keys | median s/tick | max s/tick |",
        "|---|---:|---:|---:|",
    ]
    for name, keys, med, top in rows:
        lines.append(f"| {name} | {keys:,} | {med:.2f} | {top:.2f} |")
    out = Path(__file__).resolve().parent / "results" / "arrangement_mechanisms.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
