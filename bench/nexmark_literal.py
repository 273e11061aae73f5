"""Benchmark, literal mode: Nexmark q0-q5, q7, q8 on sealtime and Spark SS, same run.

    python bench/nexmark.py --literal [--events 10000000] [--per-tick 500000] [--repeat 3]
        [--queries q0,q3] [--shuffle-partitions 4] [--data-dir DIR] [--out FILE]

Events: sealtime's deterministic Nexmark generator (`sealtime.sources.Nexmark`, Beam's
rules; seed 0, 10,000 events/s of event time) writes ``--events`` events **once**, before
any timed run, as Parquet: one file per ``--per-tick`` events (``nexmark-00000.parquet``
...), each holding all three kinds in one flat table (``_subsource`` = person / auction
/ bid, plus the union of their columns, null where a column does not apply), with four
row groups per file so that Spark reads one file with parallel tasks.

Streaming shape, the same for both systems: one file = ``--per-tick`` events per tick /
micro-batch.

* Spark SS: ``readStream.parquet(dir)`` with ``maxFilesPerTrigger=1``,
  ``trigger(availableNow=True)``, append output mode, a ``foreachBatch`` sink that
  collects each micro-batch as Arrow (``toArrow()``).
* sealtime: ``Files(dir, format="parquet", max_per_read=per_tick)`` as one source with
  event time ``date_time``, ``max_rows_per_tick=per_tick``, a ``st.sinks.Callback``
  sink (it also hands each sealed range over as Arrow).

Event time and windows: lateness (sealtime) = watermark delay (Spark SS) = 4 s, as in
the Flink Nexmark DDL; windows 10 s (q5: sliding, slide 2 s).

Per query, after a warm-up of both systems on a small separate data set (it also
records Spark SS's refusals) and ``--warmup-runs`` untimed runs of each system over the
benchmark's own events (the JVM's JIT compiler warms the per-row paths of both only on
data of the real size: a first full-size run was up to 1.8x slower than the next ones),
``--repeat`` timed runs of each system alternate (Spark SS first in even runs, sealtime first in odd
ones), in this process, on one SparkSession, a new one per query (Spark SS keeps the
state of a stopped query in the JVM heap; one session for all queries ran out of
memory in q7). Each run is timed from the start of the
streaming run (``flow.run()`` / ``writeStream...start()``) to its end; events/s = events
in the input / those seconds. Per-tick / per-micro-batch seconds come from sealtime's
``TickReport.seconds`` and Spark's ``durationMs.triggerExecution``. The tables show the
median run (by seconds).

Checks (untimed): every run's output is compared with a plain Spark batch query over all
the events. sealtime: the updates of the sink are consolidated (sum of ``_diff`` per
row) into the final contents, which must equal the reference as a multiset. Spark SS
(append mode emits a window only after the watermark passes its end, so an availableNow
run never emits the last ones): unwindowed queries must equal the reference; windowed
ones must equal it on every window they emitted, and the report gives emitted vs
expected windows. Queries Spark SS cannot express are reported with its error message
(q4: every output mode is refused; the script also runs it once, untimed, in update mode
with Spark's correctness check turned off and reports whether the result is right).
A system that fails on a query (an engine bug) is reported with its error and the other
queries go on; the exit status is 1 unless every run of every query matched.
Results go to bench/results/nexmark_literal.md (``--out``).

This is the harness of the first Nexmark table, kept as ``bench/nexmark.py --literal``:
the queries are the Python API forms of `bench.nexmark_queries` and Spark SS's literal
translations of them, Spark SS collects with ``toArrow()`` while sealtime's ``Callback``
collects through `sealtime.spark.frames.to_arrow`, and sealtime never checkpoints during
a run. The default mode of ``bench/nexmark.py`` is the fair harness.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.machine import describe, revision  # noqa: E402
from bench.nexmark_queries import LATENESS, QUERIES, WATERMARK, WINDOW_MS, Query  # noqa: E402
from sealtime.sources.files import Files  # noqa: E402
from sealtime.sources.nexmark import NEXMARK_SCHEMA, Nexmark  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

FILE_PATTERN = "nexmark-*.parquet"
MANIFEST = "_nexmark.json"  # Spark and `Files` skip names starting with "_"
ROW_GROUPS_PER_FILE = 4
WARM_FILES = 3


# ------------------------------------------------------------------ events


def write_events(out_dir: Path, events: int, per_file: int, seed: int = 0) -> list[Path]:
    """Nexmark events ``0 .. events - 1`` as Parquet, one file per `per_file` events.

    Reuses the files in `out_dir` when its manifest says they are exactly these."""
    want = {"events": events, "per_file": per_file, "seed": seed, "row_groups": ROW_GROUPS_PER_FILE}
    manifest = out_dir / MANIFEST
    files = sorted(out_dir.glob(FILE_PATTERN))
    if manifest.exists() and json.loads(manifest.read_text()) == want and files:
        return files
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest.unlink(missing_ok=True)
    for old in files:
        old.unlink()
    gen = Nexmark(seed=seed, limit=events)
    paths = []
    for i, lo in enumerate(range(0, events, per_file)):
        count = min(per_file, events - lo)
        path = out_dir / f"nexmark-{i:05d}.parquet"
        table = gen.generate(lo, count)
        pq.write_table(table, path, row_group_size=max(1, math.ceil(count / ROW_GROUPS_PER_FILE)))
        paths.append(path)
    manifest.write_text(json.dumps(want))
    return paths


def files_source(events_dir: Path, per_tick: int) -> Files:
    return Files(
        events_dir,
        format="parquet",
        schema=NEXMARK_SCHEMA,
        pattern=FILE_PATTERN,
        finite=True,
        settle=0,
        max_per_read=per_tick,
    )


def spark_schema():
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(NEXMARK_SCHEMA)


# ------------------------------------------------------------------ results as multisets


def canonical(table: pa.Table, columns: list[str]) -> pd.DataFrame:
    """The output columns in a comparable form: timestamps as int64 ms, floats rounded
    to 6 decimals (sums and averages may differ in the last bit between engines)."""
    out: dict[str, Any] = {}
    for name in columns:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            # ms precision in the data; Spark's Parquet (INT96) reads as naive UTC ns
            col = pc.cast(col, pa.timestamp("ms", tz=col.type.tz)).cast(pa.int64())
        values = col.to_pandas()
        if pa.types.is_floating(col.type):
            values = values.round(6)
        out[name] = values
    return pd.DataFrame(out)


@dataclass
class Digest:
    """A result as row hashes (of the canonical rows), their multiplicities and, for
    windowed queries, each row's window start; built a table at a time so that a large
    result never has to be in memory as Python objects all at once."""

    hashes: np.ndarray
    weights: np.ndarray
    windows: np.ndarray | None
    frame: pd.DataFrame | None = None  # the canonical rows, kept for small results

    @classmethod
    def of(cls, tables, q: Query, diff: bool = False, keep: int = 0) -> Digest:
        hashes, weights, windows, frames = [], [], [], []
        for t in tables:
            if t.num_rows == 0:
                continue
            df = canonical(t, q.columns)
            hashes.append(pd.util.hash_pandas_object(df, index=False).to_numpy())
            weights.append(
                t.column("_diff").to_numpy().astype(np.int64)
                if diff
                else np.ones(len(df), dtype=np.int64)
            )
            if q.window_of is not None:
                windows.append(window_keys(df, q))
            if keep:
                frames.append(df)
        n = sum(len(h) for h in hashes)
        return cls(
            np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.uint64),
            np.concatenate(weights) if weights else np.zeros(0, dtype=np.int64),
            None
            if q.window_of is None
            else (np.concatenate(windows) if windows else np.zeros(0, dtype=np.int64)),
            pd.concat(frames, ignore_index=True) if frames and n <= keep else None,
        )

    def rows(self) -> int:
        return int(self.weights.sum())

    def multiset(self, mask: np.ndarray | None = None) -> pd.Series:
        """Row hash -> multiplicity (0 dropped), optionally of the rows in `mask`."""
        h, w = (
            (self.hashes, self.weights)
            if mask is None
            else (
                self.hashes[mask],
                self.weights[mask],
            )
        )
        keys, inverse = np.unique(h, return_inverse=True)
        counts = np.bincount(inverse, weights=w, minlength=len(keys)).astype(np.int64)
        keep = counts != 0
        return pd.Series(counts[keep], index=pd.Index(keys[keep], dtype="uint64"))


def compare(got: pd.Series, want: pd.Series) -> dict[str, int | bool]:
    """Equal as multisets? With the number of rows missing from `got` and extra in it."""
    diff = got.sub(want, fill_value=0)
    return {
        "ok": bool((diff == 0).all()) and bool((got > 0).all()),
        "missing": int(-diff[diff < 0].sum()),
        "extra": int(diff[diff > 0].sum()),
    }


def window_keys(df: pd.DataFrame, q: Query) -> np.ndarray:
    col, floor = q.window_of
    v = df[col].to_numpy(dtype=np.int64)
    return v - np.mod(v, floor)


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (p99 of 20 ticks is the largest)."""
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


