"""Benchmark: time to first result in a fresh process, sealtime vs Spark SS, each alone.

    python bench/cold_start.py [--repeat 5] [--shapes state_growth,q5] [--profile]

Each run is a new Python process that runs one system on one shape and nothing else
(no warm-up: the JVM, the JIT, Spark's code generation and the Python workers are all
cold, as for a job just deployed), alternating the systems. Per run:

* ``session``: seconds to build the SparkSession (the JVM's start; not part of the rest);
* ``first result``: from ``flow.run()`` (sealtime) / ``writeStream...start()`` (Spark SS)
  to the first committed output: the first call of the ``Callback`` sink / the end of the
  first ``foreachBatch`` that had rows;
* ``first tick`` and ``steady tick``: the first tick's / micro-batch's seconds and the
  median of the ticks after the second (``TickReport.seconds`` /
  ``durationMs.triggerExecution``); their ratio is the cold-start factor.

Shapes: ``state_growth`` — ``group by key: sum, count`` over 8 files of 100,000 rows
(200,000 keys), ingestion time, as `bench/state_growth.py` part (a); ``q5`` — Nexmark q5
(sealtime: ``bench/nexmark/q5.sql``; Spark SS: its best formulation) over 8 files of
100,000 events. Spark SS's session is built with PySpark's own builder and the same
settings (sealtime's `get_or_create_session` is sealtime's). Both collect through
`sealtime.spark.frames.to_arrow`. ``--profile`` runs sealtime once under cProfile and
prints where the first tick's driver time went. Results go to
bench/results/cold_start.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results"
FILES, ROWS = 8, 100_000


def _session(system: str):
    t0 = time.perf_counter()
    if system == "sealtime":
        from sealtime.spark.session import get_or_create_session

        spark = get_or_create_session(conf={"spark.sql.shuffle.partitions": "4"})
    else:
        import socket

        from pyspark.sql import SparkSession

        from sealtime.spark.session import DEFAULT_CONF

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = SparkSession.builder.master("local[*]").appName("spark-ss-cold")
        conf = {**DEFAULT_CONF, "spark.sql.shuffle.partitions": "4"}
        conf["spark.driver.host"] = conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf.pop("spark.python.daemon.module", None)  # sealtime's own daemon
        if not hasattr(socket, "AF_UNIX"):
            conf.pop("spark.python.unix.domain.socket.enabled", None)
        for k, v in conf.items():
            b = b.config(k, v)
        spark = b.getOrCreate()
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    return spark, time.perf_counter() - t0


def prepare(shape: str, work: Path) -> Path:
    """The input files (written once per shape, reused by every run)."""
    d = work / f"in-{shape}"
    if d.exists():
        return d
    if shape == "state_growth":
        from bench.state_growth import uniform_files

        uniform_files(d, 200_000, FILES, ROWS, seed=1)
    else:
        from bench.nexmark_literal import write_events
        from bench.state_growth import stamp_in_order

        stamp_in_order(write_events(d, FILES * ROWS, ROWS))
    return d


def _old_compiler_key() -> None:
    """The helper's cache key as before 2026-11-27: ``javac -version`` run in every new
    process (a JVM start), for the A/B of ``--variants``."""
    import subprocess as sp

    from sealtime.spark import jvm

    identity = jvm._compiler_identity

    def run_then_identity(javac: str) -> str:
        sp.run([javac, "-version"], capture_output=True, timeout=60, check=True)
        return identity(javac)

    jvm._compiler_identity = run_then_identity


def child(system: str, shape: str, inp: Path, work: Path) -> dict[str, Any]:
    import pyarrow as pa

    if os.environ.get("COLD_VARIANT") == "before":
        _old_compiler_key()

    spark, session_s = _session(system)
    from sealtime.spark.frames import to_arrow

    first: list[float] = []
    ticks: list[float] = []
    if system == "sealtime":
        import sealtime as st
        from sealtime.sources.files import Files

        flow = st.Dataflow(
            f"cold-{shape}",
            data_dir=str(work / "data"),
            spark=spark,
            record=False,
            checkpoint_every=5,
        )
        if shape == "state_growth":
            from bench.state_growth import PATTERN, SCHEMA

            src = Files(
                str(inp),
                format="parquet",
                schema=SCHEMA,
                pattern=PATTERN,
                finite=True,
                settle=0,
                max_per_read=ROWS,
            )
            coll = flow.source("rows", src).aggregate(by="key", s=st.sum("value"), n=st.count())
        else:
            from bench.nexmark_literal import files_source
            from bench.nexmark_sql import apply_query

            flow.source(
                "nexmark",
                files_source(inp, ROWS),
                time="date_time",
                lateness="4s",
                max_rows_per_tick=ROWS,
            )
            coll = apply_query(flow, "q5", work)
        t_build = time.perf_counter()
        coll.sink(st.sinks.Callback(lambda t, lo, hi: first or first.append(time.perf_counter())))
        t0 = time.perf_counter()
        reports = flow.run()
        total = time.perf_counter() - t0
        build_s = t0 - t_build
        ticks = [r.seconds for r in reports if r.rows_in > 0]
        flow.close()
    else:
        from pyspark.sql import functions as F

        def on_batch(df, i) -> None:
            t = to_arrow(df)
            if t.num_rows and not first:
                first.append(time.perf_counter())

        if shape == "state_growth":
            from bench.state_growth import DDL

            stream = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(inp))
            df = stream.groupBy("key").agg(F.sum("value").alias("s"), F.count(F.lit(1)).alias("n"))
            mode = "update"
            per_batch = None
        else:
            from bench.nexmark_literal import spark_stream
            from bench.nexmark_queries import SPARK_SS

            df = SPARK_SS["q5"].build(spark_stream(spark, inp), work)
            mode, per_batch = "append", SPARK_SS["q5"].per_batch
        if per_batch is not None:
            inner = on_batch

            def on_batch(df, i, inner=inner):  # noqa: F811
                inner(per_batch(df), i)

        t_build = time.perf_counter()
        w = (
            df.writeStream.outputMode(mode)
            .option("checkpointLocation", str(work / "ckpt"))
            .trigger(availableNow=True)
            .foreachBatch(on_batch)
        )
        t0 = time.perf_counter()
        build_s = t0 - t_build
        q = w.start()
        q.awaitTermination()
        total = time.perf_counter() - t0
        progress = [json.loads(p.json) for p in q.recentProgress]
        ticks = [
            p["durationMs"]["triggerExecution"] / 1000
            for p in progress
            if int(p.get("numInputRows", 0)) > 0
        ]
    _ = pa
    return {
        "system": system,
        "shape": shape,
        "session": session_s,
        "build": build_s,
        "first_result": (first[0] - t0) if first else None,
        "total": total,
        "first_tick": ticks[0] if ticks else None,
        "steady_tick": statistics.median(ticks[2:]) if len(ticks) > 2 else None,
        "ticks": len(ticks),
    }


def profile_child(shape: str, inp: Path, work: Path) -> str:
    """cProfile of a sealtime run's first tick (driver side), top functions by cumulative time."""
    import cProfile
    import io
    import pstats

    spark, _ = _session("sealtime")
    import sealtime as st
    from bench.nexmark_literal import files_source
    from bench.nexmark_sql import apply_query

    flow = st.Dataflow(
        f"cold-prof-{shape}", data_dir=str(work / "pdata"), spark=spark, record=False
    )
    flow.source(
        "nexmark", files_source(inp, ROWS), time="date_time", lateness="4s", max_rows_per_tick=ROWS
    )
    apply_query(flow, "q5", work).sink(st.sinks.Callback(lambda t, lo, hi: None))
    prof = cProfile.Profile()
    prof.enable()
    flow.run(ticks=1)
    prof.disable()
    flow.close()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(45)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shapes", default="state_growth,q5")
    ap.add_argument("--systems", default="sealtime,spark_ss")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument(
        "--variants",
        default="after",
        help="sealtime code variants to compare: after (as is), before (the helper's "
        "cache key by running javac -version in every process)",
    )
    ap.add_argument("--work-dir")
    ap.add_argument("--out")
    ap.add_argument("--child", nargs=4, metavar=("SYSTEM", "SHAPE", "INPUT", "WORK"))
    args = ap.parse_args(argv)
    if args.child:
        system, shape, inp, work = args.child
        if system == "profile":
            print(profile_child(shape, Path(inp), Path(work)))
            return 0
        print("RESULT " + json.dumps(child(system, shape, Path(inp), Path(work))), flush=True)
        return 0
    from bench.machine import describe, revision

    load0 = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    work = Path(tempfile.mkdtemp(prefix="sealtime-cold-", dir=args.work_dir))
    systems = args.systems.split(",")
    rows = []
    for shape in args.shapes.split(","):
        inp = prepare(shape, work)
        for i in range(args.repeat):
            for system in systems if i % 2 == 0 else systems[::-1]:
                d = Path(tempfile.mkdtemp(dir=work))
                p = subprocess.run(
                    [sys.executable, __file__, "--child", system, shape, str(inp), str(d)],
                    capture_output=True,
                    text=True,
                    timeout=1800,
                )
                line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
                r = (
                    json.loads(line[7:])
                    if line
                    else {"system": system, "shape": shape, "error": p.stderr[-500:]}
                )
                print(json.dumps(r), flush=True)
                rows.append(r)
    prof = None
    if args.profile:
        d = Path(tempfile.mkdtemp(dir=work))
        p = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "profile",
                "q5",
                str(prepare("q5", work)),
                str(d),
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        prof = p.stdout
        print(prof)
    load1 = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(rows, args, load0, load1, describe(), revision(), argv)
    print(text)
    Path(args.out or RESULTS / "cold_start.md").write_text(text, encoding="utf-8")
    return 0


