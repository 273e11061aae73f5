"""`KernelTask`: the function Spark runs (``mapInArrow``) for one task of a step.

A task gets the rows of one or more whole arrangement partitions (``__p``): the shuffle
puts each partition in one Spark partition, and the operator may coalesce Spark
partitions so that a step runs as many Python tasks as there are cores, not one per
arrangement partition (each Python task costs tens of milliseconds of fixed overhead).
Every partition's shuffle carries exactly one marker row, so a partition without
updates still runs and its task knows it is there. A task checks that each partition it
sees has its marker: a setting that splits a partition among tasks behind sealtime's
back (adaptive skew splitting) would otherwise run the kernel on half a partition
silently. It then drops the markers and runs the kernel once per partition (each reads
and writes that partition's runs), and returns the outputs in the declared schema.

Spark's task index is not used: a task that computes a kernel inside a union of stages
has an index offset by the union's other inputs.

A task with a `probe` (`sealtime.arrangement.counters`) also reports, per partition,
the rows in and out, the state rows after the write (the step's ``state_rows``, if it
has one) and the kernel's time, through an accumulator: monitoring at no extra job.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError
from ..kernels.keyed import slices_without

__all__ = ["MARKER", "PARTITION", "Kernel", "KernelTask", "split_partitions"]

PARTITION = "__p"  # the arrangement partition of the row's key
MARKER = "__m"  # true on the one marker row each partition's shuffle carries
_BATCH = 65536


class Kernel(Protocol):
    """One operator's work on one partition: ``run(table, partition) -> output``."""

    def run(self, table: pa.Table, partition: int) -> pa.Table: ...


@dataclass(frozen=True)
class KernelTask:
    """A picklable ``mapInArrow`` function wrapping a `Kernel`."""

    kernel: Any
    input_schema: pa.Schema
    output_schema: pa.Schema
    #: a `sealtime.arrangement.counters.TaskProbe` (None: nothing is counted)
    probe: Any = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        _freeze_imports()
        got = list(batches)
        if not got:
            return  # not one of the step's partitions (no marker reached this task)
        table = pa.Table.from_batches(got)
        if not table.num_rows:
            return
        part = np.asarray(table.column(PARTITION).to_numpy(zero_copy_only=False))
        marked = np.asarray(
            pc.fill_null(table.column(MARKER), False).to_numpy(zero_copy_only=False), bool
        )
        present = np.unique(part)
        missing = np.setdiff1d(present, part[marked])
        if len(missing):
            raise ConfigError(
                f"sealtime {type(self.kernel).__name__}: a task got rows of arrangement "
                f"partitions {missing.tolist()} without their markers, so those partitions "
                "were split among tasks; arrangements need Spark to keep hash partitions "
                "whole: set spark.sql.adaptive.enabled=false and "
                "spark.sql.unionOutputPartitioning=false (the engine sets both)"
            )
        outs = [self.run_partition(rows, p) for p, rows in split_partitions(table, part, marked)]
        for out in outs:
            yield from conform(out, self.output_schema).to_batches(max_chunksize=_BATCH)

    def run_partition(self, table: pa.Table, partition: int) -> pa.Table:
        """The kernel on one partition's rows (counted when the task has a probe)."""
        if self.probe is None:
            return self.kernel.run(table, partition)
        started = time.perf_counter()  # (monitoring only: no data decision reads it)
        out = self.kernel.run(table, partition)
        measure = getattr(self.kernel, "state_rows", None)
        try:
            state = measure(partition) if measure is not None else None
        except OSError:  # (a monitoring read never fails the step)
            state = None
        seconds = time.perf_counter() - started
        self.probe.record(partition, table.num_rows, out.num_rows, state, seconds)
        return out


def split_partitions(
    table: pa.Table, part: np.ndarray, marked: np.ndarray
) -> list[tuple[int, pa.Table]]:
    """`table`'s rows per partition, in partition order, without the marker rows.

    Coalescing concatenates whole Spark partitions, so a task's partitions usually
    arrive one after the other: then each partition is slices of `table` between its
    markers (no row is copied; wide rows made these copies a large part of a join's
    kernel). Interleaved partitions are taken apart with one take each.

    >>> t = pa.table({"x": [0, 1, 2, 3, 4, 5]})
    >>> part, marked = np.array([1, 1, 1, 2, 2, 2]), np.array([1, 0, 0, 0, 1, 0], bool)
    >>> [(p, rows["x"].to_pylist()) for p, rows in split_partitions(t, part, marked)]
    [(1, [1, 2]), (2, [3, 5])]
    >>> part = np.array([2, 1, 2, 1, 2, 1])
    >>> [(p, rows["x"].to_pylist()) for p, rows in split_partitions(t, part, marked)]
    [(1, [1, 3, 5]), (2, [2])]
    """
    n = len(part)
    edges = np.flatnonzero(part[1:] != part[:-1]) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [n]])
    if len(np.unique(part[starts])) == len(starts):  # each partition is one run of rows
        out = []
        for a, b in sorted(zip(starts.tolist(), ends.tolist()), key=lambda ab: part[ab[0]]):
            rows = slices_without(table, np.flatnonzero(marked[a:b]) + a, a, b)
            out.append((int(part[a]), rows))
        return out
    keep = np.flatnonzero(~marked)
    order = keep[np.argsort(part[keep], kind="stable")]
    present = np.unique(part)
    cuts = np.searchsorted(part[order], present, side="left").tolist() + [len(order)]
    rows = pa.array(order, pa.int64())
    return [
        (int(p), table.take(rows[a:b])) for p, a, b in zip(present.tolist(), cuts[:-1], cuts[1:])
    ]


_FROZEN = False


def _freeze_imports() -> None:
    """Move what the Python worker holds before its first kernel (pyspark, pyarrow,
    numpy, pandas: hundreds of thousands of objects) out of the garbage collector's
    reach. PySpark's reused workers run a full ``gc.collect()`` after every task, which
    otherwise scans all of it each time (~50-100 ms per task, measured on this
    project's 2-core machine), while the next task waits for the worker."""
    global _FROZEN
    if not _FROZEN:
        import gc

        gc.freeze()
        _FROZEN = True


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema`'s columns, order and types (Spark reads Arrow
    batches by position and does not convert types)."""
    arrays = []
    for f in schema:
        col = table.column(f.name)
        if col.type != f.type:
            col = col.cast(f.type)
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=schema)
