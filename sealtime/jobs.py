"""Jobs: dataflows the `sealtime` command can run, resume and replay.

A job is a function that builds a dataflow in a given data directory::

    def build(data_dir: str) -> st.Dataflow: ...

named ``"package.module:build"`` or ``"path/to/file.py:build"``. ``sealtime run JOB
--data-dir D`` runs it; killed and run again on the same ``D``, it resumes from its
bindings, checkpoint and log. ``sealtime replay JOB --from D --data-dir NEW`` re-runs
it from D's log with D's bindings (tick by tick, the same times), so its sinks in NEW
receive exactly the original commits.

>>> load_job("sealtime.jobs:load_job") is load_job
True
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["load_job", "replay_job", "run_job"]


def load_job(spec: str) -> Callable[..., Any]:
    """The job function named by ``"module:function"`` or ``"file.py:function"``."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ValueError(
            f"job {spec!r}: name it as 'package.module:function' or 'path/to/file.py:function'"
        )
    if target.endswith(".py") or os.sep in target:
        path = os.path.abspath(target)
        if not os.path.exists(path):
            raise ValueError(f"job {spec!r}: no such file {path}")
        name = "sealtime_job_" + os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ValueError(f"job {spec!r}: {target} has no function {attr!r}")
    return fn


def run_job(
    spec: str,
    data_dir: str,
    *,
    ticks: int | None = None,
    forever: bool = False,
    out: TextIO | None = None,
) -> int:
    """Build the job in `data_dir` and run it (resuming if the directory holds a run)."""
    flow = load_job(spec)(data_dir)
    engine = flow.engine
    if out is not None and engine.recovered_from:
        print(f"resuming {flow.name!r}: {engine.recovered_from}", file=out, flush=True)
    reports = flow.run(ticks=ticks, forever=forever)
    if out is not None:
        print(
            f"{flow.name}: {len(reports)} ticks, frontier {reports[-1].frontier if reports else '-'}",
            file=out,
            flush=True,
        )
    flow.close()
    return 0


def replay_job(
    spec: str,
    from_dir: str,
    data_dir: str,
    *,
    name: str | None = None,
    out: TextIO | None = None,
) -> list[Any]:
    """Build the job in the new `data_dir` and replay `from_dir`'s log into it, showing
    progress (tick i of n, frontier, rows/s) on `out`."""
    flow = load_job(spec)(data_dir)
    started = time.perf_counter()
    rows = 0

    def progress(report: Any) -> None:
        nonlocal rows
        rows += report.rows_in
        if out is not None:
            total = len(flow.engine.replay or [])
            rate = rows / max(time.perf_counter() - started, 1e-9)
            print(
                f"\rreplay tick {report.tick}/{total}  frontier {report.frontier}  "
                f"{rows:,} rows ({rate:,.0f}/s)",
                end="",
                file=out,
                flush=True,
            )

    try:
        reports = flow.replay(from_dir, name=name, on_tick=progress)
    finally:
        flow.close()
    if out is not None:
        print(f"\nreplayed {len(reports)} ticks into {flow.data_dir}", file=out, flush=True)
    return reports