def render(rows, args, load0, load1, machine, rev, argv) -> str:
    cmd = "python bench/cold_start.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "## Time to first result in a fresh process",
        "",
        f"Machine: {machine}. Command: `{cmd.strip()}`. Load average before: {load0}; after: "
        f"{load1}. sealtime: {rev}.",
        "",
        f"Each run a new process running one system alone (alternating), {FILES} files of "
        f"{ROWS:,} rows / events, one per tick / micro-batch; sealtime checkpoints every 5 "
        "ticks. Medians of the runs; seconds.",
        "",
        "| shape | system | runs | session start | first result | first tick | steady tick | "
        "first / steady | whole run |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def med(rs, k):
        xs = [r[k] for r in rs if r.get(k) is not None]
        return statistics.median(xs) if xs else float("nan")

    for shape in args.shapes.split(","):
        for system in args.systems.split(","):
            rs = [
                r
                for r in rows
                if r["system"] == system and r["shape"] == shape and "error" not in r
            ]
            if not rs:
                lines.append(f"| {shape} | {system} | 0 | failed | | | | | |")
                continue
            ft, st_ = med(rs, "first_tick"), med(rs, "steady_tick")
            lines.append(
                f"| {shape} | {'Spark SS' if system == 'spark_ss' else system} | {len(rs)} | "
                f"{med(rs, 'session'):.2f} | {med(rs, 'first_result'):.2f} | {ft:.2f} | "
                f"{st_:.2f} | {ft / st_:.1f}x | {med(rs, 'total'):.2f} |"
            )
    lines += [
        "",
        "Per run (system, shape: first result / first tick / steady tick s): "
        + "; ".join(
            f"{r['system']} {r['shape']}: "
            + (
                f"{r['first_result']:.2f} / {r['first_tick']:.2f} / {r['steady_tick']:.2f}"
                if "error" not in r and r.get("first_result") is not None
                else "failed"
            )
            for r in rows
        )
        + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
