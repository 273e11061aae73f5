"""Jobs: dataflows the `sealtime` command can run, resume and replay.

A job is a function that builds a dataflow in a given data directory::

    def build(data_dir: str) -> st.Dataflow: ...

named ``"package.module:build"`` or ``"path/to/file.py:build"``. ``sealtime run JOB
--data-dir D`` runs it; killed and run again on the same ``D``, it resumes from its
bindings, checkpoint and log. ``sealtime replay JOB --from D --data-dir NEW`` re-runs
it from D's log with D's bindings (tick by tick, the same times, a restart's catch-up as
one tick), so its sinks in NEW receive exactly the original commits — from D's beginning
while its log reaches back (a day by default: ``retain_history``), or from one of its
checkpoints with ``--from-checkpoint``; with ``--then-live`` it then hands over to live
input (``time_reset``, timer gap policies) and runs on like ``sealtime run``. NEW may
be built by a changed job (more operators, sinks, timers): timers are restamped.

Both own the data dir they write while they run (`sealtime.storage.ownership`): a second
``run`` or ``replay`` into it is refused with a `DataDirOwnedError` naming the owner, and
an owner whose data dir another process took over stops with a `FencedError`. A replay
only reads D: it never takes D's ownership.

>>> load_job("sealtime.jobs:load_job") is load_job
True
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from .errors import ConfigError, FencedError

__all__ = ["load_job", "replay_job", "run_job"]


def load_job(spec: str) -> Callable[..., Any]:
    """The job function named by ``"module:function"`` or ``"file.py:function"``."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ConfigError(
            f"job {spec!r}: name it as 'package.module:function' or 'path/to/file.py:function'"
        )
    if target.endswith(".py") or os.sep in target:
        path = os.path.abspath(target)
        if not os.path.exists(path):
            raise ConfigError(f"job {spec!r}: no such file {path}")
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
        raise ConfigError(f"job {spec!r}: {target} has no function {attr!r}")
    return fn


def run_job(
    spec: str,
    data_dir: str,
    *,
    ticks: int | None = None,
    forever: bool = False,
    out: TextIO | None = None,
    ui: str | None = None,
) -> int:
    """Build the job in `data_dir` and run it (resuming if the directory holds a run).
    `ui` (``"[HOST:]PORT"``) serves the live web view while it runs (`sealtime.ui`)."""
    flow = load_job(spec)(data_dir)
    engine = None
    try:
        if ui:
            from .pubsub import parse_address

            server = flow.serve_ui(*parse_address(ui))
            if out is not None:
                print(f"web view: {server.url}", file=out, flush=True)
        engine = flow.engine
        if out is not None and engine.recovered_from:
            print(f"resuming {flow.name!r}: {engine.recovered_from}", file=out, flush=True)
        if out is None:
            reports = flow.run(ticks=ticks, forever=forever)
        else:
            from .ui.progress import Phase, TickProgress

            # A progress bar on a terminal (a plain line every 10 ticks otherwise, and
            # one whenever the phase changes): "catch-up" while the run catches up.
            phase = Phase(
                backlog_through=_backlog_through(flow),
                clock_ms=engine.clock_ms,
                tick_ms=flow.tick_ms,
            )
            with TickProgress("run", total_ticks=ticks, file=out, label=phase) as bar:
                reports = flow.run(ticks=ticks, forever=forever, on_tick=bar)
        if out is not None:
            frontier = reports[-1].frontier if reports else "-"
            print(f"{flow.name}: {len(reports)} ticks, frontier {frontier}", file=out, flush=True)
    except Exception as exc:
        _explain_fencing(engine, exc)
        raise
    finally:
        flow.close()
    return 0


def _backlog_through(flow: Any) -> int | None:
    """The last tick of the backlog a restart recorded (None: not a restart, or nothing
    to catch up): its first tick processes the bindings minted but not committed before
    the crash (`BindingLog.catch_ups`) and the log since the checkpoint."""
    from .engine.bindings import BindingLog

    recovered = flow.engine.recovered_from
    if not recovered:
        return None
    ticks = int(recovered["ticks"])
    notes = [t for _, t in BindingLog(flow.metadata_store, flow.name).catch_ups() if t > ticks]
    if notes or recovered.get("checkpoint", 0) < ticks:
        return max([ticks + 1, *notes])
    return None


def _explain_fencing(engine: Any, exc: Exception) -> None:
    """Raise the `FencedError` a failure follows from, if another process took the data
    dir over: its next commit would fail anyway, and work in flight may have failed
    first on a file the new owner deleted (e.g. log files behind its checkpoint)."""
    lease = getattr(engine, "lease", None)
    if lease is None or isinstance(exc, FencedError):
        return
    try:
        lease.verify()
    except FencedError as fenced:
        raise fenced from exc
    except Exception:  # the store is unreachable: the original error says more
        return


def replay_job(
    spec: str,
    from_dir: str,
    data_dir: str,
    *,
    name: str | None = None,
    then_live: bool = False,
    ticks: int | None = None,
    forever: bool = False,
    out: TextIO | None = None,
    from_checkpoint: int | str | None = None,
) -> list[Any]:
    """Build the job in the new `data_dir` and replay `from_dir`'s log into it, showing
    progress (tick i of n, frontier, rows/s) on `out`. With `then_live`, continue with
    live input afterwards: `ticks` live ticks, or `forever`, or until the sources end.
    `from_checkpoint` (``"latest"`` or a tick) starts from that checkpoint of the run
    instead of its beginning (`Dataflow.replay`). Returns the replayed ticks' reports
    followed by the live ones."""
    flow = load_job(spec)(data_dir)
    from .ui.progress import TickProgress

    bar = TickProgress("replay", file=out, every=10) if out is not None else None

    def progress(report: Any) -> None:
        if bar is not None:
            if bar.total_ticks is None:
                # (the ticks this replay runs: after a checkpoint it started from, or
                # after those an interrupted replay had done)
                bar.set_total(flow.engine.replay_ticks - report.tick + 1)
            bar(report)

    try:
        options = {"name": name, "then_live": then_live, "from_checkpoint": from_checkpoint}
        if bar is not None:
            with bar:
                reports = flow.replay(from_dir, on_tick=progress, **options)
        else:
            reports = flow.replay(from_dir, **options)
        if out is not None:
            print(f"replayed {len(reports)} ticks into {flow.data_dir}", file=out, flush=True)
        if then_live:
            live = flow.run(ticks=ticks, forever=forever)
            reset = flow.engine.time_reset
            if out is not None and reset is not None:
                print(
                    f"time reset {reset[0]} -> {reset[1]}; {len(live)} live ticks, frontier "
                    f"{live[-1].frontier if live else '-'}",
                    file=out,
                    flush=True,
                )
            reports += live
    except Exception as exc:
        _explain_fencing(flow.engine if flow.started else None, exc)
        raise
    finally:
        flow.close()
    return reports
