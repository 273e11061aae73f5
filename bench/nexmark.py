"""Benchmark: Nexmark q0-q23, sealtime (SQL) against Spark Structured Streaming, fair terms.

    python bench/nexmark.py [--events 10000000] [--per-tick 100000,500000] [--repeat 5]
        [--queries q0,q5] [--sinks arrow,discard] [--checkpoint-every 5]
        [--data-dir DIR] [--out FILE]
    python bench/nexmark.py --coverage [--events 200000]     # every query once, checked
    python bench/nexmark.py --literal ...                      # the first harness

**Queries.** sealtime runs each query as SQL: ``bench/nexmark/_tables.sql`` (person,
auction and bid as views over the one source) and ``bench/nexmark/qN.sql``, applied to
the dataflow with `sealtime.sql.pipeline` (what ``sealtime run`` does with a file).
Spark SS runs its best formulation (`bench.nexmark_queries.SPARK_SS`, each with the
reason it is the best a Spark expert would write); a query Spark SS cannot run is
reported with its refusal.

**Events and shape.** sealtime's deterministic Nexmark generator (Beam's rules, seed 0,
10,000 events/s of event time) writes the events once, before any timed run, as Parquet:
one file per tick (``--per-tick``), all three kinds in one flat table. Both systems read
one file per tick / micro-batch: sealtime ``Files(max_per_read=per_tick)`` with
``max_rows_per_tick=per_tick``; Spark SS ``maxFilesPerTrigger=1``,
``trigger(availableNow=True)``. Lateness 4 s = watermark delay 4 s.

**The same sink for both** (``--sinks``): ``arrow`` — each range / micro-batch is
collected as Arrow through `sealtime.spark.frames.to_arrow` (sealtime's ``Callback``
sink does; Spark SS's ``foreachBatch`` calls the same function); ``discard`` — each is
written to Spark's ``noop`` sink (sealtime: `NoopSink`; Spark SS: ``foreachBatch`` writing
``noop``), so nothing reaches Python.

**Durability on both sides.** Spark SS commits its offsets and state to its checkpoint
every micro-batch. sealtime writes a soft checkpoint of all operator state every
``--checkpoint-every`` ticks (default 5: ``docs/durability.md`` names no production
interval; 5 ticks is the interval whose restart ``bench/bench_durability.py`` measures,
1.0-1.6 s after 12-42 ticks) on top of its ingest log and bindings, which it writes
every tick.

**Method.** Per query: the reference (`bench.nexmark_reference`: pandas over the files,
written from the query's definition, independent of both systems); a warm-up of both
systems on small separate files; ``--warmup-runs`` untimed full-size runs of each; then
``--repeat`` timed runs of each system per sink, alternating (Spark SS first in even
rounds). Every ``arrow`` run's output is checked against the reference: sealtime's
updates consolidated into the final contents must equal it; Spark SS's append output
must equal it (windowed queries: on every window it emitted, since append mode emits a
window only once the watermark passes it). ``discard`` runs are the same plans with
another sink (checked through their ``arrow`` twins). events/s = input events / wall
seconds of the streaming run (``flow.run()`` / ``start()`` to termination).

Results go to bench/results/nexmark.md (``--out``); ``--coverage`` to
bench/results/nexmark_coverage.md. Spark SS's q4 (transformWithStateInPandas) needs
protobuf: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.machine import describe, revision  # noqa: E402
from bench.nexmark_check import Digest, canonical, check_ties, compare, row_hashes  # noqa: E402
from bench.nexmark_literal import (  # noqa: E402
    files_source,
    input_events,
    new_session,
    quantile,
    spark_stream,
    write_events,
)
from bench.nexmark_queries import LATENESS, SPARK_SS, SPARK_SS_REFUSED, SparkSS  # noqa: E402
from bench.nexmark_reference import reference  # noqa: E402
from bench.nexmark_sql import QUERY_NAMES, apply_query, register_udfs, write_side_input  # noqa: E402
from sealtime.sinks.base import CommitContext, Sink  # noqa: E402
from sealtime.spark.frames import to_arrow  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
WARM_FILES = 3
SINKS = ("arrow", "discard")


class NoopSink(Sink):
    """Computes each sealed range and discards it: Spark's ``noop`` data source, the
    same write Spark SS's discarding ``foreachBatch`` does."""

    def commit(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> bool:
        if delta is None:
            return False
        delta.write.format("noop").mode("overwrite").save()
        return True


# ------------------------------------------------------------------ the expected result


class Expected:
    """A query's reference, digested: the multiset to compare with, and for windowed
    results each row's window key (to compare only the windows Spark SS emitted)."""

    def __init__(self, name: str, events_dir: Path) -> None:
        t0 = time.perf_counter()
        self.result = reference(name, events_dir)
        self.columns = self.result.columns
        self.ties = self.result.ties
        ss = SPARK_SS.get(name)
        self.window = ss.window if ss is not None else None
        cols = self.ties.key if self.ties is not None else self.columns
        self.digest = Digest.of(self.result.frames(), cols, key_of=self._key_of(cols))
        self.seconds = time.perf_counter() - t0

    def _key_of(self, cols: list[str]) -> Callable[[pd.DataFrame], np.ndarray] | None:
        if self.window is None or not set(self.window) <= set(cols):
            return None
        return lambda df: window_key(df, self.window)

    def rows(self) -> int:
        return self.digest.rows()

    def windows(self) -> int | None:
        return None if self.digest.keys is None else len(np.unique(self.digest.keys))


def window_key(df: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """One int64 per row of a canonical frame: the row's window (its window columns)."""
    return row_hashes(df[columns]).view(np.int64)


def check_sealtime(tables: list[pa.Table], exp: Expected) -> dict[str, Any]:
    """sealtime's updates, consolidated, against the whole reference."""
    if exp.ties is not None:
        res = check_ties(tables, exp.ties, exp.columns, exp.digest.multiset(), diff=True)
    else:
        res = compare(Digest.of(tables, exp.columns, diff=True).multiset(), exp.digest.multiset())
    res["rows"] = int(sum(pa.compute.sum(t.column("_diff")).as_py() or 0 for t in tables))
    res["updates"] = sum(t.num_rows for t in tables)
    return res


def check_spark_ss(tables: list[pa.Table], exp: Expected, ss: SparkSS) -> dict[str, Any]:
    """Spark SS's output against the reference: all of it, or the windows it emitted
    (append mode), or its last row per key (update mode)."""
    if ss.upsert_key is not None:
        frames = [canonical(t, exp.columns) for t in tables if t.num_rows]
        df = pd.concat(frames, ignore_index=True) if frames else canonical(pa.table({}), [])
        last = df.drop_duplicates(ss.upsert_key, keep="last")
        res = compare(Digest.of([last], exp.columns).multiset(), exp.digest.multiset())
        res["rows"] = len(last)
        return res
    if exp.ties is not None:
        res = check_ties(tables, exp.ties, exp.columns, exp.digest.multiset(), diff=False)
        res["rows"] = sum(t.num_rows for t in tables)
        return res
    if ss.window is None:
        got = Digest.of(tables, exp.columns)
        res = compare(got.multiset(), exp.digest.multiset())
        res["rows"] = got.rows()
        return res
    got = Digest.of(tables, exp.columns, key_of=lambda df: window_key(df, ss.window))
    emitted = np.unique(got.keys)
    mask = np.isin(exp.digest.keys, emitted)
    res = compare(got.multiset(), exp.digest.multiset(mask))
    res["rows"] = got.rows()
    res["windows"] = len(emitted)
    res["all_windows"] = exp.windows()
    return res


# ------------------------------------------------------------------ one run of each system


def run_sealtime(
    spark,
    name: str,
    events_dir: Path,
    data_dir: Path,
    per_tick: int,
    *,
    sink: str,
    checkpoint_every: int | None,
    partitions: int,
    base_dir: Path,
) -> dict[str, Any]:
    flow = st.Dataflow(
        f"nexmark-{name}",
        data_dir=str(data_dir),
        spark=spark,
        record=False,
        shuffle_partitions=partitions,
        checkpoint_every=checkpoint_every,
    )
    emitted: list[pa.Table] = []
    try:
        flow.source(
            "nexmark",
            files_source(events_dir, per_tick),
            time="date_time",
            lateness=LATENESS,
            max_rows_per_tick=per_tick,
        )
        coll = apply_query(flow, name, base_dir)
        if sink == "arrow":
            coll.sink(st.sinks.Callback(lambda t, lo, hi: emitted.append(t)))
        else:
            coll.sink(NoopSink())
        t0 = time.perf_counter()
        reports = flow.run()
        seconds = time.perf_counter() - t0
    finally:
        flow.close()
    events = input_events(events_dir)
    ticks = [r.seconds for r in reports]
    rows_read = sum(r.rows_in for r in reports)
    return {
        "events": events,
        "rows_read": rows_read,
        "seconds": seconds,
        "events_per_s": events / seconds,
        "ticks": len(ticks),
        "checkpoints": len(ticks) // checkpoint_every if checkpoint_every else 0,
        "p50": statistics.median(ticks),
        "p99": quantile(ticks, 0.99),
        "first_tick": ticks[0] if ticks else float("nan"),
        "tables": emitted,
    }


def run_spark_ss(
    spark, name: str, events_dir: Path, checkpoint: Path, *, sink: str, base_dir: Path
) -> dict[str, Any]:
    ss = SPARK_SS[name]
    emitted: list[pa.Table] = []

    def on_batch(batch_df, batch_id: int) -> None:
        df = ss.per_batch(batch_df) if ss.per_batch is not None else batch_df
        if sink == "arrow":
            emitted.append(to_arrow(df))
        else:
            df.write.format("noop").mode("overwrite").save()

    previous = {k: spark.conf.get(k, None) for k in ss.conf}
    for k, v in ss.conf.items():
        spark.conf.set(k, v)
    try:
        df = ss.build(spark_stream(spark, events_dir), base_dir)
        writer = (
            df.writeStream.outputMode(ss.mode)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .foreachBatch(on_batch)
        )
        t0 = time.perf_counter()
        query = writer.start()
        query.awaitTermination()
        seconds = time.perf_counter() - t0
    finally:
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    if query.exception() is not None:
        raise RuntimeError(f"Spark SS query {name} failed: {query.exception()}")
    progress = [json.loads(p.json) for p in query.recentProgress]
    batches = [p["durationMs"]["triggerExecution"] / 1000 for p in progress]
    events = input_events(events_dir)
    return {
        "events": events,
        "rows_read": sum(int(p.get("numInputRows", 0)) for p in progress),
        "seconds": seconds,
        "events_per_s": events / seconds,
        "ticks": len(batches),
        "p50": statistics.median(batches) if batches else float("nan"),
        "p99": quantile(batches, 0.99) if batches else float("nan"),
        "first_tick": batches[0] if batches else float("nan"),
        "tables": emitted,
    }


# ------------------------------------------------------------------ one query


def _error(exc: BaseException) -> str:
    from bench.nexmark_literal import _error as err

    return err(exc)


def bench_query(spark, name: str, args, work: Path, events: dict[int, Path], warm: Path):
    """Reference, warm-up, checked and timed runs of one query at every tick size."""
    res: dict[str, Any] = {"errors": {}, "sizes": {}}
    systems = [s for s in args.systems if s != "spark_ss" or name in SPARK_SS]
    for per_tick, events_dir in events.items():
        exp = Expected(name, events_dir)
        size: dict[str, Any] = {
            "reference_rows": exp.rows(),
            "reference_windows": exp.windows(),
            "reference_seconds": exp.seconds,
            "runs": {(s, k): [] for s in systems for k in args.sinks},
        }
        res["sizes"][per_tick] = size

        def one(system, sink, events_dir, per, tag, check, exp=exp, size=size):
            if system in res["errors"]:
                return
            d = work / f"{tag}-{system}-{name}-{per}-{sink}"
            try:
                if system == "sealtime":
                    r = run_sealtime(
                        spark,
                        name,
                        events_dir,
                        d,
                        per,
                        sink=sink,
                        checkpoint_every=args.checkpoint_every,
                        partitions=args.shuffle_partitions,
                        base_dir=work,
                    )
                else:
                    r = run_spark_ss(spark, name, events_dir, d, sink=sink, base_dir=work)
                tables = r.pop("tables")
                if check and sink == "arrow":
                    r.update(
                        check_sealtime(tables, exp)
                        if system == "sealtime"
                        else check_spark_ss(tables, exp, SPARK_SS[name])
                    )
                    if system == "sealtime" and r["rows_read"] != r["events"]:
                        r["ok"] = False
                del tables
                if tag == "run":
                    size["runs"][(system, sink)].append(r)
                print(
                    f"{name} {per:,}/tick {system} {sink} {tag}: {r['seconds']:.2f} s"
                    + (f", ok={r.get('ok')}" if check and sink == "arrow" else ""),
                    flush=True,
                )
            except Exception as exc:  # an engine bug: report it, go on with the rest
                traceback.print_exc()
                res["errors"][system] = _error(exc)
                print(f"{name} {system} failed: {res['errors'][system]}", flush=True)
            finally:
                shutil.rmtree(d, ignore_errors=True)

        if per_tick == min(events):
            for system in systems:
                one(system, "arrow", warm, min(per_tick, 50_000), "warm", False)
        for k in range(args.warmup_runs):
            for system in systems if k % 2 == 0 else systems[::-1]:
                one(system, args.sinks[0], events_dir, per_tick, "warmup", False)
        for i in range(args.repeat):
            for sink in args.sinks:
                for system in systems if i % 2 == 0 else systems[::-1]:
                    one(system, sink, events_dir, per_tick, "run", True)
    return res


# ------------------------------------------------------------------ coverage


def spark_ss_refusals(spark, name: str, events_dir: Path, work: Path) -> list[tuple[str, str, str]]:
    """Start each formulation Spark SS is expected to refuse; (what, mode, Spark's
    message) for each, or "runs" when Spark accepted it (then it belongs in SPARK_SS)."""
    from pyspark.errors import AnalysisException, StreamingQueryException

    from bench.nexmark_literal import _first_sentence

    out = []
    for i, (what, mode, build) in enumerate(SPARK_SS_REFUSED.get(name, [])):
        try:
            df = build(spark_stream(spark, events_dir), work)
            q = (
                df.writeStream.outputMode(mode)
                .option("checkpointLocation", str(work / f"refused-{name}-{i}"))
                .trigger(availableNow=True)
                .foreachBatch(lambda b, i: None)
                .start()
            )
            q.awaitTermination()
            out.append((what, mode, "runs"))
        except (AnalysisException, StreamingQueryException) as exc:
            out.append((what, mode, _first_sentence(str(exc))))
    return out


def coverage(spark, args, work: Path, events_dir: Path, per_tick: int) -> dict[str, Any]:
    """Every query once on each system that runs it, checked against its reference."""
    out: dict[str, Any] = {}
    for name in args.queries:
        row: dict[str, Any] = {}
        try:
            exp = Expected(name, events_dir)
            row["reference_rows"] = exp.rows()
        except Exception as exc:
            traceback.print_exc()
            row["reference_error"] = _error(exc)
            out[name] = row
            continue
        if "spark_ss" in args.systems and name in SPARK_SS_REFUSED:
            row["refusals"] = spark_ss_refusals(spark, name, events_dir, work)
        for system in args.systems:
            if system == "spark_ss" and name not in SPARK_SS:
                continue
            d = work / f"cov-{system}-{name}"
            try:
                if system == "sealtime":
                    r = run_sealtime(
                        spark,
                        name,
                        events_dir,
                        d,
                        per_tick,
                        sink="arrow",
                        checkpoint_every=args.checkpoint_every,
                        partitions=args.shuffle_partitions,
                        base_dir=work,
                    )
                    r.update(check_sealtime(r.pop("tables"), exp))
                else:
                    r = run_spark_ss(spark, name, events_dir, d, sink="arrow", base_dir=work)
                    r.update(check_spark_ss(r.pop("tables"), exp, SPARK_SS[name]))
                row[system] = r
            except Exception as exc:
                row[system] = {"error": _error(exc)}
            finally:
                shutil.rmtree(d, ignore_errors=True)
            print(
                f"coverage {name} {system}: {row[system].get('ok', row[system].get('error'))}",
                flush=True,
            )
        out[name] = row
    return out


# ------------------------------------------------------------------ report


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def render(args, cmd, results, load_before, load_after, total_seconds, rev) -> str:
    lines = [
        "## Nexmark: sealtime vs Spark Structured Streaming (fair harness)",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average (1/5/15 min) "
        f"before: {load_before}; after: {load_after}. Whole script: "
        f"{total_seconds / 60:.1f} min. sealtime: {rev}.",
        "",
        f"**Terms.** {args.events:,} events of sealtime's Nexmark generator, one Parquet "
        "file per tick / micro-batch for both systems. sealtime runs the SQL files of "
        "`bench/nexmark/` and checkpoints all operator state every "
        f"{args.checkpoint_every} ticks (besides its ingest log and bindings every tick); "
        "Spark SS runs its best formulation (`bench/nexmark_queries.py`, `SPARK_SS`) and "
        "commits its checkpoint every micro-batch. Sinks: **arrow** = both collect each "
        "range / micro-batch through `sealtime.spark.frames.to_arrow`; **discard** = both "
        "write it to Spark's `noop` sink. Spark: local[*], driver 4g, AQE off, "
        f"`spark.sql.shuffle.partitions={args.shuffle_partitions}`, HDFS-backed state "
        f"store. Median of {args.repeat} alternating runs of each system per sink, after "
        f"a warm-up on small files and {args.warmup_runs} untimed full-size run(s); every "
        "arrow run checked against the independent reference (`bench/nexmark_reference.py`).",
        "",
    ]
    for per_tick in args.per_tick:
        for sink in args.sinks:
            lines += [
                f"### {per_tick:,} events per tick, sink: {sink}",
                "",
                "| query | sealtime events/s | Spark SS events/s | ratio | sealtime tick p50 / p99 s "
                "| Spark SS batch p50 / p99 s | checked |",
                "|---|---:|---:|---:|---:|---:|---|",
            ]
            ratios = []
            for name in args.queries:
                res = results[name]
                size = res["sizes"].get(per_tick)
                if size is None:
                    continue
                sl_runs = size["runs"].get(("sealtime", sink), [])
                ss_runs = size["runs"].get(("spark_ss", sink), [])
                sl = _median_run(sl_runs) if sl_runs else None
                ss = _median_run(ss_runs) if ss_runs else None
                cells = []
                cells.append(
                    f"{sl['events_per_s']:,.0f}"
                    if sl
                    else "failed"
                    if "sealtime" in res["errors"]
                    else "-"
                )
                if name not in SPARK_SS:
                    cells.append("cannot run")
                else:
                    cells.append(
                        f"{ss['events_per_s']:,.0f}"
                        if ss
                        else "failed"
                        if "spark_ss" in res["errors"]
                        else "-"
                    )
                if sl and ss:
                    ratio = sl["events_per_s"] / ss["events_per_s"]
                    ratios.append(ratio)
                    cells.append(f"{ratio:.2f}x")
                else:
                    cells.append("-")
                cells.append(f"{sl['p50']:.2f} / {sl['p99']:.2f} ({sl['ticks']})" if sl else "-")
                cells.append(f"{ss['p50']:.2f} / {ss['p99']:.2f} ({ss['ticks']})" if ss else "-")
                checks = []
                for system, runs in (("sealtime", sl_runs), ("Spark SS", ss_runs)):
                    checked = [r for r in runs if "ok" in r]
                    if checked:
                        ok = all(r["ok"] for r in checked)
                        checks.append(
                            f"{system} {'equal' if ok else '**differs**'} ({len(checked)} runs)"
                        )
                for system, err in res["errors"].items():
                    checks.append(f"{system} failed: `{err}`")
                lines.append(
                    f"| {name} | " + " | ".join(cells) + f" | {'; '.join(checks) or '-'} |"
                )
            lines += [
                "",
                f"Geometric mean over the {len(ratios)} queries both run: **{_geomean(ratios):.2f}x**.",
                "",
            ]
    lines.append(
        "Seconds per run (in run order): "
        + "; ".join(
            f"{name} {per:,}/{sink}: "
            + ", ".join(
                f"{'st' if system == 'sealtime' else 'ss'} "
                + "/".join(f"{r['seconds']:.2f}" for r in runs)
                for (system, s), runs in results[name]["sizes"][per]["runs"].items()
                if s == sink and runs
            )
            for name in args.queries
            for per in args.per_tick
            if per in results[name]["sizes"]
            for sink in args.sinks
        )
        + "."
    )
    return "\n".join(lines) + "\n"


def render_coverage(args, cmd, cov, load, rev) -> str:
    lines = [
        "## Nexmark q0-q23: coverage, every query checked against an independent reference",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average: {load}. sealtime: {rev}.",
        "",
        f"{args.events:,} events, {args.per_tick[0]:,} per tick; sealtime runs "
        "`bench/nexmark/qN.sql`; Spark SS its best formulation where it has one. The "
        "reference is pandas over the event files (`bench/nexmark_reference.py`).",
        "",
        "| query | reference rows | sealtime | Spark SS |",
        "|---|---:|---|---|",
    ]

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return "-"
        if "error" in r:
            return f"fails: `{r['error']}`"
        text = "equal" if r["ok"] else f"**differs** (missing {r['missing']}, extra {r['extra']})"
        if "windows" in r:
            text += f" on {r['windows']} of {r['all_windows']} windows emitted"
        return f"{text}; {r['seconds']:.1f} s"

    for name in args.queries:
        row = cov[name]
        if "reference_error" in row:
            lines.append(f"| {name} | reference failed: `{row['reference_error']}` | - | - |")
            continue
        ss = row.get("spark_ss") if name in SPARK_SS else {"error": "refused (below)"}
        lines.append(
            f"| {name} | {row['reference_rows']:,} | {cell(row.get('sealtime'))} | {cell(ss)} |"
        )
    refused = [(n, r) for n in args.queries for r in cov[n].get("refusals", [])]
    if refused:
        lines += ["", "**Spark SS formulations tried and refused** (Spark's message):", ""]
        lines += [f"* {n}, {what}, {mode} mode: `{msg}`" for n, (what, mode, msg) in refused]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--literal" in argv:
        from bench.nexmark_literal import main as literal

        argv.remove("--literal")
        return literal(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument(
        "--per-tick", default="100000,500000", help="events per tick, e.g. 10000,100000"
    )
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup-runs", type=int, default=1)
    ap.add_argument("--queries", default=",".join(QUERY_NAMES))
    ap.add_argument("--systems", default="sealtime,spark_ss")
    ap.add_argument("--sinks", default=",".join(SINKS))
    ap.add_argument("--checkpoint-every", type=int, default=5, help="sealtime: ticks (0: none)")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument("--coverage", action="store_true", help="every query once, checked")
    ap.add_argument("--data-dir", help="keep the Parquet events here (reused when they match)")
    ap.add_argument("--work-dir")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    args.per_tick = [int(x) for x in args.per_tick.split(",") if x.strip()]
    args.queries = [q.strip() for q in args.queries.split(",") if q.strip()]
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    args.sinks = [s.strip() for s in args.sinks.split(",") if s.strip()]
    bad = [q for q in args.queries if q not in QUERY_NAMES]
    if bad:
        ap.error(f"--queries: unknown {bad}")
    if set(args.sinks) - set(SINKS) or set(args.systems) - {"sealtime", "spark_ss"}:
        ap.error("--sinks: arrow, discard; --systems: sealtime, spark_ss")
    args.checkpoint_every = args.checkpoint_every or None
    cmd = "python bench/nexmark.py " + " ".join(argv)
    t_start = time.perf_counter()
    rev = revision()
    work = Path(tempfile.mkdtemp(prefix="sealtime-nexmark-", dir=args.work_dir))
    load_before = _load()
    spark = new_session(args.shuffle_partitions)
    register_udfs(spark)
    write_side_input(work)
    try:
        root = Path(args.data_dir) if args.data_dir else work / "events"
        events = {}
        for per in args.per_tick:
            events[per] = root / f"per{per}"
            write_events(events[per], args.events, per)
        if args.coverage:
            per = args.per_tick[0]
            cov = coverage(spark, args, work, events[per], per)
            text = render_coverage(args, cmd, cov, load_before, rev)
            ok = all(
                r.get(s, {}).get("ok", True) and "error" not in r.get(s, {})
                for r in cov.values()
                for s in args.systems
            )
            out = Path(args.out or RESULTS / "nexmark_coverage.md")
        else:
            warm = work / "warm"
            write_events(warm, WARM_FILES * 50_000, 50_000, seed=1)
            results = {}
            for i, name in enumerate(args.queries):
                if i:
                    spark.stop()  # Spark SS keeps a stopped query's state in the heap
                    spark = new_session(args.shuffle_partitions)
                    register_udfs(spark)
                results[name] = bench_query(spark, name, args, work, events, warm)
            text = render(
                args, cmd, results, load_before, _load(), time.perf_counter() - t_start, rev
            )
            ok = all(
                not r["errors"]
                and all(
                    x.get("ok", True)
                    for s in r["sizes"].values()
                    for runs in s["runs"].values()
                    for x in runs
                )
                for r in results.values()
            )
            out = Path(args.out or RESULTS / "nexmark.md")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
