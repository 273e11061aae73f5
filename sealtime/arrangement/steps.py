"""The kernels as Spark runs them: each reads and writes one partition's runs.

Every class here is a small frozen, picklable description of one operator step
(its spec, the arrangement's root `DataFS`, the version it writes); Spark ships it to the
executors inside a `KernelTask`, and its `run` does the partition's work with the
pure kernels of `sealtime.kernels`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..kernels.accumulate import AccumulateSpec, accumulate, empty_state
from ..kernels.differential_top_k import TopKSpec, top_k_step
from ..kernels.general_reduce import ReduceSpec, general_reduce
from ..kernels.join import JoinSpec, join_step
from ..kernels.keyed import ROW_CNT
from ..kernels.windowed import merge_partials, split_sealed
from ..storage.fs import DataFS
from .partition import SpinePartition, consolidate_rows
from .runs import (
    bucket_name,
    live_buckets,
    live_spine,
    partition_fs,
    read_run,
    run_rows,
    write_run,
)

__all__ = [
    "AccumulateStep",
    "GeneralStep",
    "JoinStep",
    "RowsStep",
    "SideRef",
    "TopKStep",
    "WindowedStep",
    "join_sides",
    "rows_partition",
    "spine_rows",
]


def spine_rows(directory: DataFS, version: int) -> int:
    """Rows stored in the live spine runs of one partition directory at `version` (read
    from the runs' footers; for monitoring)."""
    return sum(run_rows(directory, r.name) for r in live_spine(directory, version))


def rows_partition(
    root: DataFS, partition: int, version: int, keys: Sequence[str], payload: Sequence[str]
) -> SpinePartition:
    """Partition `partition` of an additive arrangement of the keys' rows (the `keys`
    columns, then `payload`) that a step reads after ``version - 1``."""
    return SpinePartition(
        partition_fs(root, partition), version, keys, "additive", columns=[*keys, *payload]
    )


def join_sides(
    table: pa.Table, spec: JoinSpec, sides: Sequence[SideRef], partition: int
) -> tuple[pa.Table, list[SpinePartition], list[pa.Table]]:
    """`join_step` on partition `partition` of the sides' arrangements: the output, each
    side's partition and each side's new run (the caller writes the runs it owns)."""
    parts = [
        rows_partition(ref.root, partition, ref.version, (*spec.keys,), spec.payload(s))
        for s, ref in enumerate(sides)
    ]
    out, runs = join_step(table, spec, lambda side, q: parts[side].lookup(q))
    return out, parts, runs


@dataclass(frozen=True)
class AccumulateStep:
    """An accumulable reduce (`sealtime.kernels.accumulate`) on an upsert arrangement."""

    spec: AccumulateSpec
    root: DataFS
    version: int
    expire: tuple[str, int] | None = None

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        part = SpinePartition(
            partition_fs(self.root, partition),
            self.version,
            self.spec.keys,
            "upsert",
            empty=empty_state(self.spec),
        )
        out, new_run = accumulate(table, self.spec, part.lookup)
        part.write(new_run, self.expire)
        return out

    def state_rows(self, partition: int) -> int:
        """Rows of the partition's state after this step (one per key)."""
        return spine_rows(partition_fs(self.root, partition), self.version)


@dataclass(frozen=True)
class RowsStep:
    """A kernel ``(delta, spec, lookup) -> (output, new_run)`` on an additive arrangement
    of the keys' rows (the spec's keys and values): what `GeneralStep` and the over
    operators' step share. A subclass names its spec type and its `kernel`."""

    spec: Any
    root: DataFS
    version: int
    expire: tuple[str, int] | None = None

    def kernel(self) -> Callable[..., tuple[pa.Table, pa.Table]]:
        """The kernel this step runs for its spec."""
        raise NotImplementedError

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        part = rows_partition(self.root, partition, self.version, self.spec.keys, self.spec.values)
        out, new_run = self.kernel()(table, self.spec, part.lookup)
        part.write(new_run, self.expire)
        return out

    def state_rows(self, partition: int) -> int:
        """Rows of the partition's state after this step (distinct rows with counts)."""
        return spine_rows(partition_fs(self.root, partition), self.version)


@dataclass(frozen=True)
class GeneralStep(RowsStep):
    """A general reduce (`sealtime.kernels.general_reduce`) or a top-k
    (`sealtime.kernels.differential_top_k`) on an additive arrangement of the keys' rows."""

    spec: ReduceSpec | TopKSpec

    def kernel(self) -> Callable[..., tuple[pa.Table, pa.Table]]:
        return general_reduce if isinstance(self.spec, ReduceSpec) else top_k_step


TopKStep = GeneralStep


@dataclass(frozen=True)
class SideRef:
    """One join side's arrangement: its root, the version the step reads *after*
    (it reads ``version - 1``), and whether this step writes ``version`` (a shared
    arrangement is written by one of the operators that read it)."""

    root: DataFS
    version: int
    write: bool


@dataclass(frozen=True)
class JoinStep:
    """A bilinear join (`sealtime.kernels.join`) on two additive arrangements."""

    spec: JoinSpec
    sides: tuple[SideRef, SideRef]
    expire: tuple[str, int] | None = None

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        out, parts, runs = join_sides(table, self.spec, self.sides, partition)
        for ref, part, run in zip(self.sides, parts, runs):
            if ref.write:
                part.write(run, self.expire)
        return out

    def state_rows(self, partition: int) -> int:
        """Rows of the partition in the sides this step writes (a shared side is
        counted at the join that writes it)."""
        return sum(
            spine_rows(partition_fs(ref.root, partition), ref.version)
            for ref in self.sides
            if ref.write
        )


@dataclass(frozen=True)
class WindowedStep:
    """Open windows kept as bucket runs per ``window_end`` (`sealtime.kernels.windowed`).

    `lo`/`hi` are the step's sealed range: buckets ending in ``(lo, hi]`` are read,
    merged with the tick's rows for them and emitted; rows of windows ending after
    `hi` are appended to their buckets at `version`. `merge` lists the partial
    columns and how they combine (partials), or is empty (rows with ``__cnt``, which
    are consolidated per distinct row).
    """

    root: DataFS
    version: int
    group: tuple[str, ...]
    merge: tuple[tuple[str, str], ...]
    values: tuple[str, ...]
    lo: int
    hi: int | None

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        import pyarrow.compute as pc

        directory = partition_fs(self.root, partition)
        columns = [*self.group, *self.values] if not self.merge else None
        keep = [*self.group, *(c for c, _ in self.merge)] if self.merge else None
        if keep is None:
            keep = [c for c in table.column_names if c not in ("__p", "__m")]
        table = table.select(keep)
        sealed, still_open = split_sealed(table, self.hi)
        stored = live_buckets(directory, self.version - 1)
        parts = [sealed]
        for bucket, paths in stored.items():
            if bucket <= self.lo:
                continue  # emitted by an earlier tick; its files wait for collection
            if self.hi is None or bucket <= self.hi:
                parts += [read_run(directory, n).select(keep) for n in paths]
        if self.merge:
            out = merge_partials(parts, self.group, self.merge)
        else:
            rows = pa.concat_tables([p.cast(table.schema) for p in parts])
            out = consolidate_rows(rows, self.group, columns) if rows.num_rows else rows
            if out.num_rows:
                out = out.filter(pc.greater(out.column(ROW_CNT), 0))
        if still_open.num_rows:
            ends = still_open.column("window_end")
            for bucket in pc.unique(ends).to_pylist():
                rows = still_open.filter(pc.equal(ends, bucket))
                if not self.merge:
                    rows = consolidate_rows(rows, self.group, columns)
                write_run(directory, bucket_name(bucket, self.version), rows)
        return out

    def state_rows(self, partition: int) -> int:
        """Rows of the partition's open windows (buckets ending after `hi`)."""
        if self.hi is None:
            return 0
        directory = partition_fs(self.root, partition)
        stored = live_buckets(directory, self.version)
        return sum(
            run_rows(directory, n)
            for bucket, names in stored.items()
            if bucket > self.hi
            for n in names
        )
