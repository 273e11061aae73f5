"""Benchmark: recovery after ``kill -9`` mid-run, sealtime vs Spark SS, Nexmark queries.

    python bench/nexmark_recovery.py [--queries q3,q5,q8] [--events 2000000]
        [--per-tick 100000] [--kill-after 10] [--checkpoint-every 5]

Per query and system: a child process runs the query over the event files (one file per
tick / micro-batch, as `bench/nexmark.py`) into an exactly-once sink, and reports after
each tick / micro-batch; the parent ``kill -9``s it after ``--kill-after`` of them. A new
child then runs the same job on the same data dir / checkpoint to the end.

* sealtime: the SQL file, ``Dataflow(checkpoint_every=...)``, sink ``st.sinks.Parquet``
  (exactly-once); the restart restores the latest checkpoint and replays its ingest log
  after it.
* Spark SS: its best formulation (`bench.nexmark_queries.SPARK_SS`), ``foreachBatch``
  writing each micro-batch as Parquet into a directory named by its batch id (a batch
  run again after the restart overwrites its own directory: idempotent); the restart
  resumes from its checkpoint (offsets, commits, state).

Reported: **recovery** = from the restarted job's start (``flow.run()`` / ``start()``)
to the end of its first tick / micro-batch (restore, catch-up and commit); the restarted
process's session start; and whether the final output (all committed files) equals the
reference (`bench.nexmark_reference`; Spark SS windowed queries: on the windows emitted).
Results go to bench/results/nexmark_recovery.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results"


def child(system: str, query: str, events: Path, work: Path, per_tick: int, every: int) -> None:
    """Run the job to its end (or until killed); print ``TICK n seconds`` per tick and
    ``START s`` (the job's start, after the session) and ``FIRST s`` (first tick done)."""
    t_proc = time.perf_counter()
    from bench.nexmark_literal import files_source, new_session, spark_stream
    from bench.nexmark_queries import LATENESS, SPARK_SS
    from bench.nexmark_sql import apply_query, register_udfs

    spark = new_session(4)
    register_udfs(spark)
    print(f"SESSION {time.perf_counter() - t_proc:.3f}", flush=True)
    out = work / "out"
    if system == "sealtime":
        import sealtime as st

        flow = st.Dataflow(
            f"recover-{query}",
            data_dir=str(work / "data"),
            spark=spark,
            record=False,
            checkpoint_every=every,
        )
        flow.source(
            "nexmark",
            files_source(events, per_tick),
            time="date_time",
            lateness=LATENESS,
            max_rows_per_tick=per_tick,
        )
        apply_query(flow, query, work).sink(st.sinks.Parquet(str(out)))
        t0 = time.perf_counter()
        print(f"START {t0 - t_proc:.3f}", flush=True)
        n = 0

        def on_tick(report) -> None:
            nonlocal n
            n += 1
            print(f"TICK {n} {time.perf_counter() - t0:.3f} {report.rows_in}", flush=True)

        flow.run(on_tick=on_tick)
        flow.close()
    else:
        ss = SPARK_SS[query]
        for k, v in ss.conf.items():
            spark.conf.set(k, v)
        n = 0

        def on_batch(df, batch_id: int) -> None:
            nonlocal n
            d = ss.per_batch(df) if ss.per_batch is not None else df
            d.write.mode("overwrite").parquet(str(out / f"batch={batch_id:06d}"))
            n += 1
            print(f"TICK {n} {time.perf_counter() - t0:.3f} {batch_id}", flush=True)

        df = ss.build(spark_stream(spark, events), work)
        w = (
            df.writeStream.outputMode(ss.mode)
            .option("checkpointLocation", str(work / "ckpt"))
            .trigger(availableNow=True)
            .foreachBatch(on_batch)
        )
        t0 = time.perf_counter()
        print(f"START {t0 - t_proc:.3f}", flush=True)
        q = w.start()
        q.awaitTermination()
    print("DONE", flush=True)


def run_once(system, query, events, work, args, kill_after: int | None) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        system,
        query,
        str(events),
        str(work),
        str(args.per_tick),
        str(args.checkpoint_every),
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    killed = False
    for line in p.stdout:
        lines.append(line.strip())
        if kill_after is not None and line.startswith(f"TICK {kill_after} "):
            os.kill(p.pid, signal.SIGKILL)
            killed = True
            break
    p.wait()
    get = {ln.split()[0]: ln.split()[1:] for ln in lines if ln}
    ticks = [ln.split() for ln in lines if ln.startswith("TICK ")]
    return {
        "killed": killed,
        "done": "DONE" in get,
        "session": float(get["SESSION"][0]) if "SESSION" in get else None,
        "first_tick": float(ticks[0][2]) if ticks else None,
        "ticks": len(ticks),
    }


def final_output(system: str, work: Path, columns: list[str]):
    from bench.nexmark_check import Digest

    out = work / "out"
    files = sorted(p for p in out.rglob("*.parquet") if not p.name.startswith((".", "_")))
    if system == "sealtime":
        # the committed attempts only: the directories the commit records name
        from sealtime.sinks.parquet import Parquet

        dirs = [out / c["dir"] for c in Parquet(str(out)).commits()]
        files = sorted(p for d in dirs for p in d.rglob("*.parquet"))
    tables = [pq.read_table(p) for p in files]
    diff = system == "sealtime"
    return Digest.of(tables, columns, diff=diff and all("_diff" in t.column_names for t in tables))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", default="q3,q5,q8")
    ap.add_argument("--systems", default="sealtime,spark_ss")
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--per-tick", type=int, default=100_000)
    ap.add_argument("--kill-after", type=int, default=10)
    ap.add_argument("--checkpoint-every", type=int, default=5)
    ap.add_argument("--work-dir")
    ap.add_argument("--out")
    ap.add_argument("--child", nargs=6)
    args = ap.parse_args(argv)
    if args.child:
        system, query, events, work, per, every = args.child
        child(system, query, Path(events), Path(work), int(per), int(every))
        return 0
    from bench.machine import describe, revision
    from bench.nexmark_check import compare
    from bench.nexmark_literal import write_events
    from bench.nexmark_sql import write_side_input

    load0 = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    root = Path(tempfile.mkdtemp(prefix="sealtime-recovery-", dir=args.work_dir))
    events = root / "events"
    write_events(events, args.events, args.per_tick)
    rows = []
    for query in args.queries.split(","):
        from bench.nexmark import Expected

        exp = Expected(query, events)
        for system in args.systems.split(","):
            work = Path(tempfile.mkdtemp(dir=root))
            write_side_input(work)
            first = run_once(system, query, events, work, args, args.kill_after)
            second = run_once(system, query, events, work, args, None)
            r = {
                "query": query,
                "system": system,
                "killed": first["killed"],
                "recovery": second["first_tick"],
                "session": second["session"],
                "done": second["done"],
            }
            try:
                got = final_output(system, work, exp.columns)
                if system == "spark_ss" and exp.digest.keys is not None:
                    from bench.nexmark import window_key
                    from bench.nexmark_check import Digest as D

                    ss_window = exp.window
                    files = sorted((work / "out").rglob("*.parquet"))
                    got = D.of(
                        [pq.read_table(p) for p in files],
                        exp.columns,
                        key_of=lambda df, w=ss_window: window_key(df, w),
                    )
                    import numpy as np

                    mask = np.isin(exp.digest.keys, np.unique(got.keys))
                    r.update(compare(got.multiset(), exp.digest.multiset(mask)))
                else:
                    r.update(compare(got.multiset(), exp.digest.multiset()))
            except Exception as exc:  # report, go on
                r["ok"] = False
                r["error"] = f"{type(exc).__name__}: {exc}"[:300]
            print(json.dumps(r), flush=True)
            rows.append(r)
    load1 = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    cmd = "python bench/nexmark_recovery.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "## Recovery after kill -9 mid-run (Nexmark)",
        "",
        f"Machine: {describe()}. Command: `{cmd.strip()}`. Load average before: {load0}; "
        f"after: {load1}. sealtime: {revision()}.",
        "",
        f"{args.events:,} events, {args.per_tick:,} per tick / micro-batch; each job is "
        f"killed with SIGKILL after its {args.kill_after}th tick / micro-batch and started "
        "again in a new process on the same data dir / checkpoint. sealtime checkpoints "
        f"every {args.checkpoint_every} ticks and writes an exactly-once Parquet sink; Spark "
        "SS resumes from its checkpoint and writes each micro-batch's Parquet directory by "
        "batch id. Recovery = the restarted job's start to the end of its first tick / "
        "micro-batch (restore + catch-up + commit); the session start of the new process "
        "is shown apart.",
        "",
        "| query | system | recovery s | new session s | final output |",
        "|---|---|---:|---:|---|",
    ]
    for r in rows:
        ok = (
            "equals the reference"
            if r.get("ok")
            else f"**differs** {r.get('error', '')} (missing {r.get('missing')}, extra {r.get('extra')})"
        )
        name = "Spark SS" if r["system"] == "spark_ss" else "sealtime"
        rec = "-" if r["recovery"] is None else f"{r['recovery']:.2f}"
        ses = "-" if r["session"] is None else f"{r['session']:.2f}"
        lines.append(f"| {r['query']} | {name} | {rec} | {ses} | {ok} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out or RESULTS / "nexmark_recovery.md").write_text(text, encoding="utf-8")
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
