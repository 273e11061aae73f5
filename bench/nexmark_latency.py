"""Benchmark: Nexmark event-to-output latency at a fixed input rate, sealtime vs Spark SS.

    python bench/nexmark_latency.py [--rates 10000,100000] [--seconds 20]
        [--cadence 200ms] [--queries q0,q1,q2,q5] [--out FILE]

**Input at a fixed rate of wall time.** A writer thread produces Nexmark events (the
deterministic generator, event time = its own clock at ``rate`` events/s) and publishes
them every ``--cadence`` as one Parquet file (written under a temporary name, then
renamed into the input directory: a file appears whole). An event *arrives* when its
file is renamed in; the writer records that wall time per file.

**Each system alone on the stream**, in its own fresh process: sealtime runs the query's
SQL file (`bench/nexmark/`) over ``Files(dir, settle=0)`` in event time with lateness 0
(the input is in order) and ``Dataflow(tick=cadence)``, ``run(forever=True)``; Spark SS
runs its best formulation (`bench.nexmark_queries.SPARK_SS`) over ``readStream.parquet``
with ``trigger(processingTime=cadence)`` and watermark delay 0. Both collect each range /
micro-batch through `sealtime.spark.frames.to_arrow` and stamp the wall time when it is
in Python: the commit.

**Latency of an output row** = its commit time - the arrival time of the event that
made it: for a per-row query (q0, q1, q2) the row's own event (the earliest file whose
event times reach the row's ``date_time``; q2 carries ``date_time`` for this); for a
windowed result (q5) the first event at or after the window's end, i.e. the event that
sealed the window (lateness 0). p50 / p99 / max over all rows after the first
``--warmup`` seconds of input. q5 runs with a 1 s window and a 200 ms slide (the
issue's latency shape), in both systems.

Every run's rows are checked against the reference (`bench.nexmark_reference`) over the
files that were written: per-row queries equal it on every row before the input's last
millisecond (which lateness 0 never seals while the source is open); q5 equals it on
every window emitted.
Results go to bench/results/nexmark_latency.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import describe, revision  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
FILE_PATTERN = "nexmark-*.parquet"
Q5_WINDOW_MS, Q5_SLIDE_MS = 1_000, 200


# ------------------------------------------------------------------ the rate-limited input


class RateWriter(threading.Thread):
    """Publishes ``rate * cadence`` Nexmark events every `cadence` seconds into
    `out_dir` until `seconds` of input are written; ``arrivals`` holds, per file, (name,
    wall time of the rename, first and last event time in ms)."""

    def __init__(self, out_dir: Path, rate: int, cadence: float, seconds: float) -> None:
        super().__init__(daemon=True)
        from sealtime.sources.nexmark import Nexmark

        self.out_dir = out_dir
        self.per_file = max(1, int(round(rate * cadence)))
        self.files = int(round(seconds / cadence))
        self.cadence = cadence
        # event time follows the wall clock of the run: 0 ms at the first file
        self.gen = Nexmark(seed=0, rate=rate, start=int(time.time() * 1000))
        self.arrivals: list[tuple[str, float, int, int]] = []
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            t0 = time.perf_counter()
            for i in range(self.files):
                table = self.gen.generate(i * self.per_file, self.per_file)
                ms = table.column("date_time").cast(pa.int64()).to_numpy()
                name = f"nexmark-{i:06d}.parquet"
                tmp = self.out_dir / f".{name}.tmp"
                due = t0 + i * self.cadence
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                pq.write_table(table, tmp)
                os.replace(tmp, self.out_dir / name)
                self.arrivals.append((name, time.time(), int(ms.min()), int(ms.max())))
        except BaseException as exc:  # reported by the parent
            self.error = exc
        finally:
            self.done.set()


# ------------------------------------------------------------------ latency of rows


def arrival_of(times_ms: np.ndarray, arrivals: list[tuple[str, float, int, int]]) -> np.ndarray:
    """For each event time, the arrival (wall seconds) of the earliest file whose events
    reach it (NaN past the last file).

    >>> arr = [("a", 10.0, 0, 5), ("b", 11.0, 5, 9)]
    >>> arrival_of(np.array([3, 5, 7, 12]), arr).tolist()
    [10.0, 10.0, 11.0, nan]
    """
    last = np.array([a[3] for a in arrivals], dtype=np.int64)
    wall = np.array([a[1] for a in arrivals] + [np.nan])
    idx = np.searchsorted(last, times_ms, side="left")
    return wall[idx]


def latencies(batches: list[tuple[float, pa.Table]], query: str, arrivals, skip_ms: int):
    """Seconds from arrival to commit of every output row made by events at least
    `skip_ms` after the first event."""
    first = arrivals[0][2]
    out = []
    for committed, t in batches:
        if t.num_rows == 0:
            continue
        if query == "q5":
            when = pc.cast(t.column("endtime"), pa.int64()).to_numpy()
        else:
            when = t.column("date_time").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
            when = when.to_numpy()
        if "_diff" in t.column_names:
            keep = t.column("_diff").to_numpy() > 0
            when = when[keep]
        when = when[when >= first + skip_ms]
        if len(when):
            out.append(committed - arrival_of(when, arrivals))
    return np.concatenate(out) if out else np.zeros(0)


# ------------------------------------------------------------------ one system in a child


def _q5_text(text: str) -> str:
    return text.replace("INTERVAL '2' SECOND", "INTERVAL '200' MILLISECOND").replace(
        "INTERVAL '10' SECOND", "INTERVAL '1' SECOND"
    )


def child(args) -> None:
    """Run one system on one query over the rate-limited input; print a JSON result."""
    from bench.nexmark_literal import new_session
    from bench.nexmark_sql import register_udfs
    from sealtime.spark.frames import to_arrow

    spark = new_session(args.shuffle_partitions)
    register_udfs(spark)
    work = Path(args.work)
    events = work / "input"
    events.mkdir(parents=True, exist_ok=True)
    cadence = args.cadence_ms / 1000
    writer = RateWriter(events, args.rate, cadence, args.seconds)
    batches: list[tuple[float, pa.Table]] = []
    # not before the input has ended (plus --startup seconds)
    stop_after = time.time() + args.startup
    if args.system == "sealtime":
        run_sealtime_live(spark, args, work, events, writer, batches, stop_after, cadence)
    else:
        run_spark_live(spark, args, work, events, writer, batches, stop_after, to_arrow)
    writer.join()
    if writer.error is not None:
        raise writer.error
    lat = latencies(batches, args.query, writer.arrivals, int(args.warmup * 1000))
    ok = check(args.query, events, batches)
    print(
        "RESULT "
        + json.dumps(
            {
                "system": args.system,
                "query": args.query,
                "rate": args.rate,
                "rows": int(len(lat)),
                "p50": float(np.percentile(lat, 50)) if len(lat) else None,
                "p99": float(np.percentile(lat, 99)) if len(lat) else None,
                "max": float(lat.max()) if len(lat) else None,
                "files": len(writer.arrivals),
                "batches": len(batches),
                **ok,
            }
        ),
        flush=True,
    )


def _wait_first_file(events: Path, writer: RateWriter) -> None:
    while not any(events.glob(FILE_PATTERN)) and not writer.done.is_set():
        time.sleep(0.005)


def run_sealtime_live(spark, args, work, events, writer, batches, stop_after, cadence) -> None:
    import sealtime as st
    from bench.nexmark_sql import QUERY_DIR
    from sealtime.sources.files import Files
    from sealtime.sources.nexmark import NEXMARK_SCHEMA
    from sealtime.sql.pipeline import Pipeline
    from sealtime.sql.statements import parse_text

    flow = st.Dataflow(
        f"latency-{args.query}",
        data_dir=str(work / "data"),
        spark=spark,
        record=False,
        tick=f"{args.cadence_ms}ms",
        shuffle_partitions=args.shuffle_partitions,
        checkpoint_every=args.checkpoint_every or None,
    )
    flow.source(
        "nexmark",
        Files(str(events), format="parquet", schema=NEXMARK_SCHEMA, pattern=FILE_PATTERN, settle=0),
        time="date_time",
        lateness="0s",
    )
    text = (QUERY_DIR / f"{args.query}.sql").read_text(encoding="utf-8")
    if args.query == "q5":
        text = _q5_text(text)
    if args.query == "q2":  # the row's event time, to find its arrival
        text = text.replace("SELECT auction, price FROM", "SELECT auction, price, date_time FROM")
    pipeline = Pipeline(flow, str(work))
    for item in parse_text((QUERY_DIR / "_tables.sql").read_text(encoding="utf-8") + text):
        pipeline.execute(item)
    pipeline.view(args.query).sink(
        st.sinks.Callback(lambda t, lo, hi: batches.append((time.time(), t)))
    )

    class Stop(Exception):
        pass

    def on_tick(report) -> None:
        # every file read and its sealed rows committed: a tick after the input ended
        # that found nothing new
        if writer.done.is_set() and report.rows_in == 0 and time.time() > stop_after:
            raise Stop

    flow.engine  # noqa: B018 - build the plan before the input starts
    writer.start()
    _wait_first_file(events, writer)
    try:
        flow.run(forever=True, on_tick=on_tick)
    except Stop:
        pass
    finally:
        flow.close()


def run_spark_live(spark, args, work, events, writer, batches, stop_after, to_arrow) -> None:
    from pyspark.sql import functions as F

    from bench import nexmark_queries as nq
    from bench.nexmark_literal import spark_schema

    stream = spark.readStream.schema(spark_schema()).parquet(str(events))
    if args.query == "q5":
        df = nq._bids(stream.withWatermark("date_time", "0 seconds"))
        counts = df.groupBy(
            F.window("date_time", "1 second", "200 milliseconds").alias("w"), "auction"
        ).agg(F.count(F.lit(1)).alias("num"))
        df = counts.select(
            "auction",
            "num",
            nq._ms(F.col("w.start")).alias("starttime"),
            nq._ms(F.col("w.end")).alias("endtime"),
        )
        per_batch = nq._ss_q5_batch
    else:
        df = nq.SPARK_SS[args.query].build(stream, work)
        if args.query == "q2":
            df = (
                nq._bids(stream)
                .filter(F.expr("auction % 123 = 0"))
                .select("auction", "price", "date_time")
            )
        per_batch = None

    def on_batch(b, i) -> None:
        t = to_arrow(per_batch(b) if per_batch else b)
        batches.append((time.time(), t))

    q = (
        df.writeStream.outputMode("append")
        .option("checkpointLocation", str(work / "ckpt"))
        .trigger(processingTime=f"{args.cadence_ms} milliseconds")
        .foreachBatch(on_batch)
    )
    query = q.start()
    # the query is running (its first trigger found no file) before the input starts
    t0 = time.time()
    while "Waiting for" not in query.status.get("message", "") and time.time() < t0 + 120:
        time.sleep(0.05)
    writer.start()
    writer.done.wait()
    while time.time() < stop_after:
        time.sleep(0.1)
    query.processAllAvailable()
    query.stop()


def check(query: str, events: Path, batches: list[tuple[float, pa.Table]]) -> dict[str, Any]:
    """The collected rows against the reference over the files written."""
    from bench.nexmark_check import Digest, compare
    from bench.nexmark_reference import reference

    tables = [t for _, t in batches if t.num_rows]
    if query == "q5":
        exp = reference("q5", events, window_ms=Q5_WINDOW_MS, slide_ms=Q5_SLIDE_MS)
        cols = exp.columns
        want = Digest.of(exp.frames(), cols, key_of=lambda df: df["starttime"].to_numpy())
        diff = bool(tables) and "_diff" in tables[0].column_names
        got = Digest.of(tables, cols, diff=diff, key_of=lambda df: df["starttime"].to_numpy())
        emitted = np.unique(got.keys)
        res = compare(got.multiset(), want.multiset(np.isin(want.keys, emitted)))
        res["windows"] = int(len(emitted))
        res["all_windows"] = int(len(np.unique(want.keys)))
        return res
    exp = reference(query, events, **({"with_time": 1} if query == "q2" else {}))
    cols = exp.columns
    diff = bool(tables) and "_diff" in tables[0].column_names

    def event_ms(df):
        return df["date_time"].to_numpy()

    # With lateness 0 and a source that never ends, the rows of the input's last
    # millisecond are never sealed (a later event could still share it); Spark SS emits
    # them. Both are compared on the rows before it, and the rest are counted.
    got = Digest.of(tables, cols, diff=diff, key_of=event_ms)
    want = Digest.of(exp.frames(), cols, key_of=event_ms)
    last = int(want.keys.max()) if len(want.keys) else 0
    res = compare(got.multiset(got.keys < last), want.multiset(want.keys < last))
    res["last_ms_rows"] = int((want.keys >= last).sum())
    return res


# ------------------------------------------------------------------ parent


def run_child(system: str, query: str, rate: int, args, work: Path) -> dict[str, Any]:
    d = Path(tempfile.mkdtemp(prefix=f"lat-{system}-{query}-", dir=work))
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--system",
        system,
        "--query",
        query,
        "--rate",
        str(rate),
        "--seconds",
        str(args.seconds),
        "--cadence-ms",
        str(args.cadence_ms),
        "--warmup",
        str(args.warmup),
        "--work",
        str(d),
        "--shuffle-partitions",
        str(args.shuffle_partitions),
        "--checkpoint-every",
        str(args.checkpoint_every),
        "--startup",
        str(args.startup),
    ]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds * 20 + 600)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        err = [ln for ln in (p.stderr or "").splitlines() if "Error" in ln or "Exception" in ln]
        return {"system": system, "query": query, "rate": rate, "error": (err or ["?"])[-1][:400]}
    out = json.loads(line[len("RESULT ") :])
    out["process_seconds"] = time.perf_counter() - t0
    return out


def render(args, cmd, rows, load_before, load_after, rev) -> str:
    lines = [
        "## Nexmark latency at a fixed input rate: sealtime vs Spark Structured Streaming",
        "",
        f"Machine: {describe()}. Command: `{cmd}`. Load average before: {load_before}; "
        f"after: {load_after}. sealtime: {rev}.",
        "",
        f"Input: {args.seconds:g} s of Nexmark events at each rate, published every "
        f"{args.cadence_ms} ms as one Parquet file; each system alone in a fresh process "
        f"(sealtime tick {args.cadence_ms} ms, lateness 0, checkpoint every "
        f"{args.checkpoint_every} ticks; Spark SS processingTime trigger {args.cadence_ms} ms, "
        "watermark 0); both collect through `frames.to_arrow`. Latency = commit - arrival "
        "of the event that made the row (q5: that sealed its window; 1 s windows, 200 ms "
        f"slide); rows from the first {args.warmup:g} s of input are not counted.",
        "",
        "| rate (events/s) | query | system | rows | p50 ms | p99 ms | max ms | checked |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        name = "sealtime" if r["system"] == "sealtime" else "Spark SS"
        if "error" in r:
            lines.append(
                f"| {r['rate']:,} | {r['query']} | {name} | - | - | - | - | failed: `{r['error']}` |"
            )
            continue

        def ms(x):
            return "-" if x is None else f"{x * 1000:,.0f}"

        ok = "equal" if r["ok"] else f"**differs** (missing {r['missing']}, extra {r['extra']})"
        if "windows" in r:
            ok += f" on {r['windows']} of {r['all_windows']} windows"
        lines.append(
            f"| {r['rate']:,} | {r['query']} | {name} | {r['rows']:,} | {ms(r['p50'])} | "
            f"{ms(r['p99'])} | {ms(r['max'])} | {ok} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rates", default="10000,100000")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--cadence-ms", type=int, default=200)
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds of input not counted")
    ap.add_argument("--queries", default="q0,q1,q2,q5")
    ap.add_argument("--systems", default="sealtime,spark_ss")
    ap.add_argument("--shuffle-partitions", type=int, default=2)
    ap.add_argument("--checkpoint-every", type=int, default=0)
    ap.add_argument("--startup", type=float, default=0.0, help="(child) extra seconds to run")
    ap.add_argument("--work-dir")
    ap.add_argument("--out")
    # child mode
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--system")
    ap.add_argument("--query")
    ap.add_argument("--rate", type=int)
    ap.add_argument("--work")
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    load_before = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    rev = revision()
    work = Path(tempfile.mkdtemp(prefix="sealtime-latency-", dir=args.work_dir))
    rows = []
    for rate in [int(x) for x in args.rates.split(",")]:
        for query in args.queries.split(","):
            for system in args.systems.split(","):
                r = run_child(system, query, rate, args, work)
                print(json.dumps(r), flush=True)
                rows.append(r)
    load_after = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(
        args,
        f"python bench/nexmark_latency.py {argv_text}".strip(),
        rows,
        load_before,
        load_after,
        rev,
    )
    print(text)
    out = Path(args.out or RESULTS / "nexmark_latency.md")
    out.write_text(text, encoding="utf-8")
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
