"""`Timer`: a source that fires at every multiple of a period of the logical clock.

Triceps stamps scheduled events with the same clock as the data and logs them, so a
replay fires them at exactly the same logical times. A `Timer` is such a source: it
reads no broker and no wall clock; at each tick the engine hands its reader the tick's
binding time ``into_time`` (``read_at``), and the reader returns one row per firing
time ``s`` with ``previous into_time < s <= into_time`` and ``s`` a multiple of
`every` (plus `offset`). Rows go to the ingest log like any source's, with
``_time = s``; the frontier becomes ``into_time + 1``. Recovery reads the log and the
bindings, never the clock; a replay *restamps* timers from the recorded binding times
(`sealtime.engine.replay`), which gives the logged firings again for an unchanged timer
and fresh ones for a changed graph.

Columns: ``fired_at`` (int64 ms, the row's logical time, equal to ``_time``), ``seq``
(int64, the firing's number: ``(fired_at - offset) // every``, so a restarted or
replayed timer numbers the same firing the same way) and ``missed`` (int64, 0 for an
ordinary firing; see the gap policy).

The first tick starts the timer: it fires at the multiples after the first binding
time before it (none at that tick unless the binding time is itself a multiple). If
ticks are slower than `every`, a tick fires every multiple it passed (rows at their
own times, so downstream windows and timeouts see each firing); `max_rows_per_tick`
spreads a backlog (e.g. after a long stop) over several ticks.

**Gap policy** (`gap=`): when a replay hands over to live input
(``flow.replay(..., then_live=True)``), the firings due strictly between the last
replayed binding time and the first live one never happened. ``"fire_once"`` (the
default: nothing disappears silently) stands for them with one row at the hand-over
time: ``fired_at`` = the hand-over time, ``seq`` = the first missed firing's number,
``missed`` = how many were missed (they are ``seq .. seq + missed - 1``).
``"cancel"`` drops them. A firing exactly at the first live time is an ordinary one.

>>> r = Timer(every="10s").open()
>>> b = r.read_at(25_000, None)
>>> b.data.num_rows, b.event_frontier
(0, 25001)
>>> b = r.read_at(41_000, None)
>>> b.data.column("fired_at").to_pylist(), b.data.column("seq").to_pylist(), b.position
([30000, 40000], [3, 4], 41000)
>>> r.hand_over(41_000, 95_000)           # a replay ends at 41 000, live from 95 000
>>> b = r.read_at(95_000, None)
>>> b.data.select(["fired_at", "seq", "missed"]).to_pylist()
[{'fired_at': 95000, 'seq': 5, 'missed': 5}]
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import pyarrow as pa

from ..columns import DIFF, TIME
from ..durations import parse_duration
from ..errors import ConfigError
from .base import ClockedReader, ReadBatch, Source, SourceReader

__all__ = ["GAP_POLICIES", "ClockedSource", "HandOverReader", "TimeReset", "Timer"]

#: what a `Timer` does with the firings due in the gap of a replay's hand-over to live
GAP_POLICIES = ("fire_once", "cancel")


class ClockedSource(Source):
    """A source whose rows are a function of the binding times (and of the hand-over of
    a replay to live input) alone: its reader is a `ClockedReader`. A replay restamps
    such a source from the recorded binding times instead of reading its log, so a
    changed graph may add or change timers and still replay its recorded input."""

    time_column = TIME
    diff_column = DIFF

    @property
    def finite(self) -> bool:
        return False


class HandOverReader(ClockedReader):
    """A clocked reader told about the hand-over of a replay to live input: the next
    `read_at` is the first live tick, at `to_time`; the last replayed tick was at
    `from_time` (both binding times, so the hand-over is itself replayable)."""

    @abstractmethod
    def hand_over(self, from_time: int, to_time: int) -> None:
        """Remember the hand-over; the next `read_at` (at `to_time`) applies it."""


class Timer(ClockedSource):
    """Fire every `every` of logical time (a duration: ``"10s"``, ``"1m"``, ms int),
    at the times ``offset + k * every``; one row per firing (``fired_at``, ``seq``,
    ``missed``). `gap`: ``"fire_once"`` (default) or ``"cancel"``, what happens to the
    firings due in the gap when a replay hands over to live input (module docstring).

    >>> Timer(every="1m").every, Timer(every=500, offset=100).offset
    (60000, 100)
    >>> Timer(every=0)
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Timer(every=0): the period must be at least 1 ms, e.g. Timer(every='10s')
    >>> Timer(every="1s", gap="skip")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Timer(gap='skip'): use 'fire_once' (one row for the missed firings) or 'cancel' (none)
    """

    def __init__(self, every: str | int, offset: str | int = 0, gap: str = "fire_once") -> None:

        self.every = parse_duration(every, "Timer(every)")
        if self.every < 1:
            raise ConfigError(
                f"Timer(every={every!r}): the period must be at least 1 ms, e.g. Timer(every='10s')"
            )
        self.offset = parse_duration(offset, "Timer(offset)") % self.every
        if gap not in GAP_POLICIES:
            raise ConfigError(
                f"Timer(gap={gap!r}): use 'fire_once' (one row for the missed firings) or "
                "'cancel' (none)"
            )
        self.gap = gap
        self.schema = pa.schema(
            [
                ("fired_at", pa.int64()),
                ("seq", pa.int64()),
                ("missed", pa.int64()),
                (TIME, pa.int64()),
                (DIFF, pa.int64()),
            ]
        )

    def __repr__(self) -> str:
        return f"Timer(every={self.every}, offset={self.offset}, gap={self.gap!r})"

    def open(self, position: Any = None) -> SourceReader:
        """A reader whose last fired-up-to time is `position` (None: not started)."""
        return _TimerReader(self, None if position is None else int(position))


class _TimerReader(HandOverReader):
    def __init__(self, timer: Timer, position: int | None) -> None:
        self.timer = timer
        #: every firing at a time <= position has been returned
        self.position = position
        #: the first live binding time of a pending hand-over
        self._hand_over_at: int | None = None

    def hand_over(self, from_time: int, to_time: int) -> None:
        # The gap is what the timer has not fired before the first live time: normally
        # (from_time, to_time); with a backlog (max_rows_per_tick) it starts earlier.
        self._hand_over_at = to_time

    def read_at(self, into_time: int, max_rows: int | None) -> ReadBatch:
        """The firings at times in ``(position, into_time]`` (at most `max_rows`)."""
        every, offset = self.timer.every, self.timer.offset
        if self.position is None:
            # The first tick starts the timer: nothing before its binding time fires.
            self.position = into_time - 1
        head: list[tuple[int, int, int]] = []  # (fired_at, seq, missed) of a catch-up row
        if self._hand_over_at is not None:
            to, self._hand_over_at = self._hand_over_at, None
            first = -((-(self.position + 1 - offset)) // every)
            last = (to - 1 - offset) // every  # the last multiple < to
            missed = max(0, last - first + 1)
            if missed and self.timer.gap == "fire_once":
                head.append((to, first, missed))
            self.position = max(self.position, to - 1)  # the gap is settled either way
        first = -((-(self.position + 1 - offset)) // every)  # k of the first multiple > position
        last = (into_time - offset) // every  # k of the last multiple <= into_time
        count = max(0, last - first + 1)
        if max_rows is not None and count > max_rows:
            count = max_rows
        ks = np.arange(first, first + count, dtype=np.int64)
        times = ks * every + offset
        if count and times[-1] < (last * every + offset):
            up_to = int(times[-1])  # a backlog remains: the frontier waits at the next
            frontier = up_to + 1
        else:
            up_to = into_time
            frontier = into_time + 1
        self.position = up_to
        fired = np.array([h[0] for h in head], np.int64)
        seqs = np.array([h[1] for h in head], np.int64)
        missed = np.array([h[2] for h in head], np.int64)
        # (a catch-up row is at the hand-over time, at or before the ordinary firings)
        times_all = np.concatenate([fired, times])
        data = pa.table(
            {
                "fired_at": pa.array(times_all),
                "seq": pa.array(np.concatenate([seqs, ks])),
                "missed": pa.array(np.concatenate([missed, np.zeros(count, np.int64)])),
                TIME: pa.array(times_all),
                DIFF: pa.array(np.ones(len(times_all), np.int64)),
            },
            schema=self.timer.schema,
        )
        return ReadBatch(data, position=up_to, event_frontier=frontier)


class TimeReset(ClockedSource):
    """The ``time_reset`` collection (``flow.time_reset``): one row ``(from_time,
    to_time)`` at time ``to_time`` when a replay hands over to live input — the last
    replayed binding time and the first live one. Empty otherwise; its frontier follows
    the binding times. Logged like any source, so a replay of the new log emits it again
    at the same time.

    >>> r = TimeReset().open()
    >>> r.read_at(1_000, None).data.num_rows
    0
    >>> r.hand_over(1_000, 9_000)
    >>> b = r.read_at(9_000, None)
    >>> b.data.to_pylist(), b.event_frontier
    ([{'from_time': 1000, 'to_time': 9000, '_time': 9000, '_diff': 1}], 9001)
    """

    schema = pa.schema(
        [
            ("from_time", pa.int64()),
            ("to_time", pa.int64()),
            (TIME, pa.int64()),
            (DIFF, pa.int64()),
        ]
    )

    def __repr__(self) -> str:
        return "TimeReset()"

    def open(self, position: Any = None) -> SourceReader:
        return _TimeResetReader()


class _TimeResetReader(HandOverReader):
    def __init__(self) -> None:
        self._pending: tuple[int, int] | None = None

    def hand_over(self, from_time: int, to_time: int) -> None:
        self._pending = (from_time, to_time)

    def read_at(self, into_time: int, max_rows: int | None) -> ReadBatch:
        rows = [] if self._pending is None else [self._pending]
        self._pending = None
        data = pa.table(
            {
                "from_time": pa.array([r[0] for r in rows], pa.int64()),
                "to_time": pa.array([r[1] for r in rows], pa.int64()),
                TIME: pa.array([r[1] for r in rows], pa.int64()),
                DIFF: pa.array([1] * len(rows), pa.int64()),
            },
            schema=TimeReset.schema,
        )
        return ReadBatch(data, position=into_time, event_frontier=into_time + 1)
