"""Benchmark: the same workloads on two commits of sealtime, alternating fresh processes.

    python bench/ab_commits.py --old REV --new REV [--rounds 3] [--queries q3,q5,state]
        [--events 2000000] [--per-tick 200000] [--out FILE]

For a change that must not change speed (a refactor): each commit is checked out in a
git worktree, and each round runs every workload once per commit, each in a fresh Python
process (its own JVM) with that worktree first on ``PYTHONPATH``, old and new
alternating (the old first in even rounds). The workloads use only the public Python API
that both commits share, so the same text runs on both:

* ``q3``: Nexmark q3 (auctions of category 10 by sellers in OR, ID, CA: an unwindowed
  join of two filtered streams);
* ``q5``: Nexmark q5 (bids per auction in 10 s windows every 2 s, and per window the
  auctions with the window's largest count: a windowed count, its max per window, a join);
* ``state``: a running ``group by key: sum(value), count()`` in ingestion time over
  files of 100,000 rows with 200,000 distinct keys (bench/state_growth.py's part a).

The Nexmark events (sealtime's generator, seed 0, 10,000 events/s of event time) are
written once as Parquet, one file per tick, and read by both commits with
``Files(max_per_read=per_tick)``, ``max_rows_per_tick=per_tick``, lateness 4 s. Each
run's sink is a ``Callback`` collecting Arrow; the process reports the wall time of
``flow.run()``, the tick p50 and a digest of the consolidated output. The digests of
both commits must be equal in every run, and ``state``'s output must equal a pandas
``groupby`` of its files. The result is the median per commit and the ratio new/old.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
WORKLOADS = ("q3", "q5", "state")
STATE_ROWS, STATE_KEYS, STATE_FILES = 100_000, 200_000, 10


# ----------------------------------------------------------------- inside one worker
def _digest(table) -> str:
    """A digest of the consolidated contents: rows summed by `_diff`, zero rows left out."""
    import pandas as pd

    df = table.to_pandas()
    cols = [c for c in df.columns if c not in ("_time", "_diff")]
    if df.empty:
        return hashlib.sha256(b"").hexdigest()
    for c in cols:
        df[c] = df[c].astype(str)
    g = df.groupby(cols, dropna=False)["_diff"].sum().reset_index()
    g = g[g["_diff"] != 0].sort_values(cols).reset_index(drop=True)
    return hashlib.sha256(pd.util.hash_pandas_object(g, index=False).values.tobytes()).hexdigest()


def worker(kind: str, inputs: str, per_tick: int, data_dir: str) -> dict:
    import pyarrow as pa
    from pyspark.sql import functions as F

    import sealtime as st
    from sealtime.sources.files import Files

    flow = st.Dataflow("ab", data_dir=data_dir, record=False, checkpoint_every=5)
    if kind == "state":
        schema = {"key": "long", "value": "long"}
        src = Files(inputs, format="parquet", schema=schema, finite=True, settle=0,
                    max_per_read=STATE_ROWS)  # fmt: skip
        rows = flow.source("rows", src, max_rows_per_tick=STATE_ROWS)
        out = rows.aggregate(by="key", total=st.sum("value"), n=st.count())
    else:
        from sealtime.sources.nexmark import NEXMARK_SCHEMA

        src = Files(inputs, format="parquet", schema=NEXMARK_SCHEMA, pattern="nexmark-*.parquet",
                    finite=True, settle=0, max_per_read=per_tick)  # fmt: skip
        ev = flow.source(
            "nexmark", src, time="date_time", lateness="4s", max_rows_per_tick=per_tick
        )
        if kind == "q3":
            person = ev.filter("_subsource = 'person' AND state IN ('OR', 'ID', 'CA')").select(
                F.col("id").alias("seller"), "name", "city", "state"
            )
            auction = ev.filter("_subsource = 'auction' AND category = 10").select(
                "seller", F.col("id").alias("auction_id")
            )
            out = auction.join(person, on="seller").select("name", "city", "state", "auction_id")
        else:
            bid = ev.filter("_subsource = 'bid'").select("auction", "date_time")
            counts = bid.window(st.Sliding("10s", "2s")).aggregate(
                by=["auction", "window_start", "window_end"], num=st.count()
            )
            top = counts.aggregate(by=["window_start", "window_end"], maxn=st.max("num"))
            out = (
                counts.join(top, on=["window_start", "window_end"])
                .filter("num >= maxn")
                .select("auction", "num", "window_start", "window_end")
            )
    got: list = []
    out.sink(st.sinks.Callback(lambda t, lo, hi: got.append(t)))
    t0 = time.perf_counter()
    reports = flow.run()
    seconds = time.perf_counter() - t0
    ticks = sorted(getattr(r, "seconds", None) or 0.0 for r in reports)
    table = pa.concat_tables(got) if got else None
    result = {
        "seconds": seconds,
        "ticks": len(reports),
        "tick_p50": statistics.median(ticks) if ticks else None,
        "rows": table.num_rows if table is not None else 0,
        "digest": _digest(table) if table is not None else "",
    }
    if kind == "state" and table is not None:
        result["reference_ok"] = _state_reference_ok(inputs, table)
    flow.close()
    return result


def _state_reference_ok(inputs: str, table) -> bool:
    import pyarrow.parquet as pq

    want = pq.read_table(inputs).to_pandas().groupby("key")["value"].agg(["sum", "count"])
    df = table.to_pandas()
    for c in ("total", "n"):
        df[c] = df[c] * df["_diff"]
    got = df.groupby("key")[["total", "n"]].sum()
    got = got[(got["n"] != 0)]
    want = want.rename(columns={"sum": "total", "count": "n"}).sort_index()
    return bool(got.sort_index().astype("int64").equals(want.astype("int64")))


# ----------------------------------------------------------------- the orchestrator
def write_inputs(work: Path, events: int, per_tick: int) -> dict[str, str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sealtime.sources.nexmark import Nexmark

    nx = work / "nexmark"
    nx.mkdir(parents=True)
    gen = Nexmark(seed=0, limit=events)
    for i, lo in enumerate(range(0, events, per_tick)):
        table = gen.generate(lo, min(per_tick, events - lo))
        pq.write_table(table, nx / f"nexmark-{i:05d}.parquet", row_group_size=per_tick // 4)
    st_dir = work / "state"
    st_dir.mkdir()
    rng = np.random.default_rng(1)
    for f in range(STATE_FILES):
        keys = rng.integers(0, STATE_KEYS, STATE_ROWS, dtype=np.int64)
        values = rng.integers(0, 1000, STATE_ROWS, dtype=np.int64)
        pq.write_table(pa.table({"key": keys, "value": values}), st_dir / f"s-{f:04d}.parquet")
    return {"q3": str(nx), "q5": str(nx), "state": str(st_dir)}


def worktree(rev: str, where: Path) -> str:
    sha = subprocess.check_output(["git", "rev-parse", rev], cwd=ROOT, text=True).strip()
    subprocess.run(["git", "worktree", "add", "--detach", str(where), sha], cwd=ROOT,
                   check=True, capture_output=True)  # fmt: skip
    return sha


def run_one(tree: Path, kind: str, inputs: str, per_tick: int, work: Path) -> dict:
    data = tempfile.mkdtemp(prefix=f"ab-{kind}-", dir=work)
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{ROOT / 'bench'}"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--inputs", inputs,
           "--per-tick", str(per_tick), "--data-dir", data]  # fmt: skip
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    shutil.rmtree(data, ignore_errors=True)
    lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{tree} {kind}: exit {out.returncode}\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old")
    ap.add_argument("--new", default="HEAD")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", default=",".join(WORKLOADS))
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--per-tick", type=int, default=200_000)
    ap.add_argument("--out", default=str(RESULTS / "ab_commits.md"))
    ap.add_argument("--worker", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.inputs, args.per_tick, args.data_dir)))
        return 0
    if not args.old:
        ap.error("--old REV is required")
    kinds = [k.strip() for k in args.queries.split(",") if k.strip()]
    work = Path(tempfile.mkdtemp(prefix="sealtime-ab-"))
    started, load_before = time.time(), os.getloadavg()
    try:
        shas = {"old": worktree(args.old, work / "old"), "new": worktree(args.new, work / "new")}
        inputs = write_inputs(work / "inputs", args.events, args.per_tick)
        runs: dict[tuple[str, str], list[dict]] = {}
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for kind in kinds:
                for side in order:
                    res = run_one(work / side, kind, inputs[kind], args.per_tick, work)
                    runs.setdefault((kind, side), []).append(res)
                    print(f"round {r + 1} {kind} {side}: {res['seconds']:.2f} s, "
                          f"tick p50 {res['tick_p50']}, rows {res['rows']}", flush=True)  # fmt: skip
        lines = _report(args, shas, kinds, runs, started, load_before)
    finally:
        for side in ("old", "new"):
            subprocess.run(["git", "worktree", "remove", "--force", str(work / side)], cwd=ROOT,
                           capture_output=True)  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _report(args, shas, kinds, runs, started, load_before) -> list[str]:
    from machine import describe

    lines = [
        "## Same workloads on two commits (bench/ab_commits.py)",
        "",
        f"Machine: {describe()}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"Command: `python bench/ab_commits.py --old {args.old} --new {args.new} --rounds "
        f"{args.rounds} --queries {','.join(kinds)} --events {args.events} --per-tick "
        f"{args.per_tick}`. Old {shas['old'][:7]}, new {shas['new'][:7]}. Load average "
        f"before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; "
        f"{(time.time() - started) / 60:.1f} min.",
        "",
        "| workload | old s (median) | new s (median) | new/old | old tick p50 s | "
        "new tick p50 s | outputs equal | reference |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for kind in kinds:
        old, new = runs[(kind, "old")], runs[(kind, "new")]
        mo = statistics.median(x["seconds"] for x in old)
        mn = statistics.median(x["seconds"] for x in new)
        po = statistics.median(x["tick_p50"] for x in old)
        pn = statistics.median(x["tick_p50"] for x in new)
        digests = {x["digest"] for x in old + new}
        ref = {x.get("reference_ok") for x in old + new}
        ref_text = "pandas: equal" if ref == {True} else ("n/a" if ref == {None} else "DIFFERS")
        lines.append(
            f"| {kind} | {mo:.2f} | {mn:.2f} | {mn / mo:.2f} | {po:.3f} | {pn:.3f} | "
            f"{'yes' if len(digests) == 1 else 'NO'} ({old[0]['rows']:,} updates) | {ref_text} |"
        )
    lines += ["", "Every run (seconds): " + "; ".join(
        f"{k} {s}: " + ", ".join(f"{x['seconds']:.2f}" for x in runs[(k, s)])
        for k in kinds for s in ("old", "new"))]  # fmt: skip
    return lines


if __name__ == "__main__":
    sys.exit(main())
