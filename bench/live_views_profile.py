"""Where a tick of a service with many views goes: timers around the engine's phases.

    python bench/live_views_profile.py [--views 200] [--ticks 8] [--saved DIR]
        [--conf spark.key=value ...]

The first run builds the service of `bench/live_views.py` (`Server`: one Nexmark source
at 10,000 events a tick) with ``--views`` views of `view_specs` created in batches of
50, lets it tick twice, closes it and saves its data dir under ``--saved``. Every run
then restarts a copy of the saved data dir (the catalog brings every view back) and
prints, per tick, the tick's seconds and the seconds spent in each timed phase of the
engine (`PHASES`): the mint of the binding, the dataplane's step (building the plans),
the fused groups' collections, the views collected together, the views' history
commits, the end of the tick and checkpoints. Phases nest (``SinkStage.commit`` holds
the collections); the sum is not the tick.

A restarted service runs in a fresh JVM, so its first ticks are slower than a warm
process's (BENCHMARKS.md, "200 views profiled"). `--conf` adds Spark settings for an
A/B of one setting. Attach py-spy or jstack from outside for more.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: (module, class, method) of each timed phase
PHASES = (
    ("sealtime.engine.remap", "Remap", "mint"),
    ("sealtime.engine.dataplane", "Dataplane", "step"),
    ("sealtime.engine.commits", "SinkStage", "commit"),
    ("sealtime.engine.commits", "SinkStage", "_fused_rows"),
    ("sealtime.engine.commits", "SinkStage", "_collect_together"),
    ("sealtime.serve.history", "ViewHistory", "commit"),
    ("sealtime.serve.history", "ViewHistory", "end_commits"),
    ("sealtime.engine.coordinator", "Engine", "_end_tick"),
    ("sealtime.engine.coordinator", "Engine", "checkpoint"),
)


def time_phases(spent: dict[str, float]) -> None:
    """Wrap every method of `PHASES` so that its seconds add up in `spent`."""
    import importlib

    for module, cls_name, name in PHASES:
        cls = getattr(importlib.import_module(module), cls_name)
        original: Callable[..., Any] = getattr(cls, name)

        def timed(*args: Any, _f: Any = original, _k: str = f"{cls_name}.{name}", **kw: Any):
            started = time.perf_counter()
            try:
                return _f(*args, **kw)
            finally:
                spent[_k] += time.perf_counter() - started

        setattr(cls, name, functools.wraps(original)(timed))


def build(spark: Any, saved: Path, views: int) -> None:
    """The service with `views` views, ticked twice after the last batch, saved."""
    from bench.live_views import Server, view_specs

    work = Path(tempfile.mkdtemp(prefix="live_views_profile-"))
    server = Server(spark, work, "profile")
    server.recorder.wait(2)
    specs = view_specs(views)
    started = time.time()
    for i in range(0, len(specs), 50):
        server.create(specs[i : i + 50])
        print(f"{min(i + 50, views)} views ({time.time() - started:.0f} s)", flush=True)
    server.recorder.wait(2)
    server.close()
    shutil.rmtree(saved, ignore_errors=True)
    shutil.copytree(server.data_dir, saved)
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--views", type=int, default=200)
    p.add_argument("--ticks", type=int, default=8)
    p.add_argument("--saved", default=str(Path(tempfile.gettempdir()) / "live_views_saved"))
    p.add_argument("--conf", action="append", default=[], help="a Spark setting key=value")
    args = p.parse_args(argv)

    from bench.live_views import Recorder
    from sealtime.serve.service import Service, ServiceSettings
    from sealtime.spark import session

    for item in args.conf:
        key, _, value = item.partition("=")
        session.DEFAULT_CONF[key] = value
    spark = session.get_or_create_session(app_name="live_views_profile")
    saved = Path(args.saved)
    if not (saved / "metadata.sqlite").exists():
        build(spark, saved, args.views)
    spent: dict[str, float] = collections.defaultdict(float)
    time_phases(spent)
    data = Path(tempfile.mkdtemp(prefix="live_views_restart-")) / "data"
    shutil.copytree(saved, data)
    started = time.time()
    service = Service(ServiceSettings(data_dir=str(data), tick="1s"), spark=spark).start()
    recorder = Recorder(service)
    service.flow.tick_observers.append(recorder)
    try:
        recorder.wait(1)
        print(f"restarted: first tick after {time.time() - started:.0f} s", flush=True)
        for _ in range(args.ticks):
            spent.clear()
            (tick,) = recorder.wait(1)
            row = {"tick": tick.tick, "seconds": round(tick.seconds, 2)}
            row |= {k: round(v, 2) for k, v in spent.items()}
            print(json.dumps(row), flush=True)
    finally:
        service.close()
        shutil.rmtree(data.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
