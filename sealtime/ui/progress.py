"""Progress of long work (replay, catch-up after a restart, backfill of many files),
and the demo's status line — one `TickProgress` for all of them, drawn with rich.

Pass it as ``on_tick`` to `Dataflow.run` / `Dataflow.replay`: it counts ticks and rows
against the totals where they are known (a replay knows its ticks; a backfill may know
its rows) and shows the frontier. On a non-terminal stream (a log file, a pipe, a
test) rich prints no bar: then a plain line every `every` ticks is written instead.

>>> import io
>>> out = io.StringIO()
>>> with TickProgress("replay", total_ticks=2, file=out, every=1) as p:
...     p.update(ticks=1, rows=10, frontier=1000)
...     p.update(ticks=1, rows=5, frontier=None)
>>> print(out.getvalue().strip().splitlines()[-1])
replay: tick 2/2, 15 rows, frontier ∞ (all sealed)
"""

from __future__ import annotations

import datetime as _dt
import time as _time
from collections.abc import Callable
from typing import IO, Any

__all__ = ["Phase", "TickProgress", "fmt_time"]


def fmt_time(ms: int | None) -> str:
    """A data-plane time as UTC ``HH:MM:SS.mmm`` (None: everything sealed).

    >>> fmt_time(1_700_000_000_123), fmt_time(None)
    ('22:13:20.123', '∞ (all sealed)')
    """
    if ms is None:
        return "∞ (all sealed)"
    if ms < 0:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


class Phase:
    """The label of each tick of a run (`TickProgress`'s ``label``): ``"catch-up"`` while
    the run catches up, ``"run"`` after.

    A tick catches up when it is part of the backlog a restart recorded (ticks up to
    `backlog_through`: the bindings minted but not committed before the crash, the log
    since the checkpoint), or when its binding time was behind the clock by more than a
    tick when it started (`tick_ms`; the input waiting is more than a tick's). The clock
    is the ticker's (`clock_ms`), as everywhere at the edge.

    >>> from types import SimpleNamespace as R
    >>> now = [10_000]
    >>> phase = Phase(backlog_through=3, clock_ms=lambda: now[0], tick_ms=1000)
    >>> [phase(R(tick=t, into_time=9_900, seconds=0.05)) for t in (3, 4)]
    ['catch-up', 'run']
    >>> now[0] = 20_000  # tick 5 started 10 s after its binding time
    >>> phase(R(tick=5, into_time=9_900, seconds=0.05))
    'catch-up'
    """

    CATCH_UP = "catch-up"
    RUN = "run"

    def __init__(
        self, *, backlog_through: int | None, clock_ms: Callable[[], int], tick_ms: int
    ) -> None:
        self.backlog_through = backlog_through
        self.clock_ms = clock_ms
        self.tick_ms = tick_ms

    def __call__(self, report: Any) -> str:
        if self.backlog_through is not None and report.tick <= self.backlog_through:
            return self.CATCH_UP
        started = self.clock_ms() - report.seconds * 1000
        return self.CATCH_UP if started - report.into_time > self.tick_ms else self.RUN


class TickProgress:
    """A progress display of ticks and rows done (of `total_ticks` / `total_rows` when
    known). Use as a context manager; call it with a `TickReport` (``on_tick``) or call
    `update`. `file` is where it draws (default: stderr). `label` (e.g. a `Phase`) names
    each tick's phase from its report; it replaces `description`, and a plain-line
    display writes a line whenever it changes.

    >>> import io
    >>> from types import SimpleNamespace as R
    >>> out = io.StringIO()
    >>> with TickProgress("run", file=out, every=10,
    ...                   label=lambda r: "catch-up" if r.tick < 2 else "run") as p:
    ...     for t in (1, 2, 3):
    ...         p(R(tick=t, rows_in=5, frontier=t, seconds=0.1))
    >>> print(out.getvalue())  # doctest: +NORMALIZE_WHITESPACE
    catch-up: tick 1, 5 rows, frontier 00:00:00.001, tick 100 ms
    run: tick 2, 10 rows, frontier 00:00:00.002, tick 100 ms
    run: tick 3, 15 rows, frontier 00:00:00.003, tick 100 ms
    """

    def __init__(
        self,
        description: str,
        *,
        total_ticks: int | None = None,
        total_rows: int | None = None,
        file: IO[str] | None = None,
        every: int = 10,
        label: Callable[[Any], str] | None = None,
    ) -> None:
        from rich.console import Console

        self.description = description
        self.total_ticks = total_ticks
        self.total_rows = total_rows
        self.ticks = 0
        self.rows = 0
        self.frontier: int | None = None
        self.every = max(1, every)
        self.started = _time.perf_counter()
        self.console = Console(file=file, stderr=file is None, highlight=False)
        self._file = file
        self._progress: Any = None
        self._task: Any = None
        #: duration of the last tick reported through ``on_tick`` (None: not known)
        self.last_seconds: float | None = None
        self.label = label

    def __enter__(self) -> TickProgress:
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                self.description, total=self.total_ticks, detail=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif self.ticks % self.every:
            self._line()  # the final state, if the last line did not show it

    def set_total(self, ticks: int | None) -> None:
        """Set the number of ticks expected (known only once the work started, e.g. a
        replay's recorded ticks)."""
        self.total_ticks = ticks
        if self._progress is not None:
            self._progress.update(self._task, total=ticks)

    def __call__(self, report: Any) -> None:
        """``on_tick`` hook: one tick with `report.rows_in` rows."""
        self.last_seconds = report.seconds
        changed = False
        if self.label is not None:
            phase = self.label(report)
            changed = phase != self.description
            self.description = phase
            if self._progress is not None and changed:
                self._progress.update(self._task, description=phase)
        self.update(ticks=1, rows=report.rows_in, frontier=report.frontier)
        if changed and self._progress is None and self.ticks % self.every:
            self._line()  # (a phase change is always shown)

    def update(self, *, ticks: int = 0, rows: int = 0, frontier: int | None | Any = ...) -> None:
        """Add `ticks` and `rows` done; set the frontier (None: all sealed)."""
        self.ticks += ticks
        self.rows += rows
        if frontier is not ...:
            self.frontier = frontier
        if self._progress is not None:
            self._progress.update(self._task, completed=self.ticks, detail=self.detail())
        elif self.ticks % self.every == 0:
            self._line()

    def detail(self) -> str:
        """Rows (of the total), rate and frontier, as one phrase."""
        rate = self.rows / max(_time.perf_counter() - self.started, 1e-9)
        rows = f"{self.rows:,}" + (f"/{self.total_rows:,}" if self.total_rows else "")
        return f"{rows} rows ({rate:,.0f}/s), frontier {fmt_time(self.frontier)}"

    def _line(self) -> None:
        total = f"/{self.total_ticks}" if self.total_ticks is not None else ""
        rows = f"{self.rows:,}" + (f"/{self.total_rows:,}" if self.total_rows else "")
        text = (
            f"{self.description}: tick {self.ticks}{total}, {rows} rows, "
            f"frontier {fmt_time(self.frontier)}"
        )
        if self.last_seconds is not None:
            text += f", tick {self.last_seconds * 1000:.0f} ms"
        if self._file is not None:
            print(text, file=self._file, flush=True)
        else:
            self.console.print(text, markup=False)
