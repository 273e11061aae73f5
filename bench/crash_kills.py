"""Durability run: SIGKILL the coordinator many times, restart, count lost and duplicated rows.

    python bench/crash_kills.py [--kills 100] [--source files|nats] [--events 4000]

The job and the kill machinery are the crash tests' (`tests/engine/test_crash.py`,
`tests/engine/crash_job.py`): source → event-time window aggregate → join → Persist
sink, with soft checkpoints and log truncation, run by ``sealtime run`` in a child
process that is killed with SIGKILL at a failpoint (minting a binding, after it, inside
a tick before the sinks, between a sink's write and its commit, after the commit, after
a checkpoint; hit counts random) or by a timer at a random moment. CI runs the same
loop with 8 kills per source; this script runs it until `--kills` kills happened.

A *scenario* is one data dir: killed runs until a run finishes the job by itself, then
one more uncrashed run in this process. Each scenario's sink is compared as a multiset
with the batch oracle over the input (pandas) and with an uncrashed run's sink:
*lost* = oracle rows missing from the sink, *duplicated* = sink rows beyond the
oracle's multiplicity. Results are written to bench/results/crash_kills.md (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import describe  # noqa: E402
from sealtime.spark.session import get_or_create_session  # noqa: E402
from tests.engine import crash_job  # noqa: E402
from tests.engine import test_crash as crash  # noqa: E402


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def rows_of(df: pd.DataFrame) -> Counter:
    return Counter(tuple(r) for r in df.itertuples(index=False, name=None))


def lost_and_duplicated(got: pd.DataFrame, want: pd.DataFrame) -> tuple[int, int]:
    g, w = rows_of(got), rows_of(want)
    lost = sum((w - g).values())
    duplicated = sum((g - w).values())
    return lost, duplicated


def finish(spark, data: Path, env: dict) -> None:
    """The uncrashed run that ends a scenario (in this process, same data dir)."""
    os.environ.update(env)
    try:
        flow = crash_job.build(str(data), spark=spark)
        flow.run()
        flow.close()
    finally:
        for k in env:
            os.environ.pop(k)


def run_files(spark, work: Path, kills: int, events: int, seed: int) -> dict:
    rows = crash.events(events)
    crash.write_files(work / "in", rows)
    env = {"CRASH_SOURCE": "files", "CRASH_INPUT": str(work / "in")}
    oracle = crash.oracle(rows)
    # An uncrashed run of the same job over the same input.
    finish(spark, work / "reference", env)
    reference = crash.sink_content(work / "reference")
    ref_lost, ref_dup = lost_and_duplicated(reference, oracle)
    assert (ref_lost, ref_dup) == (0, 0), "the uncrashed run differs from the oracle"

    plans = crash.schedule(seed, kills)
    done = scenario = lost = duplicated = differ = 0
    by_kind: Counter = Counter()
    started = time.perf_counter()
    while done < kills:
        data = work / f"data-{scenario}"
        got = crash.crash_loop(data, env, plans[done:])
        for kind, arg in plans[done : done + got]:
            by_kind[str(arg).split("=")[0] if kind == "failpoint" else "timer"] += 1
        done += got
        finish(spark, data, env)
        sink = crash.sink_content(data)
        lo, du = lost_and_duplicated(sink, oracle)
        lost, duplicated = lost + lo, duplicated + du
        differ += int(not sink.equals(reference))
        scenario += 1
        print(
            f"scenario {scenario}: {got} kills (total {done}/{kills}), lost {lo}, "
            f"duplicated {du}, equals uncrashed run: {sink.equals(reference)}",
            flush=True,
        )
    return {
        "source": "files",
        "kills": done,
        "scenarios": scenario,
        "lost": lost,
        "duplicated": duplicated,
        "scenarios differing from the uncrashed run": differ,
        "rows per scenario": len(oracle),
        "kills by point": dict(sorted(by_kind.items())),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--events", type=int, default=crash.EVENTS)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument(
        "--out",
        default=str(ROOT / "bench" / "results" / "crash_kills.md"),
        help="where the result goes (it replaces the file)",
    )
    args = ap.parse_args()
    machine, load_before = describe(), load_average()
    spark = get_or_create_session(app_name="crash-kills")
    with tempfile.TemporaryDirectory(prefix="sealtime-kills-") as tmp:
        result = run_files(spark, Path(tmp), args.kills, args.events, args.seed)
    cmd = "python bench/crash_kills.py " + " ".join(sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = (
        f"Machine: {machine}. Command: `{cmd.strip()}`. "
        f"Load average (1/5/15 min) before: {load_before}; after: {load_average()}.\n\n"
        + "```json\n"
        + json.dumps(result, indent=2)
        + "\n```\n"
    )
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
