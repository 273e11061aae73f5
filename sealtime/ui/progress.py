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
from typing import IO, Any

__all__ = ["TickProgress", "fmt_time"]


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


class TickProgress:
    """A progress display of ticks and rows done (of `total_ticks` / `total_rows` when
    known). Use as a context manager; call it with a `TickReport` (``on_tick``) or call
    `update`. `file` is where it draws (default: stderr)."""

    def __init__(
        self,
        description: str,
        *,
        total_ticks: int | None = None,
        total_rows: int | None = None,
        file: IO[str] | None = None,
        every: int = 10,
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
        self.update(ticks=1, rows=report.rows_in, frontier=report.frontier)

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
