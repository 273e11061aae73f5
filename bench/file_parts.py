"""Benchmark: ticks that take parts of large Parquet files, linked ranges vs copied parts.

    python bench/file_parts.py [--repeat 4] [--per-tick 100000] [--nexmark-dir DIR]

With ``max_rows_per_tick`` below the size of its input files, a `Files` source hands a
tick part of a file. The ingest log either links the file and names the row range
(Spark then reads it through a ``_metadata.row_index`` filter, which scans the whole
file) or copies the part into the log (`sealtime.engine.ingest_log.copies_range`). This
runs the same pass-through flow (source -> `sinks.Callback`, Arrow) with every part
linked, with every part copied, and with the default rule
(``st.DataPathTuning().copy_part_factor`` in event time, ``copy_part_factor_ingestion``
in ingestion time),
over:

1. one Parquet file of 4,000,000 narrow rows (row groups of 250,000);
2. the same rows in files of 150,000 rows (ticks straddle every file);
3. the same rows in files of ``--per-tick`` rows (every tick one whole, linked file:
   the reference shape);
4. six 500,000-event files of the Nexmark benchmark (21 columns), in ingestion time and
   in event time (``date_time``, lateness 4 s), when ``--nexmark-dir`` holds them
   (``bench/nexmark.py --data-dir``).

There is no Spark Structured Streaming peer: its file source admits whole files per
micro-batch (``maxFilesPerTrigger``), never part of one. Each run checks that the sink
received every input row once (row count and the sum of a column). The first run of
each case warms the JVM up; the table shows the median over the later runs.
Results go to bench/results/file_parts.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sealtime as st  # noqa: E402
from bench.machine import describe  # noqa: E402
from sealtime.sources.files import Files  # noqa: E402
from sealtime.sources.nexmark import NEXMARK_SCHEMA  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402

NARROW = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
ROWS = 4_000_000
#: the copy rule's factors per mode (`st.DataPathTuning`)
MODES = {
    "linked ranges": st.DataPathTuning(copy_part_factor=1e18, copy_part_factor_ingestion=1e18),
    "copied parts": st.DataPathTuning(copy_part_factor=0.0, copy_part_factor_ingestion=0.0),
    "default rule": st.DataPathTuning(),
}


def narrow_rows(lo: int, n: int) -> pa.Table:
    i = np.arange(lo, lo + n, dtype=np.int64)
    s = pa.array(np.char.add("x", (i % 97).astype(str)))
    return pa.table({"k": i % 1000, "v": i, "s": s}, schema=NARROW)


def write_narrow(directory: Path, file_rows: int, row_group: int) -> None:
    directory.mkdir(parents=True)
    for f, lo in enumerate(range(0, ROWS, file_rows)):
        n = min(file_rows, ROWS - lo)
        pq.write_table(narrow_rows(lo, n), directory / f"e-{f:04d}.parquet", row_group)


def run_flow(spark, data_dir: Path, case: dict, tuning: st.DataPathTuning) -> dict:
    shutil.rmtree(data_dir, ignore_errors=True)
    flow = st.Dataflow("parts", data_dir=str(data_dir), spark=spark, record=False, tuning=tuning)
    per = case["per_tick"]
    src = Files(
        case["dir"],
        format="parquet",
        schema=case["schema"],
        pattern="e-*.parquet",
        finite=True,
        settle=0,
        max_per_read=per,
    )
    kw = {"time": case["time"], "lateness": "4s"} if case["time"] else {}
    stream = flow.source("e", src, max_rows_per_tick=per, **kw)
    got = {"rows": 0, "sum": 0}
    column = case["sum_column"]

    def collect(t: pa.Table, lo: int, hi: int | None) -> None:
        got["rows"] += t.num_rows
        got["sum"] += pc.sum(t.column(column)).as_py() or 0

    stream.sink(st.sinks.Callback(collect))
    try:
        t0 = time.perf_counter()
        reports = flow.run()
        seconds = time.perf_counter() - t0
    finally:
        flow.close()
    ticks = [r.seconds for r in reports]
    return {"seconds": seconds, "p50": statistics.median(ticks), "ticks": len(ticks), **got}


def expected(directory: Path, column: str) -> tuple[int, int]:
    rows = total = 0
    for p in sorted(directory.glob("e-*.parquet")):
        t = pq.read_table(p, columns=[column])
        rows += t.num_rows
        total += pc.sum(t.column(0)).as_py() or 0
    return rows, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--per-tick", type=int, default=100_000)
    ap.add_argument("--nexmark-dir", default="/root/nx/d10000000")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "file_parts.md"))
    args = ap.parse_args(argv)
    per = args.per_tick
    work = Path(tempfile.mkdtemp(prefix="file-parts-"))
    load_before = os.getloadavg()
    started = time.perf_counter()
    write_narrow(work / "one", ROWS, 250_000)
    write_narrow(work / "straddled", 150_000, 150_000)
    write_narrow(work / "whole", per, per)
    narrow = {"schema": NARROW, "time": None, "sum_column": "v", "per_tick": per}
    cases = {
        f"one {ROWS:,}-row file": {**narrow, "dir": work / "one"},
        "files of 150,000 rows": {**narrow, "dir": work / "straddled"},
        f"files of {per:,} rows (whole files, reference)": {**narrow, "dir": work / "whole"},
    }
    nexmark = sorted(Path(args.nexmark_dir).glob("*.parquet"))[:6]
    if len(nexmark) == 6:
        (work / "nexmark").mkdir()
        for p in nexmark:
            os.link(p, work / "nexmark" / f"e-{p.name}")
        nx = {"schema": NEXMARK_SCHEMA, "sum_column": "price", "per_tick": per}
        cases["Nexmark files of 500,000 events, ingestion time"] = {
            **nx,
            "dir": work / "nexmark",
            "time": None,
        }
        cases["Nexmark files of 500,000 events, event time"] = {
            **nx,
            "dir": work / "nexmark",
            "time": "date_time",
        }
    spark = get_or_create_session(conf={"spark.driver.memory": "4g", "spark.ui.enabled": "false"})
    results: dict[tuple[str, str], list[dict]] = {}
    try:
        for r in range(args.repeat):
            for name, case in cases.items():
                want = expected(case["dir"], case["sum_column"])
                modes = MODES
                if "reference" in name:
                    modes = {"linked ranges": MODES["linked ranges"]}
                for mode, tuning in modes.items():
                    res = run_flow(spark, work / "data", case, tuning)
                    res["ok"] = (res["rows"], res["sum"]) == want
                    results.setdefault((name, mode), []).append(res)
                    print(
                        f"run {r + 1} {name}, {mode}: {res['seconds']:.2f} s, "
                        f"tick p50 {res['p50']:.3f} s, ok={res['ok']}",
                        flush=True,
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    lines = [
        "## Ticks over parts of large Parquet files: linked ranges vs copied parts",
        "",
        f"Machine: {describe()}. Command: `python bench/file_parts.py "
        f"--repeat {args.repeat} --per-tick {per}`. Load average (1/5/15 min) before: "
        f"{' / '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{' / '.join(f'{x:.2f}' for x in load_after)}. Whole script: "
        f"{(time.perf_counter() - started) / 60:.1f} min.",
        "",
        f"A pass-through flow (`Files` source, `max_rows_per_tick={per:,}`, "
        "`sinks.Callback` collecting Arrow), run with every part of a file linked, "
        "with every part copied into the log, and with the default rule: copy a part "
        f"when the rest of its file holds more than "
        f"{MODES['default rule'].copy_part_factor:g} times its rows in event time, "
        f"{MODES['default rule'].copy_part_factor_ingestion:g} times in ingestion time "
        "(`st.DataPathTuning`: `copy_part_factor`, `copy_part_factor_ingestion`). Median over runs 2 and later (the first warms "
        "the JVM up). No Spark SS peer: its file source reads whole files per "
        "micro-batch.",
        "",
        "| input | parts | run s | tick p50 s | ticks | rows checked |",
        "|---|---|---:|---:|---:|---|",
    ]
    for (name, mode), runs in results.items():
        later = runs[1:] or runs
        ok = all(x["ok"] for x in runs)
        lines.append(
            f"| {name} | {mode} | {statistics.median(x['seconds'] for x in later):.2f} | "
            f"{statistics.median(x['p50'] for x in later):.3f} | {later[0]['ticks']} | "
            f"{'every row once' if ok else 'MISMATCH'} |"
        )
    lines.append("")
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0 if all(x["ok"] for runs in results.values() for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
