"""Benchmark: how long a view created on the live service takes to hydrate, against the
length of its source's history (docs/serve.md, "Hydration").

    python bench/serve_hydration.py [--rows-per-tick 100000] [--history 1,5,20,30]

For each history length H, in one process and one Spark session (``local[2]``): a fresh
`sealtime.serve.service.Service` (tick 1 s) with a Nexmark source admitting
``--rows-per-tick`` events a tick and a view ``cnt`` there from the start; after H ticks,
``CREATE VIEW hot AS SELECT auction, COUNT(*) AS n, MAX(price) AS top FROM n.bid GROUP
BY auction``. One JSON line per run:

* ``history_rows``: the source's rows when the view is created;
* ``create_s``: until the CREATE VIEW returns (applied between ticks);
* ``live_s``: from the CREATE until ``hot`` has caught up (it is visible from then on);
* ``ticks_hydrating``: ticks run meanwhile; ``ticks_during``: the seconds of those ticks
  seen while it hydrated (each carries one slice of the history beside the live work);
* ``tick_before_median``: the median seconds of the last 5 ticks before the CREATE.

The first run in a process pays the JVM's and Spark's first jobs: repeat a length to see
it (``--history 1,1,5``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VIEW = (
    "CREATE VIEW hot AS SELECT auction, COUNT(*) AS n, MAX(price) AS top "
    "FROM n.bid GROUP BY auction"
)


def run(spark: object, rows_per_tick: int, history: int) -> dict[str, object]:
    """One service, `history` ticks of Nexmark input, then the view; its timings."""
    from sealtime.serve.service import Service, ServiceSettings
    from sealtime.serve.session import ServiceSession
    from sealtime.sql import catalog as tables

    data_dir = tempfile.mkdtemp(prefix="serve-hydration-")
    service = Service(ServiceSettings(data_dir=data_dir, tick="1s"), spark=spark).start()
    try:
        session = ServiceSession(service, "bench")
        session.execute(f"CREATE SOURCE n FROM NEXMARK (SEED 1, MAX ROWS PER TICK {rows_per_tick})")
        session.execute("CREATE VIEW cnt AS SELECT COUNT(*) AS n FROM n.bid")
        service.wait_live("cnt", 900)
        before: list[float] = []
        last, start = None, service.ticks
        while service.ticks - start < history:
            report = service.last_report
            if report is not last and report is not None:
                before.append(report.seconds)
                last = report
            time.sleep(0.02)
        engine = service.flow.engine
        rows = engine.snapshot().source("n").rows
        ticks_at, t0 = service.ticks, time.monotonic()
        session.execute(VIEW)
        created = time.monotonic() - t0
        node = tables.lookup(service.flow, "hot").collection.node  # type: ignore[union-attr]
        during: list[float] = []
        last = service.last_report
        while node.id in engine.hydrating():
            report = service.last_report
            if report is not last:
                during.append(round(report.seconds, 2))
                last = report
            time.sleep(0.02)
        return {
            "history_rows": rows,
            "create_s": round(created, 2),
            "live_s": round(time.monotonic() - t0, 2),
            "ticks_hydrating": service.ticks - ticks_at,
            "ticks_during": during,
            "tick_before_median": round(statistics.median(before[-5:]), 2) if before else None,
        }
    finally:
        service.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows-per-tick", type=int, default=100_000)
    p.add_argument("--history", default="1,5,20,30", help="history lengths in ticks")
    args = p.parse_args(argv)
    from sealtime.spark.session import get_or_create_session

    spark = get_or_create_session(
        master="local[2]",
        app_name="serve-hydration",
        conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
    )
    for history in (int(h) for h in args.history.split(",")):
        result = run(spark, args.rows_per_tick, history)
        print(json.dumps({"history_ticks": history, **result}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
