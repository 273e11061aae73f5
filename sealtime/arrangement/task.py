"""`KernelTask`: the function Spark runs (``mapInArrow``) for one partition of a step.

It gathers the partition's Arrow batches, finds which arrangement partition they belong
to (``__p``; every partition's shuffle carries one marker row, so a partition without
updates still runs and knows who it is), checks that they all belong to the same one (a
setting that re-partitions behind sealtime's back would otherwise mix partitions
silently), drops the marker, runs the kernel (which reads and writes the partition's
runs), and returns the output in the declared schema.

Spark's task index is not used: a task that computes a kernel inside a union of stages
has an index offset by the union's other inputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["MARKER", "PARTITION", "Kernel", "KernelTask"]

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

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = list(batches)
        if not got:
            return  # not one of the step's partitions (no marker reached this task)
        table = pa.Table.from_batches(got)
        if not table.num_rows:
            return
        parts = np.unique(np.asarray(table.column(PARTITION).to_numpy()))
        if len(parts) != 1:
            raise RuntimeError(
                f"sealtime {type(self.kernel).__name__}: rows of arrangement partitions "
                f"{parts.tolist()} reached one task; arrangements need Spark to keep hash "
                "partitions as they are: set spark.sql.adaptive.enabled=false and "
                "spark.sql.unionOutputPartitioning=false (the engine sets both)"
            )
        partition = int(parts[0])
        if MARKER in table.column_names:
            table = table.filter(pc.invert(pc.fill_null(table.column(MARKER), False)))
        out = self.kernel.run(table, partition)
        out = conform(out, self.output_schema)
        yield from out.to_batches(max_chunksize=_BATCH)


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
