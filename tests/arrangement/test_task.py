"""`KernelTask`: whole partitions per task, markers checked, one kernel run per partition."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from sealtime.arrangement.task import MARKER, PARTITION, KernelTask
from sealtime.errors import ConfigError

OUT = pa.schema([("p", pa.int64()), ("k", pa.int64())])


class Echo:
    """Returns its partition beside every key it got (and records each call)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        self.calls.append(partition)
        assert MARKER in table.column_names and not any(table.column(MARKER).to_pylist())
        k = table.column("k")
        return pa.table({"k": k, "p": pa.array([partition] * len(k), pa.int32())})


def batch(parts: list[int], keys: list[int | None], markers: list[bool]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "k": pa.array(keys, pa.int64()),
            PARTITION: pa.array(parts, pa.int32()),
            MARKER: pa.array(markers),
        }
    )


def run(task: KernelTask, batches: list[pa.RecordBatch]) -> list[dict]:
    out = pa.Table.from_batches(list(task(iter(batches))), schema=OUT)
    return sorted(out.to_pylist(), key=lambda r: (r["p"], r["k"]))


def test_partitions_of_one_task_run_separately_and_conform_to_the_schema() -> None:
    kernel = Echo()
    task = KernelTask(kernel, pa.schema([]), OUT)
    got = run(
        task,
        [
            batch([3, 1, 3], [30, None, 31], [False, True, False]),
            batch([1, 3, 1], [10, None, 11], [False, True, False]),
        ],
    )
    assert sorted(kernel.calls) == [1, 3]
    assert got == [{"p": 1, "k": 10}, {"p": 1, "k": 11}, {"p": 3, "k": 30}, {"p": 3, "k": 31}]


def test_a_partition_with_only_its_marker_still_runs() -> None:
    kernel = Echo()
    run(KernelTask(kernel, pa.schema([]), OUT), [batch([2], [None], [True])])
    assert kernel.calls == [2]


def test_a_partition_split_among_tasks_is_an_error_naming_the_settings() -> None:
    task = KernelTask(Echo(), pa.schema([]), OUT)
    with pytest.raises(ConfigError, match=r"partitions \[4\].*spark.sql.adaptive.enabled"):
        run(task, [batch([2, 4, 4], [None, 40, 41], [True, False, False])])


def test_no_rows_no_output() -> None:
    assert run(KernelTask(Echo(), pa.schema([]), OUT), []) == []


@given(
    runs=hs.lists(hs.tuples(hs.integers(0, 4), hs.integers(1, 5)), min_size=1, max_size=8),
    marks=hs.lists(hs.booleans(), min_size=40, max_size=40),
)
def test_split_partitions_equals_grouping(runs, marks):
    """Per partition, in partition order, its unmarked rows in arrival order — whether
    partitions arrive one after another (sliced, no copy) or interleaved (taken)."""
    from sealtime.arrangement.task import split_partitions

    part = np.array([p for p, n in runs for _ in range(n)])
    marked = np.array(marks[: len(part)], bool)
    table = pa.table({"i": np.arange(len(part))})
    got = [(p, rows["i"].to_pylist()) for p, rows in split_partitions(table, part, marked)]
    want = [
        (p, [i for i in range(len(part)) if part[i] == p and not marked[i]])
        for p in sorted(set(part.tolist()))
    ]
    assert got == want