# ------------------------------------------------------------------ the runs


def input_events(events_dir: Path) -> int:
    """Events in the input: rows of the Parquet files (from their footers)."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in sorted(events_dir.glob(FILE_PATTERN)))


def run_sealtime(
    spark, q: Query, events_dir: Path, data_dir: Path, per_tick: int, partitions: int
) -> dict[str, Any]:
    flow = st.Dataflow(
        f"nexmark-{q.name}",
        data_dir=str(data_dir),
        spark=spark,
        record=False,
        shuffle_partitions=partitions,
    )
    try:
        nx = flow.source(
            "nexmark",
            files_source(events_dir, per_tick),
            time="date_time",
            lateness=LATENESS,
            max_rows_per_tick=per_tick,
        )
        emitted: list[pa.Table] = []
        q.sealtime(nx).sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
        t0 = time.perf_counter()
        reports = flow.run()
        seconds = time.perf_counter() - t0
    finally:
        flow.close()
    events = input_events(events_dir)
    ticks = [r.seconds for r in reports]
    return {
        "events": events,
        "rows_read": sum(r.rows_in for r in reports),
        "seconds": seconds,
        "events_per_s": events / seconds,
        "ticks": len(ticks),
        "p50": statistics.median(ticks),
        "p99": quantile(ticks, 0.99),
        "tables": emitted,
    }


def check_sealtime(run: dict[str, Any], q: Query, truth: Digest) -> None:
    tables = run.pop("tables")
    run["updates"] = sum(t.num_rows for t in tables)
    got = Digest.of(tables, q, diff=True).multiset()
    del tables
    run.update(compare(got, truth.multiset()))
    run["rows"] = int(got.sum())
    if run["rows_read"] != run["events"]:  # the source must have read every event once
        run["ok"] = False


def _spark_ss_writer(df, checkpoint: Path, mode: str, collect):
    return (
        df.writeStream.outputMode(mode)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .foreachBatch(collect)
    )


def spark_stream(spark, events_dir: Path):
    return (
        spark.readStream.schema(spark_schema())
        .option("maxFilesPerTrigger", 1)
        .parquet(str(events_dir))
    )


def run_spark_ss(spark, q: Query, events_dir: Path, checkpoint: Path) -> dict[str, Any]:
    emitted: list[pa.Table] = []

    def collect(batch_df, batch_id: int) -> None:
        emitted.append(batch_df.toArrow())

    df = q.spark_ss(spark_stream(spark, events_dir))
    writer = _spark_ss_writer(df, checkpoint, "append", collect)
    t0 = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    if query.exception() is not None:
        raise RuntimeError(f"Spark SS query {q.name} failed: {query.exception()}")
    progress = [json.loads(p.json) for p in query.recentProgress]
    last_batch = progress[-1]["batchId"] if progress else -1
    if len(progress) != last_batch + 1:
        raise RuntimeError(
            f"Spark SS {q.name}: {len(progress)} progress reports for {last_batch + 1} "
            "micro-batches; raise spark.sql.streaming.numRecentProgressUpdates"
        )
    batches = [p["durationMs"]["triggerExecution"] / 1000 for p in progress]
    # Not the sum of numInputRows: a query that reads the stream twice (a self-join, e.g.
    # persons and auctions) counts every row once per scan.
    events = input_events(events_dir)
    watermark = (progress[-1].get("eventTime") or {}).get("watermark") if progress else None
    return {
        "events": events,
        "rows_read": sum(int(p.get("numInputRows", 0)) for p in progress),
        "seconds": seconds,
        "events_per_s": events / seconds,
        "ticks": len(batches),
        "data_batches": sum(1 for p in progress if int(p.get("numInputRows", 0)) > 0),
        "p50": statistics.median(batches),
        "p99": quantile(batches, 0.99),
        "watermark_ms": None
        if watermark is None
        else int(pd.Timestamp(watermark).value // 1_000_000),
        "tables": emitted,
    }


def check_spark_ss(run: dict[str, Any], q: Query, truth: Digest) -> None:
    got = Digest.of(run.pop("tables"), q)
    run["rows"] = got.rows()
    if q.window_of is None:
        run.update(compare(got.multiset(), truth.multiset()))
        return
    emitted = np.unique(got.windows)
    in_emitted = np.isin(truth.windows, emitted)
    run.update(compare(got.multiset(), truth.multiset(in_emitted)))
    run["expected_rows"] = int(truth.weights[in_emitted].sum())
    run["windows"] = len(emitted)
    windows = np.unique(truth.windows)
    run["all_windows"] = len(windows)
    wm = run.get("watermark_ms")
    closed = windows if wm is None else windows[windows + WINDOW_MS <= wm]
    run["closed_windows"] = len(closed)
    run["closed_not_emitted"] = int(len(np.setdiff1d(closed, emitted)))


def spark_ss_refusals(spark, q: Query, events_dir: Path, work: Path) -> list[tuple[str, str]]:
    """Start each attempted formulation; return (output mode, Spark's message) for each
    refusal. Raises if Spark accepts one (then the query should be benchmarked)."""
    from pyspark.errors import AnalysisException, StreamingQueryException

    refusals = []
    for i, (mode, build) in enumerate(q.spark_ss_attempts):
        try:
            df = build(spark_stream(spark, events_dir))
            query = _spark_ss_writer(
                df, work / f"refused-{q.name}-{i}", mode, lambda b, i: None
            ).start()
            query.awaitTermination()
        except (AnalysisException, StreamingQueryException) as exc:
            refusals.append((mode, _first_sentence(str(exc))))
            continue
        raise RuntimeError(f"Spark SS accepted {q.name} in {mode} mode; benchmark it instead")
    return refusals


def _first_sentence(message: str) -> str:
    line = message.strip().splitlines()[0].strip()
    return line if len(line) <= 900 else line[:897] + "..."


def q4_forced_update(spark, q: Query, events_dir: Path, work: Path, truth_df: pd.DataFrame):
    """q4 in update mode with Spark's correctness check turned off (untimed): does the
    final average per category equal the batch reference?"""
    key = "spark.sql.streaming.statefulOperator.checkCorrectness.enabled"
    emitted: list[pa.Table] = []
    previous = spark.conf.get(key)
    spark.conf.set(key, "false")
    try:
        build = dict(q.spark_ss_attempts)["update"]
        df = build(spark_stream(spark, events_dir))
        query = _spark_ss_writer(
            df, work / "q4-forced", "update", lambda b, i: emitted.append(b.toArrow())
        ).start()
        query.awaitTermination()
    finally:
        spark.conf.set(key, previous)
    if not emitted:
        return {"ok": False, "rows": 0}
    last = canonical(pa.concat_tables(emitted), q.columns).drop_duplicates("category", keep="last")
    merged = last.merge(truth_df, on="category", how="outer", suffixes=("", "_truth"))
    ok = len(merged) == len(truth_df) and bool(
        np.allclose(merged["average"], merged["average_truth"], rtol=1e-12, equal_nan=False)
    )
    worst = float((merged["average"] / merged["average_truth"] - 1).abs().max())
    return {"ok": ok, "categories": len(last), "worst_rel_error": worst}


# ------------------------------------------------------------------ one query


def _error(exc: BaseException) -> str:
    """One line: the exception, or for an error raised in a Python worker / in Spark the
    innermost ``SomethingError: message`` line of the message."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    inner = [ln for ln in lines if re.match(r"^[\w.]*(Error|Exception)\b.*:", ln)]
    line = inner[-1] if inner else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {line}"[:600].replace("`", "'")


def reference(q: Query, all_events, path: Path) -> Digest:
    """The batch reference, written by Spark as Parquet and read back a batch at a time
    (a large result, e.g. q0's, would exceed spark.driver.maxResultSize if collected)."""
    q.batch(all_events).write.mode("overwrite").parquet(str(path))
    files = sorted(p for p in path.glob("*.parquet") if not p.name.startswith(("_", ".")))
    tables = (
        pa.Table.from_batches([b])
        for f in files
        for b in pq.ParquetFile(f).iter_batches(batch_size=1 << 20)
    )
    digest = Digest.of(tables, q, keep=10_000)
    shutil.rmtree(path, ignore_errors=True)
    return digest


def bench_query(spark, q: Query, all_events, events_dir, warm_dir, warm_per, work, args):
    """Reference, warm-up and the alternating timed runs of one query. A system that
    fails (an engine bug) is recorded with its error and not run again for this query."""
    partitions = args.shuffle_partitions
    t0 = time.perf_counter()
    truth = reference(q, all_events, work / f"reference-{q.name}")
    res: dict[str, Any] = {
        "reference_rows": truth.rows(),
        "reference_seconds": time.perf_counter() - t0,
        "sealtime": [],
        "spark_ss": [],
        "errors": {},
    }
    if q.window_of is not None:
        res["reference_windows"] = len(np.unique(truth.windows))

    def sealtime_run(events: Path, data_dir: Path, per_tick: int, check: bool) -> None:
        try:
            r = run_sealtime(spark, q, events, data_dir, per_tick, partitions)
            if check:
                check_sealtime(r, q, truth)
                res["sealtime"].append(r)
                print(f"{q.name} sealtime: {r['seconds']:.2f} s, ok={r['ok']}", flush=True)
        except Exception as exc:  # an engine bug: report it, go on with the rest
            traceback.print_exc()
            res["errors"]["sealtime"] = _error(exc)
            print(f"{q.name} sealtime failed: {res['errors']['sealtime']}", flush=True)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)

    def spark_ss_run(events: Path, ckpt: Path, check: bool) -> None:
        try:
            r = run_spark_ss(spark, q, events, ckpt)
            if check:
                check_spark_ss(r, q, truth)
                res["spark_ss"].append(r)
                print(f"{q.name} Spark SS: {r['seconds']:.2f} s, ok={r['ok']}", flush=True)
        except Exception as exc:
            traceback.print_exc()
            res["errors"]["spark_ss"] = _error(exc)
            print(f"{q.name} Spark SS failed: {res['errors']['spark_ss']}", flush=True)
        finally:
            shutil.rmtree(ckpt, ignore_errors=True)

    # Warm-up: both systems, this query, a small separate data set (untimed).
    sealtime_run(warm_dir, work / f"warm-st-{q.name}", warm_per, check=False)
    if q.spark_ss is not None:
        spark_ss_run(warm_dir, work / f"warm-ss-{q.name}", check=False)
    else:
        res["refusals"] = spark_ss_refusals(spark, q, warm_dir, work)
    # Full-size warm-up (untimed, unchecked): the JIT compiles the hot loops of the scan,
    # the shuffle and the Arrow conversions on batches of the real size.
    for k in range(args.warmup_runs):
        for system in ("ss", "st") if k % 2 == 0 else ("st", "ss"):
            if system == "st" and "sealtime" not in res["errors"]:
                sealtime_run(events_dir, work / f"warm-st-{q.name}-{k}", args.per_tick, False)
            elif system == "ss" and q.spark_ss is not None and "spark_ss" not in res["errors"]:
                spark_ss_run(events_dir, work / f"warm-ss-{q.name}-{k}", check=False)
    for i in range(args.repeat):
        for system in ("ss", "st") if i % 2 == 0 else ("st", "ss"):
            if system == "st" and "sealtime" not in res["errors"]:
                sealtime_run(events_dir, work / f"st-{q.name}-{i}", args.per_tick, check=True)
            elif system == "ss" and q.spark_ss is not None and "spark_ss" not in res["errors"]:
                spark_ss_run(events_dir, work / f"ss-{q.name}-{i}", check=True)
    if q.name == "q4" and q.spark_ss is None and q.spark_ss_attempts:
        try:
            res["forced_update"] = q4_forced_update(spark, q, events_dir, work, truth.frame)
        except Exception as exc:
            res["forced_update"] = {"error": _error(exc)}
    return res


# ------------------------------------------------------------------ main


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def new_session(partitions: int):
    """The benchmark's SparkSession: sealtime's defaults, `partitions` shuffle
    partitions, and every micro-batch's progress kept."""
    conf = {
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
    }
    spark = get_or_create_session(app_name="sealtime-bench-nexmark", conf=conf)
    for key, value in conf.items():
        spark.conf.set(key, value)
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--per-tick", type=int, default=500_000, help="events per tick / batch")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each system (alternating)")
    ap.add_argument(
        "--warmup-runs",
        type=int,
        default=1,
        help="untimed full-size runs of each system before the timed ones (JIT warm-up)",
    )
    ap.add_argument("--queries", default=",".join(QUERIES), help="e.g. q0,q3")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", help="keep the Parquet events here (reused when they match)")
    ap.add_argument("--work-dir", help="parent of the temporary directory")
    ap.add_argument(
        "--out", default=str(Path(__file__).resolve().parent / "results" / "nexmark_literal.md")
    )
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.queries.split(",") if n.strip()]
    unknown = [n for n in names if n not in QUERIES]
    if unknown:
        ap.error(f"--queries: unknown {unknown}; choose from {', '.join(QUERIES)}")
    if args.events < 1 or args.per_tick < 1 or args.repeat < 1:
        ap.error("--events, --per-tick and --repeat must be >= 1")
    if args.warmup_runs < 0:
        ap.error("--warmup-runs must be >= 0")
    partitions = args.shuffle_partitions
    cmd = "python bench/nexmark.py --literal " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )

    t_start = time.perf_counter()
    revision_text = revision()
    spark = new_session(partitions)
    work = Path(tempfile.mkdtemp(prefix="sealtime-nexmark-", dir=args.work_dir))
    load_before = _load()
    results: dict[str, dict[str, Any]] = {}
    try:
        events_dir = Path(args.data_dir) if args.data_dir else work / "events"
        t0 = time.perf_counter()
        paths = write_events(events_dir, args.events, args.per_tick, args.seed)
        gen_seconds = time.perf_counter() - t0
        data_bytes = sum(p.stat().st_size for p in paths)
        warm_per = min(args.per_tick, 50_000)
        warm_dir = work / "warm"
        write_events(warm_dir, WARM_FILES * warm_per, warm_per, args.seed + 1)
        print(
            f"events: {args.events:,} in {len(paths)} files ({data_bytes / 1e6:.0f} MB) "
            f"in {gen_seconds:.1f} s",
            flush=True,
        )
        for i, name in enumerate(names):
            if i:
                # A new session per query (same process, shared by both systems): Spark
                # SS's HDFS-backed state maps stay in the JVM heap after a query stops,
                # and one long session ran q7 out of memory (AGGREGATE_OUT_OF_MEMORY,
                # both systems) after q4 and q5 in a 10M-event run.
                spark.stop()
                spark = new_session(partitions)
            all_events = spark.read.schema(spark_schema()).parquet(str(events_dir))
            results[name] = bench_query(
                spark, QUERIES[name], all_events, events_dir, warm_dir, warm_per, work, args
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = _load()
    total_seconds = time.perf_counter() - t_start

    text = render(args, cmd, names, results, load_before, load_after, total_seconds, revision_text)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    return 0 if all(_all_ok(r) for r in results.values()) else 1


def _all_ok(res: dict[str, Any]) -> bool:
    runs = res["sealtime"] + res["spark_ss"]
    return not res["errors"] and bool(res["sealtime"]) and all(r["ok"] for r in runs)


def _rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def _rate(x: float) -> str:
    return f"{x:,.0f}"


def render(args, cmd, names, results, load_before, load_after, total_seconds, revision) -> str:
    per_tick = args.per_tick
    files = math.ceil(args.events / per_tick)
    lines = [
        "## Nexmark, literal mode (first harness): sealtime vs Spark Structured Streaming",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average (1/5/15 min) "
        f"before: {load_before}; after: {load_after} (a shared 2-core machine: other "
        f"processes compete for the cores, so wall times are noisy). Whole script: "
        f"{total_seconds / 60:.1f} min. sealtime: {revision}.",
        "",
        f"**Workload.** {args.events:,} events of sealtime's Nexmark generator (Beam's "
        f"deterministic rules, seed {args.seed}, 10,000 events/s of event time: 2 % persons, "
        f"6 % auctions, 92 % bids), written once before the runs as {files} Parquet file(s) "
        f"of {per_tick:,} events, each holding all three kinds in one flat table "
        f"(`_subsource` + the union of the columns) in {ROW_GROUPS_PER_FILE} row groups. "
        f"**Same shape for both systems: one file = {per_tick:,} events per tick / "
        f"micro-batch.** Spark SS: `readStream.parquet` with `maxFilesPerTrigger=1`, "
        "`trigger(availableNow=True)`, append mode, `foreachBatch` sink collecting each "
        "micro-batch as Arrow. sealtime: `Files(..., max_per_read=per_tick)` as one "
        f"event-time source (`date_time`), `max_rows_per_tick={per_tick:,}`, "
        "`st.sinks.Callback` sink (also Arrow). Event time: sealtime lateness "
        f"{LATENESS} = Spark SS watermark delay {WATERMARK}; windows 10 s (q5 sliding, "
        f"slide 2 s). Both systems of a query on one SparkSession, a new one per query in "
        "the same process (local[*], driver 4g, AQE off, "
        f"`spark.sql.shuffle.partitions={args.shuffle_partitions}` for both; Spark SS "
        "default HDFS-backed state store, checkpoint on local disk; sealtime's ingest log "
        "and metadata store on local disk, record=False, default checkpoint interval).",
        "",
        f"**Method.** Per query: a warm-up of both systems on {WARM_FILES} small files "
        f"(untimed) and {args.warmup_runs} untimed run(s) of each system over these "
        "events (the JIT warms the per-row paths of both only at the real batch size), "
        f"then {args.repeat} timed run(s) of each system, alternating. "
        "events/s = events in the input files / wall seconds of the streaming run "
        "(`flow.run()`; `start()` to termination; not Spark's `numInputRows`, which counts "
        "the rows of a stream read twice, as in a self-join, twice); tick / batch seconds are sealtime's "
        "`TickReport.seconds` and Spark's `durationMs.triggerExecution` over all ticks / "
        "micro-batches of the run (p99 = nearest rank, so with few ticks it is the "
        "largest). The table shows the median run of each system (by seconds); the ratio "
        "is sealtime events/s / Spark SS events/s of those runs.",
        "",
        "| query | sealtime events/s | Spark SS events/s | ratio | sealtime tick p50 / p99 s "
        "| Spark SS batch p50 / p99 s | sealtime result | Spark SS result |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    ratios = []
    for name in names:
        res = results[name]
        q = QUERIES[name]
        errors = res["errors"]
        sl = _median_run(res["sealtime"]) if res["sealtime"] else None
        ss = _median_run(res["spark_ss"]) if res["spark_ss"] else None
        if sl is not None:
            sl_ok = all(r["ok"] for r in res["sealtime"])
            sl_cell = (
                f"{_rows(sl['rows'])} ({sl['updates']:,} updates), "
                f"{'equal to' if sl_ok else '**differs from**'} the reference"
                + ("" if sl_ok else f" (missing {sl['missing']}, extra {sl['extra']})")
            )
            sl_cols = [
                _rate(sl["events_per_s"]),
                f"{sl['p50']:.2f} / {sl['p99']:.2f} ({sl['ticks']} ticks)",
            ]
        else:
            sl_cell, sl_cols = "", ["failed", "-"]
        if "sealtime" in errors:
            sl_cell += f" **failed**: `{errors['sealtime']}`"
        if ss is not None:
            ss_ok = all(r["ok"] for r in res["spark_ss"])
            if q.window_of is None:
                ss_cell = f"{_rows(ss['rows'])}, "
            else:
                ss_cell = (
                    f"{_rows(ss['rows'])} in {ss['windows']} of {ss['all_windows']} windows "
                    f"emitted ({ss['closed_not_emitted']} closed by the final watermark not "
                    "emitted), "
                )
            ss_cell += f"{'equal to' if ss_ok else '**differs from**'} the reference" + (
                "" if ss_ok else f" (missing {ss['missing']}, extra {ss['extra']})"
            )
            ratio = sl["events_per_s"] / ss["events_per_s"] if sl is not None else None
            if ratio is not None:
                ratios.append(ratio)
            ss_cols = [
                _rate(ss["events_per_s"]),
                "-" if ratio is None else f"{ratio:.2f}x",
                f"{ss['p50']:.2f} / {ss['p99']:.2f} ({ss['ticks']} batches)",
            ]
        elif q.spark_ss is None:
            ss_cell = "not expressible (below)"
            ss_cols = ["not expressible", "-", "-"]
        else:
            ss_cell, ss_cols = "", ["failed", "-", "-"]
        if "spark_ss" in errors:
            ss_cell += f" **failed**: `{errors['spark_ss']}`"
        lines.append(
            f"| {name} {q.title} | {sl_cols[0]} | {ss_cols[0]} | {ss_cols[1]} "
            f"| {sl_cols[1]} | {ss_cols[2]} | {sl_cell.strip()} | {ss_cell.strip()} |"
        )
    lines += [
        "",
        f"Geometric mean of the ratios over the {len(ratios)} queries Spark SS runs: "
        f"**{_geomean(ratios):.2f}x**.",
        "",
        "Reference (plain Spark batch over all events, untimed): "
        + "; ".join(
            f"{n} {results[n]['reference_rows']:,} rows"
            + (
                f" in {results[n]['reference_windows']} windows"
                if "reference_windows" in results[n]
                else ""
            )
            for n in names
        )
        + ".",
        "",
        "Seconds per run (in run order): "
        + "; ".join(
            f"{n}: sealtime "
            + ", ".join(f"{r['seconds']:.2f}" for r in results[n]["sealtime"])
            + (
                " / Spark SS " + ", ".join(f"{r['seconds']:.2f}" for r in results[n]["spark_ss"])
                if results[n]["spark_ss"]
                else ""
            )
            for n in names
        )
        + ".",
        "",
    ]
    refused = [n for n in names if "refusals" in results[n]]
    if refused:
        lines += ["**Queries Spark SS cannot express** (each formulation was started; Spark's "]
        lines[-1] += "message):"
        lines.append("")
        for n in refused:
            for mode, msg in results[n]["refusals"]:
                lines.append(f"* {n}, {mode} mode: `{msg}`")
            forced = results[n].get("forced_update")
            if forced is not None and "error" in forced:
                lines.append(
                    f"* {n}, update mode with the correctness check off: failed: "
                    f"`{forced['error']}`"
                )
            elif forced is not None:
                lines.append(
                    f"* {n}, update mode with "
                    "`spark.sql.streaming.statefulOperator.checkCorrectness.enabled=false` "
                    "(untimed): it runs, and the last emitted average per category "
                    + (
                        "equals the reference."
                        if forced["ok"]
                        else f"**differs** from the reference (largest relative error "
                        f"{forced.get('worst_rel_error', float('nan')):.3g}): Spark SS has "
                        "no retractions, so in update mode a grown max of an auction reaches "
                        "the average as one more input row instead of replacing the old one."
                    )
                )
        lines.append("")
    lines += [
        "**Queries.** q0 bids -> (auction, bidder, price, date_time, extra); q1 the same "
        "with price x 0.908; q2 bids with auction % 123 = 0 -> (auction, price); q3 "
        "auctions of category 10 joined with persons in OR/ID/CA on seller = id (an "
        "unwindowed inner join: both systems keep both sides as state); q4 max bid per "
        "auction between its start and expiry, then the average per category (an "
        "unwindowed, changing result: sealtime retracts and updates it; it is compared "
        "as the final contents); q5 count per auction per sliding window, joined with the "
        "max count per window (ties kept); q7 max price per tumbling window joined back "
        "to that window's bids with that price (a bid belongs to its own window; Flink's "
        "q7 uses BETWEEN end - 10 s AND end; Spark SS joins on the two sides' event-time "
        "windows, so that it drops a window's bids once the watermark passes it); q8 "
        "persons and auctions grouped per "
        "tumbling window, joined on id = seller. Code: `bench/nexmark_queries.py` (each "
        "query as sealtime, Spark SS and batch).",
        "",
        "**Checks.** sealtime: the sink's updates are consolidated (sum of `_diff` per "
        "row) into the final contents and compared with the batch reference as a "
        "multiset (timestamps as ms, floats rounded to 6 decimals). Spark SS: unwindowed "
        "queries must equal the reference; windowed ones (append mode emits a window "
        "only once the watermark has passed its end, so an availableNow run never "
        "emits the last ones) must equal it on every window they emitted. Every run of "
        "both systems was checked.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
