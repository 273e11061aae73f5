"""Benchmark: ingest throughput into the log, and recovery time vs log length.

    python bench/bench_durability.py [--rows 1000000] [--nats-rows 200000]

* **Ingest**: rows/s from a source into the ingest log — read, decode, stamp (event time,
  late rule), write Parquet, fsync, mint the binding in the metadata store — for the
  file source (JSON lines and Parquet) and NATS JetStream (messages published first,
  not timed). The dataflow has no operators, so this is the ingestion path alone.
* **Recovery**: a pipeline (files → two event-time window aggregates (10 s, 60 s) →
  Persist sinks) runs L ticks and is abandoned (as after a crash); the restart is timed
  from building the dataflow to the end of its first tick, which recomputes everything
  since the last checkpoint. With checkpoints every 5 ticks and with none.

Results go to bench/results/durability.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.machine import describe  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

SCHEMA = {"k": "long", "v": "long", "ts": "long"}


def make_rows(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.arange(n, dtype=np.int64) * 10 + rng.integers(-500, 500, n)
    return pa.table({"k": rng.integers(0, 100, n), "v": rng.integers(0, 10_000, n), "ts": ts})


def write_inputs(directory: str, table: pa.Table, files: int, fmt: str) -> None:
    os.makedirs(directory)
    per = -(-table.num_rows // files)
    for i in range(files):
        part = table.slice(i * per, per)
        if fmt == "parquet":
            pq.write_table(part, os.path.join(directory, f"p{i:04d}.parquet"))
        else:
            with open(os.path.join(directory, f"p{i:04d}.jsonl"), "w") as f:
                for r in part.to_pylist():
                    f.write(json.dumps(r) + "\n")


def ingest_only(spark, work: str, name: str, source, rows: int) -> dict:
    flow = st.Dataflow(name, data_dir=os.path.join(work, name), spark=spark, record=False)
    flow.source("s", source, time="ts", lateness="1s")
    t0 = time.perf_counter()
    ticks = 0
    while flow.metrics()["sources"].get("s", {}).get("rows", 0) < rows:
        flow.run(ticks=1)
        ticks += 1
        if ticks > 100_000:
            raise RuntimeError("ingest did not finish")
    seconds = time.perf_counter() - t0
    flow.close()
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds, "ticks": ticks}


def nats_source(rows: int) -> tuple[st.sources.NatsJetStream, callable]:
    import nats
    from nats.js.api import StreamConfig

    tag = uuid.uuid4().hex[:8]
    stream, subject = f"BENCH_{tag}", f"bench.{tag}"
    table = make_rows(rows, seed=1).to_pylist()
    payloads = [json.dumps(r).encode() for r in table]

    async def publish() -> None:
        nc = await nats.connect("nats://127.0.0.1:4222")
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=stream, subjects=[subject]))
        for i in range(0, len(payloads), 1000):
            await asyncio.gather(*(js.publish(subject, p) for p in payloads[i : i + 1000]))
        await nc.close()

    async def delete() -> None:
        nc = await nats.connect("nats://127.0.0.1:4222")
        await nc.jetstream().delete_stream(stream)
        await nc.close()

    asyncio.run(publish())
    src = st.sources.NatsJetStream(subject, stream=stream, schema=SCHEMA, max_per_read=50_000)
    return src, lambda: asyncio.run(delete())


def recovery(spark, work: str, inputs: str, ticks: int, ck: int | None) -> dict:
    data = os.path.join(work, f"rec-{ticks}-{ck}")

    def build():
        flow = st.Dataflow("rec", data_dir=data, spark=spark, record=False, checkpoint_every=ck)
        src = st.sources.Files(
            inputs, format="parquet", schema=SCHEMA, finite=True, settle=0, max_per_read=20_000
        )
        s = flow.source("s", src, time="ts", lateness="1s", max_rows_per_tick=20_000)
        s.window(st.Tumbling("10s")).aggregate(by="k", n=st.count(), top=st.max("v")).sink(
            st.sinks.Persist("w")
        )
        s.window(st.Tumbling("60s")).aggregate(by="k", total=st.sum("v")).sink(
            st.sinks.Persist("t")
        )
        return flow

    flow = build()
    flow.run(ticks=ticks)
    flow.engine.close()  # abandoned: no checkpoint on the way out
    t0 = time.perf_counter()
    flow = build()
    recovered = dict(flow.engine.recovered_from)
    flow.run(ticks=1)
    seconds = time.perf_counter() - t0
    flow.close()
    return {"ticks": ticks, "ck": ck, "seconds": seconds, "recovered": recovered}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--nats-rows", type=int, default=200_000)
    ap.add_argument("--lengths", default="12,22,42")
    ap.add_argument(
        "--out", default=str(Path(__file__).resolve().parent / "results" / "durability.md")
    )
    args = ap.parse_args(argv)
    spark = get_or_create_session(app_name="sealtime-bench-durability")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    work = tempfile.mkdtemp(prefix="sealtime-bench-dur-")
    load = os.getloadavg()
    try:
        table = make_rows(args.rows)
        # Warm up the JVM and the code paths on a small input (not reported).
        warm = os.path.join(work, "warm")
        write_inputs(warm, make_rows(20_000, seed=3), 2, "parquet")
        warm_src = st.sources.Files(warm, format="parquet", schema=SCHEMA, finite=True, settle=0)
        ingest_only(spark, work, "warm", warm_src, 20_000)
        results = []
        for fmt in ("parquet", "jsonl"):
            d = os.path.join(work, f"in-{fmt}")
            write_inputs(d, table, 20, fmt)
            src = st.sources.Files(
                d, format=fmt, schema=SCHEMA, finite=True, settle=0, max_per_read=200_000
            )
            results.append(
                (f"files ({fmt})", ingest_only(spark, work, f"in-{fmt}", src, args.rows))
            )
        src, cleanup = nats_source(args.nats_rows)
        try:
            results.append(
                ("NATS JetStream", ingest_only(spark, work, "in-nats", src, args.nats_rows))
            )
        finally:
            cleanup()
        rec_in = os.path.join(work, "rec-in")
        lengths = [int(x) for x in args.lengths.split(",")]
        write_inputs(rec_in, make_rows(20_000 * (max(lengths) + 1), seed=2), 40, "parquet")
        rec = [recovery(spark, work, rec_in, n, ck) for n in lengths for ck in (None, 5)]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    cmd = "python bench/bench_durability.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "## Durable ingestion and recovery",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average at start: "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.",
        "",
        "### Ingest into the log",
        "",
        "Read, decode, stamp event time (late rule), write the Parquet log, fsync, mint the "
        "binding (one metadata transaction per tick); no operators.",
        "",
        "| source | rows | seconds | rows/s | ticks |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in results:
        lines.append(
            f"| {name} | {r['rows']:,} | {r['seconds']:.2f} | {r['rows_per_s']:,.0f} | {r['ticks']} |"
        )
    lines += [
        "",
        "### Recovery time vs log length",
        "",
        "Files (Parquet) → 10 s and 60 s window aggregates by key → 2 Persist sinks, 20,000 rows "
        "per tick. The dataflow runs L ticks and is abandoned; the restart is timed from "
        "building the dataflow to the end of its first tick (restore + catch-up + commit).",
        "",
        "| log length (ticks) | checkpoints | restored from | restart seconds |",
        "|---:|---|---|---:|",
    ]
    for r in rec:
        frm = (
            f"checkpoint at tick {r['recovered']['checkpoint']} + log"
            if "checkpoint" in r["recovered"]
            else "log only"
        )
        ck = f"every {r['ck']} ticks" if r["ck"] else "none"
        lines.append(f"| {r['ticks']} | {ck} | {frm} | {r['seconds']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
