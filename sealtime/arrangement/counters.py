"""Per-operator counters measured inside the kernels' Spark tasks, for monitoring.

A kernel task knows, for each arrangement partition it runs, how many updates went in,
how many came out, how many rows the partition's state holds after the write, and how
long the kernel took. It adds them to a PySpark accumulator; the values travel back
with the task results of the job that runs the step anyway, so counting costs no Spark
job. The driver drains them once per tick (`KernelCounters.drain`).

Entries are keyed by ``(operator, version, partition)`` and merged by replacement, not
by addition: a task that Spark runs twice (a recomputed frame, a retried stage) writes
the same version again from the same inputs, so it reports the same numbers and counts
once. The numbers are for monitoring only; no data decision reads them.

>>> c = KernelCounters()   # a local accumulator stand-in (no SparkContext)
>>> p = c.probe(operator=7, version=1)
>>> p.record(0, rows_in=3, rows_out=2, state_rows=2, seconds=0.01)
>>> p.record(1, rows_in=1, rows_out=1, state_rows=1, seconds=0.02)
>>> p.record(1, rows_in=1, rows_out=1, state_rows=1, seconds=0.02)  # a re-run: same key
>>> t = c.drain()[7]
>>> (t.rows_in, t.rows_out, t.state_rows, t.partitions, round(t.seconds, 2))
(4, 3, 3, 2, 0.03)
>>> c.drain()
{}
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pyspark.accumulators import AccumulatorParam

__all__ = ["KernelCounters", "KernelTotals", "PartitionCounts", "TaskProbe"]

#: (operator, version, partition)
Key = tuple[int, int, int]


@dataclass(frozen=True)
class PartitionCounts:
    """What one kernel run on one arrangement partition did. A count is None when the
    kernel's rows are not the operator's (e.g. a windowed aggregate's input is
    pre-combined partials, or its output is aggregated again by Spark)."""

    rows_in: int | None
    rows_out: int | None
    state_rows: int | None
    seconds: float


class _ReplaceParam(AccumulatorParam):
    """A dict accumulator whose merge replaces entries of the same key."""

    def zero(self, value: dict[Key, PartitionCounts]) -> dict[Key, PartitionCounts]:
        return {}

    def addInPlace(
        self, value1: dict[Key, PartitionCounts], value2: dict[Key, PartitionCounts]
    ) -> dict[Key, PartitionCounts]:
        value1.update(value2)
        return value1


class _Local:
    """An accumulator stand-in for use without Spark (doctests, unit tests)."""

    def __init__(self) -> None:
        self.value: dict[Key, PartitionCounts] = {}

    def add(self, term: dict[Key, PartitionCounts]) -> None:
        self.value.update(term)


@dataclass(frozen=True)
class TaskProbe:
    """What a `KernelTask` carries to report one step: the accumulator, the operator
    and the arrangement version the step writes, and which counts are exact."""

    accumulator: Any
    operator: int
    version: int
    count_in: bool = True
    count_out: bool = True

    def record(
        self, partition: int, rows_in: int, rows_out: int, state_rows: int | None, seconds: float
    ) -> None:
        """Add one partition's numbers (inside the Spark task)."""
        counts = PartitionCounts(
            rows_in if self.count_in else None,
            rows_out if self.count_out else None,
            state_rows,
            seconds,
        )
        self.accumulator.add({(self.operator, self.version, partition): counts})


@dataclass(frozen=True)
class KernelTotals:
    """One operator's kernel numbers over the steps drained at once: rows in and out
    summed over partitions and steps (None: not exact for this operator), state rows
    after its latest step (summed over the partitions that reported), kernel seconds
    summed over partitions (task time, not wall time), partitions that reported."""

    rows_in: int | None
    rows_out: int | None
    state_rows: int | None
    seconds: float
    partitions: int


class KernelCounters:
    """The driver's handle: one accumulator for all kernels of a dataflow.

    `spark_context` None gives a local stand-in (no Spark; for tests). `probe` makes the
    `TaskProbe` of one step; `drain` takes what the tasks reported since the last drain.
    """

    def __init__(self, spark_context: Any = None) -> None:
        if spark_context is None:
            self.accumulator: Any = _Local()
        else:
            self.accumulator = spark_context.accumulator({}, _ReplaceParam())
        self._lock = threading.Lock()
        #: per operator, the newest version drained (an older one is a late re-run)
        self._drained: dict[int, int] = {}

    def probe(
        self, operator: int, version: int, *, count_in: bool = True, count_out: bool = True
    ) -> TaskProbe:
        """The probe a kernel step of `operator` writing `version` carries."""
        return TaskProbe(self.accumulator, operator, version, count_in, count_out)

    def drain(self) -> dict[int, KernelTotals]:
        """Per operator, the totals of the steps reported since the last drain (called by
        the engine after a tick's jobs; steps of versions drained before are ignored)."""
        with self._lock:
            entries: dict[Key, PartitionCounts] = dict(self.accumulator.value)
            self.accumulator.value = {}
            by_op: dict[int, dict[Key, PartitionCounts]] = {}
            for key, counts in entries.items():
                op, version, _ = key
                if version > self._drained.get(op, -1):
                    by_op.setdefault(op, {})[key] = counts
            out = {}
            for op, got in by_op.items():
                latest = max(v for _, v, _ in got)
                self._drained[op] = latest
                out[op] = _totals(got, latest)
            return out


def _totals(got: dict[Key, PartitionCounts], latest: int) -> KernelTotals:
    values = list(got.values())
    last = [c for (_, v, _), c in got.items() if v == latest]
    states = [c.state_rows for c in last]
    return KernelTotals(
        rows_in=_sum([c.rows_in for c in values]),
        rows_out=_sum([c.rows_out for c in values]),
        state_rows=_sum(states),
        seconds=sum(c.seconds for c in values),
        partitions=len(last),
    )


def _sum(values: list[int | None]) -> int | None:
    return None if not values or any(v is None for v in values) else sum(values)  # type: ignore[misc]
