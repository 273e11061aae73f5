"""Where a sealtime tick's time goes, per Nexmark query: driver plan against Spark job.

    python bench/tick_profile.py [--events 10000000] [--per-tick 500000]
        [--queries q0,q2,q3,q5,q8] [--data-dir DIR] [--out FILE]

The events and the streaming shape are those of `bench/nexmark.py` (one 500,000-event
Parquet file per tick, event time, a ``Callback`` sink); only sealtime runs. Per query,
in a new SparkSession with Spark's UI on (its REST API gives stage metrics): one untimed
run to warm the JVM up, then one profiled run, which reports per tick (medians over its
ticks):

* the tick's seconds (`TickReport.seconds`); those of the sink's collection as Arrow
  (Spark's planning of the query on the driver, its job and the transfer of the rows);
  those of the Spark job alone (submission to completion, from the REST API), with the
  number of jobs and stages;
* the rows the job's stages read from files (``inputRecords``: a file scanned twice
  counts twice);
* the calls from Python into the JVM (py4j) and their time: building the tick's plan
  (each DataFrame operation is analysed by Spark when it is made), plus the few calls
  that start the jobs; the operations costing the most are named.

The UI and the call counting slow a tick a little (about 5 % on q5), so the tick
seconds here are not the benchmark's. Results go to bench/results/tick_profile.md
(``--out``).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import describe, revision  # noqa: E402
from bench.nexmark_literal import QUERIES, run_sealtime, write_events  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "tick_profile.md"


class JvmCalls:
    """While installed: calls of JVM methods through py4j made on the engine's thread
    (building the tick's plan, starting jobs) and their time, by method name
    (constructors are not counted), and the seconds of each collection of a DataFrame as
    Arrow (Spark's planning of the query, its job and the transfer of the rows; since
    ticks read ahead, collections run in background threads, whose own calls are the
    jobs themselves and are not counted as calls)."""

    def __init__(self) -> None:
        self.count: collections.Counter[str] = collections.Counter()
        self.seconds: collections.Counter[str] = collections.Counter()
        self.collects: list[float] = []
        self._originals: tuple[Any, Any, Any] | None = None

    def __enter__(self) -> JvmCalls:
        import threading

        import py4j.java_gateway as gateway

        import sealtime.spark.frames as frames

        call_jvm = gateway.JavaMember.__call__
        self._originals = (call_jvm, frames.to_arrow)
        to_arrow = frames.to_arrow
        count, seconds, collects = self.count, self.seconds, self.collects
        main = threading.main_thread()

        def call(member, *args):
            if threading.current_thread() is not main:
                return call_jvm(member, *args)
            t0 = time.perf_counter()
            try:
                return call_jvm(member, *args)
            finally:
                count[member.name] += 1
                seconds[member.name] += time.perf_counter() - t0

        def collect(df):
            t0 = time.perf_counter()
            try:
                return to_arrow(df)
            finally:
                collects.append(time.perf_counter() - t0)

        gateway.JavaMember.__call__ = call
        frames.to_arrow = collect
        return self

    def __exit__(self, *exc: object) -> None:
        import py4j.java_gateway as gateway

        import sealtime.spark.frames as frames

        assert self._originals is not None
        gateway.JavaMember.__call__, frames.to_arrow = self._originals


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def _seconds(a: str, b: str) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%f%Z"
    return datetime.strptime(b, fmt).timestamp() - datetime.strptime(a, fmt).timestamp()


def spark_jobs(spark, group: str) -> list[dict[str, Any]]:
    """The finished jobs of job group `group`: seconds, stages, rows read from files."""
    base = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"
    stages = {s["stageId"]: s for s in _get(f"{base}/stages?status=complete")}
    out = []
    for job in _get(f"{base}/jobs?status=succeeded"):
        if job.get("jobGroup") != group:
            continue
        done = [stages[i] for i in job["stageIds"] if i in stages]
        out.append(
            {
                "seconds": _seconds(job["submissionTime"], job["completionTime"]),
                "stages": len(done),
                "rows_read": sum(s["inputRecords"] for s in done),
            }
        )
    return out


def profile(q, events_dir: Path, per_tick: int, partitions: int) -> dict[str, Any]:
    conf = {
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.ui.enabled": "true",
        "spark.ui.port": "4040",  # (Spark tries the next ports when it is taken)
    }
    spark = get_or_create_session(app_name=f"sealtime-tick-profile-{q.name}", conf=conf)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run_sealtime(spark, q, events_dir, Path(tmp) / "warm", per_tick, partitions)
            group = f"tick-profile-{q.name}"
            spark.sparkContext.setJobGroup(group, group)
            with JvmCalls() as calls:
                run = run_sealtime(spark, q, events_dir, Path(tmp) / "run", per_tick, partitions)
        time.sleep(1.0)  # (the UI's status store takes the last events asynchronously)
        jobs = spark_jobs(spark, group)
    finally:
        spark.stop()
    ticks = run["ticks"]
    top = sorted(calls.seconds.items(), key=lambda kv: -kv[1])[:4]
    return {
        "ticks": ticks,
        "tick_p50": run["p50"],
        "collect_p50": statistics.median(calls.collects) if calls.collects else 0.0,
        "job_p50": statistics.median(j["seconds"] for j in jobs) if jobs else 0.0,
        "jobs": len(jobs) / ticks,
        "stages": sum(j["stages"] for j in jobs) / ticks,
        "rows_read": statistics.median(j["rows_read"] for j in jobs) if jobs else 0,
        "calls": sum(calls.count.values()) / ticks,
        "call_ms": 1000 * sum(calls.seconds.values()) / ticks,
        "top": [(name, calls.count[name] / ticks, 1000 * s / ticks) for name, s in top],
    }


def render(cmd: str, results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "## Where a Nexmark tick's time goes: sealtime's plan and its Spark job",
        "",
        "Per query, one warm-up run and one profiled run of sealtime alone on the events and "
        "in the shape of the Nexmark benchmark above (500,000 events per tick, event time, "
        "Arrow sink), with Spark's UI on for its REST API. Medians over the run's ticks: "
        "the tick (`TickReport.seconds`); the sink's collection as Arrow (Spark's planning "
        "of the query, its job, the transfer to Python); the job alone (submission to "
        "completion); the rows its stages read from files (a file read twice counts "
        "twice); the calls from Python into the JVM, almost all of them building the "
        "tick's plan (Spark analyses each DataFrame operation as it is made). The UI and "
        "the counting slow a tick a little, so the tick times are not the benchmark's.",
        "",
        "| query | ticks | tick p50 | Arrow collect p50 | its job p50 | jobs / stages a tick "
        "| rows read a tick (p50) | JVM calls a tick | their ms a tick "
        "| costliest calls (calls, ms a tick) |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for name, r in results.items():
        top = "; ".join(f"`{n}` {c:.1f}, {ms:.0f}" for n, c, ms in r["top"])
        lines.append(
            f"| {name} | {r['ticks']} | {r['tick_p50']:.3f} s | {r['collect_p50']:.3f} s "
            f"| {r['job_p50']:.3f} s "
            f"| {r['jobs']:.1f} / {r['stages']:.1f} | {r['rows_read']:,.0f} "
            f"| {r['calls']:.0f} | {r['call_ms']:.0f} | {top} |"
        )
    lines += ["", f"Machine: {describe()}. Command: `{cmd}`. sealtime: {revision()}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--per-tick", type=int, default=500_000)
    ap.add_argument("--queries", default="q0,q2,q3,q5,q8")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument("--data-dir", default=None, help="where the events are (re)written")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.queries.split(",") if n.strip()]
    unknown = [n for n in names if n not in QUERIES]
    if unknown:
        ap.error(f"--queries: unknown {unknown}; choose from {sorted(QUERIES)}")
    data_dir = Path(args.data_dir or Path(tempfile.gettempdir()) / f"nexmark-{args.events}")
    write_events(data_dir, args.events, args.per_tick)
    results = {}
    for name in names:
        results[name] = profile(QUERIES[name], data_dir, args.per_tick, args.shuffle_partitions)
        print(name, json.dumps(results[name]), flush=True)
    cmd = "python bench/tick_profile.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(cmd, results)
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
