"""Collecting a collection for an Arrow sink ahead of its frontier (`AheadCollector`).

In event time a tick seals only the times below the source's frontier (the largest
event time seen minus the lateness). The rows of a newly logged file above it wait
for a later tick, which reads them from the log again; for a linked Parquet file that
is a scan of the whole file, since a run-time time bound skips no row group. A
stateless pipeline into a Python sink thus read most files twice.

When a sink takes Arrow (`sealtime.sinks.base.Sink.takes_arrow`) and its collection is
per-row operators (`PlanNode.per_row`) over one source's main output
(`sealtime.plan.row_source`), the engine reads each log entry once instead:
it collects the entry's updates at all their times, hands the sink those below the
frontier and holds the rest, in Arrow on the driver, for the ticks that seal them.

What the sink receives is what the tick-by-tick plan gives, range by range: at a tick
sealing ``[lo, hi)`` the held rows are every update at a time ``>= lo`` of the entries
read so far, and the new entries add theirs, so the rows below ``hi`` are every update
in ``[lo, hi)`` of every entry logged up to this tick. Nothing of this is durable: a
restarted engine starts with nothing held and reads the log from the sink's frontier,
as the plain path does. Held rows above `DataPathTuning.ahead_max_bytes` (a lateness
long against the input rate) are dropped, and the next tick reads them from the log
again, so memory stays bounded whatever the lateness.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..columns import TIME
from ..errors import InternalError
from ..plan import DataPathTuning

__all__ = ["AheadCollector", "Collected", "split_at"]

#: What a read gives: the rows as Arrow, a callable that returns them once a collection
#: still running ends (a Spark job started in the background), or None (nothing to read)
Collected = pa.Table | Callable[[], "pa.Table | None"] | None

#: ``read(lo, skip)``: the updates at times ``>= lo`` of the log entries not in `skip`
#: (`Collected`), and the keys of every entry with times ``>= lo``
Read = Callable[[int, Collection[tuple[str, int]]], tuple[Collected, list[tuple[str, int]]]]


@dataclass
class _Pending:
    """Reads begun for the range that starts at some ``lo``: they skipped `skip` and
    cover `keys` (every entry with times ``>= lo`` when they began)."""

    skip: frozenset[tuple[str, int]]
    keys: set[tuple[str, int]] = field(default_factory=set)
    parts: list[Collected] = field(default_factory=list)

    def add(self, collected: Collected, keys: list[tuple[str, int]]) -> None:
        if collected is not None:
            self.parts.append(collected)
        self.keys.update(keys)

    def tables(self) -> list[pa.Table]:
        out = [p() if callable(p) else p for p in self.parts]
        return [t for t in out if t is not None]


class AheadCollector:
    """One sink's rows of one collection, collected ahead of the frontier.

    `take` returns the updates of a sealed range ``[lo, hi)``: the rows held from
    earlier reads at times below `hi`, and the rows of entries not read before (from
    `read`) in ``[lo, hi)``; it keeps the others. A range that does not start where the
    last one ended (a restart, a failed tick) drops what is held first.

    The engine splits a take in two so that collections run while it goes on:
    `begin` starts the reads of the range (a read may return a running collection), and
    `begin_next` starts, for the range that will start at `hi`, the reads of entries
    logged after `begin` (the next tick's, whose binding was minted early); `take` then
    waits for the range's reads. Entries logged after a range's `begin` hold no rows
    below its `hi` (that is what sealing means), so neither range misses a row, and no
    entry is read twice.

    >>> t = lambda *ts: pa.table({"x": list(ts), "_time": list(ts)})
    >>> log = {("a", 0): t(1, 5, 9), ("b", 0): t(7, 12)}
    >>> def read(lo, skip):
    ...     new = [k for k in log if k not in skip]
    ...     rows = [log[k].filter(pc.greater_equal(log[k]["_time"], lo)) for k in new]
    ...     return (pa.concat_tables(rows) if rows else None), list(log)
    >>> c = AheadCollector()
    >>> del log[("b", 0)]; c.take(0, 6, read)["x"].to_pylist(), c.held_rows
    ([1, 5], 1)
    >>> log[("b", 0)] = t(7, 12); sorted(c.take(6, 10, read)["x"].to_pylist()), c.held_rows
    ([7, 9], 1)
    >>> c.take(10, None, read)["x"].to_pylist(), c.held_rows
    ([12], 0)

    Split, with the next range's entry read before this range is taken:

    >>> log = {("a", 0): t(1, 5, 9)}
    >>> c = AheadCollector(); c.begin(0, read)
    >>> log[("b", 0)] = t(7, 12); c.begin_next(0, 6, read)
    >>> c.take(0, 6)["x"].to_pylist(), sorted(c.take(6, 10, read)["x"].to_pylist())
    ([1, 5], [7, 9])
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        #: held rows (Arrow bytes on the driver) above which they are dropped
        self.max_bytes = DataPathTuning().ahead_max_bytes if max_bytes is None else max_bytes
        self._held: pa.Table | None = None
        #: keys of the entries whose rows at times >= `_upper` are in `_held`
        self._read: set[tuple[str, int]] = set()
        self._upper: int | None = None  # where the last range ended
        #: reads begun, by the ``lo`` of the range they are for
        self._pending: dict[int, _Pending] = {}
        #: (monitoring) times the held rows were dropped for `max_bytes`
        self.dropped = 0

    @property
    def held_rows(self) -> int:
        """Rows held for later ranges."""
        return 0 if self._held is None else self._held.num_rows

    def reset(self) -> None:
        """Hold nothing: the next range reads every entry it overlaps from the log."""
        self._held, self._read, self._upper = None, set(), None
        self._pending = {}

    def begin(self, lo: int, read: Read) -> None:
        """Begin the reads of the range starting at `lo`: the entries not read yet, but
        those a `begin_next` already began reading for this range."""
        if self._upper != lo:
            self.reset()
            self._upper = lo  # (nothing is held: where the range starts is all it knows)
        skip = frozenset(self._read)
        pending = self._pending.get(lo)
        if pending is None or pending.skip != skip:
            pending = self._pending[lo] = _Pending(skip)
        pending.add(*read(lo, skip | pending.keys))

    def begin_next(self, lo: int, hi: int, read: Read) -> None:
        """Begin, for the range that will start at `hi`, the reads of the entries logged
        since the `begin` of the range starting at `lo` (which must have begun)."""
        covered = frozenset(self._pending[lo].keys)
        nxt = self._pending[hi] = _Pending(covered)
        nxt.add(*read(hi, covered))

    def take(self, lo: int, hi: int | None, read: Read | None = None) -> pa.Table | None:
        """The updates at times in ``[lo, hi)`` (None: no entry holds any). With `read`,
        the range's reads begin here; without it, they must have begun (`begin`)."""
        if read is not None:
            self.begin(lo, read)
        if self._upper != lo or lo not in self._pending:
            raise InternalError(f"AheadCollector.take({lo}, {hi}): the range's reads never began")
        pending = self._pending.pop(lo)
        parts = [p for p in (self._held, *pending.tables()) if p is not None]
        rows = None
        if parts:
            # (all come from one plan; promotion only evens out nullability flags)
            rows = pa.concat_tables(parts, promote_options="permissive")
        if hi is None:
            self.reset()
            return rows
        self._read, self._upper = set(pending.keys), hi
        self._pending = {k: v for k, v in self._pending.items() if k == hi}
        if rows is None:
            self._held = None
            return None
        sealed, self._held = split_at(rows, hi)
        if self._held.nbytes > self.max_bytes:
            self.reset()
            self.dropped += 1
        return sealed


def split_at(rows: pa.Table, hi: int) -> tuple[pa.Table, pa.Table]:
    """`rows` split into those at times below `hi` and the others.

    Batch by batch: a batch whose times all lie on one side goes there whole, without
    a copy, and only batches that straddle `hi` are filtered. Rows read from a log in
    file order are mostly in time order, so a tick's rows split with few copies:
    filtering a whole 460,000-row Nexmark tick (48 batches) took 60-135 ms, against
    about 1 ms batch by batch.

    >>> t = pa.Table.from_batches([pa.record_batch({"_time": ts}) for ts in ([1, 2], [3, 9])])
    >>> [part["_time"].to_pylist() for part in split_at(t, 3)]
    [[1, 2], [3, 9]]
    >>> [part["_time"].to_pylist() for part in split_at(t, 5)]
    [[1, 2, 3], [9]]
    """
    below: list[pa.RecordBatch] = []
    above: list[pa.RecordBatch] = []
    for batch in rows.to_batches():
        if batch.num_rows == 0:
            continue
        times = batch.column(TIME)
        bounds = pc.min_max(times)
        if bounds["max"].as_py() < hi:
            below.append(batch)
        elif bounds["min"].as_py() >= hi:
            above.append(batch)
        else:
            mask = pc.less(times, hi)
            below.append(batch.filter(mask))
            above.append(batch.filter(pc.invert(mask)))
    return (
        pa.Table.from_batches(below, rows.schema),
        pa.Table.from_batches(above, rows.schema),
    )
