"""`FusedStep`: the kernel steps of several keyed operators as one task function.

Operators fused by the engine (`sealtime.engine.fusion`) share one shuffle: each row
carries the index of the member it belongs to (``tag``) and the member's values under
positional names. In each arrangement partition, every member's kernel runs on its own
rows (possibly none: each member writes its partition's version every tick), under its
own column names and with its own counters, and the outputs are tagged and put under
positional names again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .task import KernelTask, conform

__all__ = ["FusedStep", "tag_slices"]


@dataclass(frozen=True)
class FusedStep:
    """The members' tasks (each a `KernelTask` over the member's own schemas) over rows
    tagged by member index in column `tag`, with values under `input_names` and output
    under `output_names` (positional: the members' schemas differ only in names).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Plus:
    ...     k: int
    ...     def run(self, t, p):
    ...         return pa.table({"y": pa.compute.add(t["x"], self.k)})
    >>> schemas = (pa.schema([("x", pa.int64())]), pa.schema([("y", pa.int64())]))
    >>> step = FusedStep((KernelTask(Plus(1), *schemas), KernelTask(Plus(10), *schemas)),
    ...                  "v", ("c0",), ("c0",))
    >>> rows = pa.table({"v": pa.array([0, 1, 1], pa.int32()), "c0": [5, 6, 7]})
    >>> step.run(rows, 0).to_pydict()
    {'c0': [6, 16, 17], 'v': [0, 1, 1]}
    """

    members: tuple[KernelTask, ...]
    tag: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        slices = tag_slices(table.column(self.tag), len(self.members))
        values = table.select(list(self.input_names))
        outs = []
        for i, member in enumerate(self.members):
            rows = values.take(slices[i])
            rows = rows.rename_columns(member.input_schema.names)
            out = conform(member.run_partition(rows, partition), member.output_schema)
            out = out.rename_columns(list(self.output_names))
            outs.append(out.append_column(self.tag, pa.array(np.full(out.num_rows, i, np.int32))))
        return pa.concat_tables(outs)


def tag_slices(tags: pa.ChunkedArray | pa.Array, n: int) -> list[pa.Array]:
    """The row indices of each tag value 0 .. n - 1 (in row order).

    >>> [s.to_pylist() for s in tag_slices(pa.array([2, 0, 2, 1], pa.int32()), 4)]
    [[1], [3], [0, 2], []]
    """
    values = np.asarray(tags.to_numpy(zero_copy_only=False))
    order = np.argsort(values, kind="stable")
    cuts = np.searchsorted(values[order], np.arange(n + 1))
    return [pa.array(order[cuts[i] : cuts[i + 1]], pa.int64()) for i in range(n)]
