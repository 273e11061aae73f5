"""Time stamping and lateness: the admission decisions of one source, without I/O.

A `Timestamper` turns the rows a source read in one tick into stamped times and decides
which rows are **late** and which are **refused**. It holds the source's scalar time
state (the event-time frontier, the largest event time seen, the source's own reported
frontier, idleness) and nothing else: no files, no readers, no Spark. Everything here is
numpy and pyarrow over in-memory arrays, so it is tested without a dataflow
(``tests/engine/test_timestamper.py``).

The rules (DESIGN.md §4, docs/time.md "Bounded event time"):

* **ingestion time**: every row gets the tick's binding time ``into_time``; the
  frontier becomes ``into_time + 1``.
* **refused** (event time, `refuse`): a row whose event time is null, or lies beyond
  ``into_time + max_future`` (a producer's clock in year 9999), goes to ``errors`` with a
  reason naming the setting and the fix. It never enters the admission below: it moves
  neither the frontier nor `max_seen`. The bound is the binding time, recorded with the
  binding, so a replay or restart refuses exactly the same rows.
* **event time** with ``lateness=L``: record *i* (of those not refused) is late iff its
  time is below ``max(event times of the records before it) - L`` — *before it in the
  log*, across all earlier ticks — so the decision depends on the log order (and, with
  `max_future`, the binding times) alone, never on where tick boundaries fell. Without
  ``lateness``, the source's own reported frontier (a broker watermark) is the bound if
  it reported one, else ``L = 0``. A late row carries a reason naming the bound it
  missed. The frontier becomes ``max event time seen - L`` (or the reported frontier).
* **side outputs** (late, errors, health rows) are stamped at the tick's binding time
  ``into_time``, for every kind of source: never at an event time, so a frontier stuck
  far ahead (or behind) cannot hold them back; the engine releases them with the
  binding.
* **idleness** (``idle_timeout=I``): once ``I`` ms of the ticker's clock pass without a
  record, the frontier moves to ``into_time - L``; later records below that floor are
  late with a reason naming idleness. Only binding times enter, so replay repeats it.
* **exhaustion**: the frontier becomes empty (None).

>>> import numpy as np
>>> ts = Timestamper("s", time_column="t", lateness=10)
>>> a = ts.admit(np.array([100, 95, 80, 120], np.int64), into_time=5_000)
>>> a.late.tolist(), a.times.tolist()
([False, False, True, False], [100, 95, 5000, 120])
>>> ts.advance(into_time=5_000)
>>> ts.frontier, ts.max_seen
(110, 120)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..columns import TIME
from ..errors import SchemaError
from ..time.order import MIN_TIME

__all__ = ["Admission", "Timestamper", "brute_force_late", "route_to_errors", "split_null_times"]


@dataclass(frozen=True)
class Admission:
    """The stamping of one batch, row by row in log order.

    * `times`: the stamped ``_time`` (a late row: the tick's binding time);
    * `late`: which rows are late (bool);
    * `reason`: why each row is late (null where it is not); None when no row is late.

    >>> a = Admission(np.array([5], np.int64), np.array([False]), None)
    >>> a.num_rows, a.late_count
    (1, 0)
    """

    times: np.ndarray
    late: np.ndarray
    reason: pa.Array | None

    @property
    def num_rows(self) -> int:
        """Rows stamped."""
        return len(self.times)

    @property
    def late_count(self) -> int:
        """Rows that are late."""
        return int(self.late.sum())


def brute_force_late(times: list[int], lateness: int) -> list[bool]:
    """The definition of lateness, one record at a time (for tests): record *i* is late
    iff its time is below the largest time of the records before it minus `lateness`.

    >>> brute_force_late([100, 95, 80, 120, 109], 10)
    [False, False, True, False, True]
    """
    out = []
    for i, t in enumerate(times):
        out.append(i > 0 and t < max(times[:i]) - lateness)
    return out


def route_to_errors(
    data: pa.Table, bad: pa.Array | pa.ChunkedArray, reason: str | list[str]
) -> tuple[pa.Table, pa.Table | None]:
    """The rows of `data` where `bad` is false, and an ``errors`` table (``raw``: the row
    as JSON, ``reason``) for the others (None when there are none). `reason` is one text
    for all, or one per bad row. The JSON is built only for the bad rows (the error path).

    >>> t = pa.table({"k": [1, 2], "ts": [7, 9]})
    >>> ok, errors = route_to_errors(t, pa.array([False, True]), "too far")
    >>> ok.num_rows, errors.to_pylist()
    (1, [{'raw': '{"k": 2, "ts": 9}', 'reason': 'too far'}])
    """
    if not pc.any(bad).as_py():
        return data, None
    rows = data.filter(bad)
    raw = [json.dumps(row, default=str, sort_keys=True) for row in rows.to_pylist()]
    why = [reason] * rows.num_rows if isinstance(reason, str) else reason
    errors = pa.table({"raw": pa.array(raw, pa.string()), "reason": pa.array(why, pa.string())})
    return data.filter(pc.invert(bad)), errors


def split_null_times(data: pa.Table, column: str) -> tuple[pa.Table, pa.Table | None]:
    """The rows of `data` with an event time, and an ``errors`` table (``raw``: the row
    as JSON, ``reason``) for the rows whose `column` is null (None when there are none).

    >>> t = pa.table({"k": [1, 2], "ts": [7, None]})
    >>> ok, errors = split_null_times(t, "ts")
    >>> ok.num_rows, errors.column("reason")[0].as_py()
    (1, "event time column 'ts' is null")
    """
    if data.column(column).null_count == 0:
        return data, None
    null = pc.is_null(data.column(column))
    return route_to_errors(data, null, f"event time column {column!r} is null")


def _iso(ms: int) -> str:
    """Milliseconds since the epoch as UTC text (the number again when out of range).

    >>> _iso(253402300799000), _iso(10**18)
    ('9999-12-31T23:59:59Z', '1000000000000000000 ms')
    """
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms"


@dataclass
class Timestamper:
    """The time state of one source and its admission decisions (no I/O).

    Settings: `name` (for messages), `time_column` (event time from that column),
    `explicit` (the rows carry ``_time``: `Rows`, `Timer`), `lateness`, `idle_timeout`
    and `max_future` (ms). The rest is state, restored from the last binding.

    >>> ts = Timestamper("s")  # ingestion time
    >>> ts.event_time, ts.side_time(1_000)
    (False, 1000)
    >>> ts.advance(into_time=1_000); ts.frontier
    1001
    """

    name: str
    time_column: str | None = None
    explicit: bool = False
    lateness: int | None = None
    #: ms of the ticker's clock without a record after which the event-time frontier
    #: moves to ``into_time - lateness`` (None: never)
    idle_timeout: int | None = None
    #: how far (ms) an event time may lie ahead of the binding time before the record is
    #: refused (None: no bound)
    max_future: int | None = None
    #: the source's frontier (None: finished)
    frontier: int | None = MIN_TIME
    exhausted: bool = False
    #: the largest event time admitted or routed so far
    max_seen: int | None = None
    #: the largest event-time frontier the source itself reported
    reported: int | None = None
    #: binding time of the last tick that read a record (or of the first tick)
    last_active: int | None = None
    #: the largest frontier idleness set, and the binding time it was set at
    idle_floor: int | None = None
    idle_at: int | None = None

    @property
    def event_time(self) -> bool:
        """Are times taken from the rows (a time column or explicit ``_time``)?"""
        return self.time_column is not None or self.explicit

    @property
    def bounded(self) -> bool:
        """Does bounded lateness (the largest time seen) give the admission bound, rather
        than the source's reported frontier?"""
        return self.lateness is not None or self.reported is None

    def side_time(self, into_time: int) -> int:
        """The time the side outputs (late, errors, health) of a tick are stamped at: its
        binding time, for every kind of source. (They used to follow the event-time
        frontier, which one far-future record could hold back for ever.)"""
        return into_time

    def note_read(self, read_any: bool, into_time: int) -> None:
        """Record a tick's read: did it read any record (data or error)?"""
        if read_any or self.last_active is None:
            self.last_active = into_time

    # ------------------------------------------------------------------ stamping
    def event_times(self, data: pa.Table) -> np.ndarray:
        """The event times (int64 ms) of `data`'s rows, none null: ``_time`` (explicit)
        or the time column (a timestamp, or an int of milliseconds).

        >>> Timestamper("s", time_column="t").event_times(pa.table({"t": [3, 4]})).tolist()
        [3, 4]
        """
        col = self.event_time_column(data)
        return col.to_numpy().astype(np.int64, copy=False)

    def event_time_column(self, data: pa.Table) -> pa.Array:
        """`data`'s event times as an int64 array of milliseconds, nulls kept."""
        col = data.column(TIME if self.explicit else self.time_column)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(pc.cast(col, pa.timestamp("ms", tz=col.type.tz)), pa.int64())
        elif not pa.types.is_integer(col.type):
            raise SchemaError(
                f"source {self.name!r}: time={self.time_column!r} has type {col.type}; "
                "the event-time column must be a timestamp or an int of milliseconds"
            )
        return pc.cast(col, pa.int64()).combine_chunks()

    # ------------------------------------------------------------------ refusal
    def refuses_any(self, data: pa.Table, into_time: int) -> bool:
        """Would `refuse` take any row of `data` (only its event-time column is read)?"""
        col = self.event_time_column(data)
        if col.null_count:
            return True
        if self.max_future is None or len(col) == 0:
            return False
        return pc.max(col).as_py() > into_time + self.max_future

    def refuse(self, data: pa.Table, into_time: int) -> tuple[pa.Table, pa.Table | None]:
        """The rows of `data` that enter admission, and an ``errors`` table (``raw``: the
        row as JSON, ``reason``) for those refused: a null event time, or one beyond
        ``into_time + max_future``. Refused rows never reach `admit`, so they move
        neither `max_seen` nor the frontier.

        >>> ts = Timestamper("s", time_column="t", max_future=3_600_000)
        >>> ok, errors = ts.refuse(pa.table({"t": [5, 253402300799000, None]}), into_time=0)
        >>> ok.column("t").to_pylist(), errors.column("raw").to_pylist()
        ([5], ['{"t": 253402300799000}', '{"t": null}'])
        >>> reason = errors.column("reason")[0].as_py()
        >>> reason[:74]
        'event time 253402300799000 ms (9999-12-31T23:59:59Z) lies more than max_fu'
        >>> reason[-71:]
        "Fix the producer's clock, or raise max_future (None disables the bound)"
        """
        if not self.refuses_any(data, into_time):
            return data, None
        col = self.event_time_column(data)
        column = TIME if self.explicit else self.time_column
        null = pc.is_null(col)
        if self.max_future is None:
            return route_to_errors(data, null, f"event time column {column!r} is null")
        bound = into_time + self.max_future
        future = pc.fill_null(pc.greater(col, bound), False)
        bad = pc.or_(null, future)
        reasons = [
            f"event time column {column!r} is null"
            if t is None
            else self._future_reason(t, into_time)
            for t in pc.filter(col, bad).to_pylist()
        ]
        return route_to_errors(data, bad, reasons)

    def _future_reason(self, t: int, into_time: int) -> str:
        bound = into_time + (self.max_future or 0)
        return (
            f"event time {t} ms ({_iso(t)}) lies more than max_future={self.max_future} ms "
            f"ahead of the ingestion clock: the bound at this tick is {bound} ms "
            f"({_iso(bound)}), the binding time {into_time} ms plus max_future. Fix the "
            "producer's clock, or raise max_future (None disables the bound)"
        )

    def admit(self, times: np.ndarray, into_time: int) -> Admission:
        """Decide, in log order, which of the next records (event times `times`) are
        late; late ones are stamped at the tick's binding time `into_time` (the side
        outputs' time: released with the binding, whatever the event-time frontier).
        Updates `max_seen`."""
        n = len(times)
        if self.bounded:
            carry = self.max_seen if self.max_seen is not None else MIN_TIME
            # bound[i] = max(carry, times[:i]) - lateness, with one array allocated.
            bound = np.empty(n, np.int64)
            if n:
                bound[0] = carry
                np.maximum.accumulate(times[:-1], out=bound[1:])
                np.maximum(bound[1:], carry, out=bound[1:])
                bound -= self.lateness or 0
        else:
            bound = np.full(n, self.reported, np.int64)
        # Idleness moved the frontier past the bound the data alone gives: it admits
        # nothing below the frontier it set.
        idle = None
        if self.idle_floor is not None and n:
            idle = bound < self.idle_floor
            if idle.any():
                bound = np.maximum(bound, self.idle_floor)
            else:
                idle = None
        late = times < bound
        if n:
            top = int(times.max())
            self.max_seen = top if self.max_seen is None else max(self.max_seen, top)
        if not late.any():
            return Admission(times, late, None)
        reason = self._late_reason(times, bound, late, idle)
        return Admission(np.where(late, into_time, times), late, reason)

    def _late_reason(
        self, times: np.ndarray, bound: np.ndarray, late: np.ndarray, idle: np.ndarray | None
    ) -> pa.Array:
        """Per row: why it is late (null where it is not), naming the bound it missed and
        where the bound comes from (`idle`: the rows whose bound idleness set)."""
        t = pc.cast(pa.array(times), pa.string())
        b = pc.cast(pa.array(bound), pa.string())
        if self.bounded:
            seen = pc.cast(pa.array(bound + (self.lateness or 0)), pa.string())
            text = pc.binary_join_element_wise(
                "event time ",
                t,
                " ms is below the admission bound ",
                b,
                " ms (largest event time seen before it ",
                seen,
                f" ms minus lateness {self.lateness or 0} ms)",
                "",
            )
        else:
            text = pc.binary_join_element_wise(
                "event time ", t, " ms is below the source's event-time frontier ", b, " ms", ""
            )
        if idle is not None:
            idle_text = pc.binary_join_element_wise(
                "event time ",
                t,
                " ms is below the event-time frontier ",
                b,
                " ms, which the source's idle_timeout advanced: no record arrived for "
                f"{self.idle_timeout} ms of the ticker's clock, so at clock time "
                f"{self.idle_at} ms time moved on to the clock minus lateness "
                f"{self.lateness or 0} ms",
                "",
            )
            text = pc.if_else(pa.array(idle), idle_text, text)
        return pc.if_else(pa.array(late), text, pa.nulls(len(times), pa.string()))

    # ------------------------------------------------------------------ frontier
    def advance(
        self, into_time: int, *, exhausted: bool = False, event_frontier: int | None = None
    ) -> None:
        """Move the frontier after a tick's batch: empty when the source is `exhausted`;
        else by the binding time (ingestion time), the source's reported
        `event_frontier`, or the largest event time seen minus lateness; then idleness."""
        if exhausted:
            self.exhausted = True
            self.frontier = None
            return
        if event_frontier is not None:
            self.reported = (
                event_frontier if self.reported is None else max(self.reported, event_frontier)
            )
        if not self.event_time:
            candidate = into_time + 1
        elif not self.bounded:
            candidate = self.reported
        else:
            lateness = self.lateness or 0
            candidate = self.max_seen - lateness if self.max_seen is not None else MIN_TIME
        self.frontier = max(self.frontier, candidate)
        self._advance_idle(into_time)

    def _advance_idle(self, into_time: int) -> None:
        """Idleness (Triceps' "time flows without data"): after `idle_timeout` ms of the
        ticker's clock without a record, the event-time frontier moves to the clock minus
        lateness. Only binding times enter here, so replay repeats it exactly."""
        if self.idle_timeout is None or self.last_active is None or not self.event_time:
            return
        if into_time - self.last_active < self.idle_timeout:
            return
        target = into_time - (self.lateness or 0)
        if self.frontier is not None and target > self.frontier:
            self.frontier = target
            self.idle_floor = target
            self.idle_at = into_time
