"""Arrangement runs on every kind of filesystem a data dir can be on (issue 11).

Runs are read and written through the partition's `DataFS`: memory-mapped on a local
disk, read into memory through `pyarrow.fs` elsewhere. The same workload must leave the
same state and produce the same outputs on a local path, on a non-local pyarrow
filesystem without network (a `SubTreeFileSystem`) and on S3 (moto on loopback), and a
step must reach its runs after being pickled (as Spark ships it to an executor).
"""

from __future__ import annotations

import pickle
import random
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from sealtime.arrangement.arrangement import Arrangement
from sealtime.arrangement.partition import SpinePartition
from sealtime.arrangement.runs import (
    ROWS_KEY,
    live_spine,
    partition_fs,
    read_run,
    run_rows,
    spine_name,
    write_run,
)
from sealtime.arrangement.steps import AccumulateStep
from sealtime.kernels.accumulate import AccumulateSpec, Agg
from sealtime.storage.fs import DataFS, register_filesystem, unregister_filesystem

SPEC = AccumulateSpec(("k",), (Agg("n", "count"), Agg("s", "sum")))


@pytest.fixture(params=["local", "subtree", "s3"])
def root(request, tmp_path) -> DataFS:
    """An arrangement root on one kind of filesystem."""
    if request.param == "local":
        yield DataFS.from_uri(str(tmp_path / "arr"))
    elif request.param == "subtree":
        prefix = f"sub://arr{uuid.uuid4().hex[:8]}"
        register_filesystem(
            prefix, pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), root=""
        )
        yield DataFS.from_uri(prefix + "/arr")
        unregister_filesystem(prefix)
    else:
        bucket = request.getfixturevalue("s3_server")["bucket"]
        d = DataFS.from_uri(f"s3a://{bucket}/arr-{uuid.uuid4().hex[:8]}")
        yield d
        d.delete_dir()


def delta(rng: random.Random, keys: int, n: int) -> pa.Table:
    """A tick's input to an accumulable reduce: (key, +/-1, value), sorted by key hash."""
    ks = sorted(rng.randrange(keys) for _ in range(n))
    return pa.table(
        {
            "__h": pa.array([k * 7919 % 1000 for k in ks], pa.int64()),
            "k": pa.array(ks, pa.int64()),
            "_time": pa.array([1] * n, pa.int64()),
            "_diff": pa.array([1 if rng.random() < 0.8 else -1 for _ in ks], pa.int64()),
            "__x_s": pa.array([rng.randrange(100) for _ in ks], pa.int64()),
        }
    ).sort_by("__h")


def run_ticks(root: DataFS, ticks: int = 12, seed: int = 3) -> tuple[list[list], list]:
    """Drive an `Arrangement` of 2 partitions through `ticks` steps of an accumulable
    reduce, each step pickled first; return the outputs and the final state."""
    rng = random.Random(seed)
    arr = Arrangement(root.location, partitions=2)
    outs = []
    for _ in range(ticks):
        version = arr.advance()
        step = pickle.loads(pickle.dumps(AccumulateStep(SPEC, arr.fs, version)))
        tick = []
        for p in range(2):
            out = step.run(delta(rng, 40, 30), p)
            tick.append(sorted(out.to_pylist(), key=repr))
        outs.append(tick)
        arr.finish_tick()
    state = []
    for p in range(2):
        scan = SpinePartition(partition_fs(arr.fs, p), arr.version + 1, ["k"], "upsert").scan()
        state.append(sorted(scan.to_pylist(), key=repr) if scan is not None else [])
    return outs, state


def test_the_same_steps_give_the_same_outputs_and_state_on_every_filesystem(root, tmp_path):
    expected = run_ticks(DataFS.from_uri(str(tmp_path / "reference")))
    assert expected[0][-1] != [[], []]  # the workload produced output
    assert run_ticks(root) == expected
    # Garbage collection went through the same layer: few live runs, nothing else left.
    arr = Arrangement(root.location, partitions=2)
    for p in range(2):
        d = partition_fs(arr.fs, p)
        live = {r.name for r in live_spine(d, 12)}
        assert set(d.names()) == live and len(live) <= (12).bit_length() + 1


def test_write_read_and_count_a_run(root):
    d = partition_fs(root, 0)
    table = pa.table({"__h": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
    write_run(d, spine_name(1, 1), table)
    write_run(d, spine_name(1, 1), table)  # a re-executed task replaces it
    assert d.names() == [spine_name(1, 1)]  # no temporary file left behind
    assert read_run(d, spine_name(1, 1)).equals(table)
    assert run_rows(d, spine_name(1, 1)) == 3
    with d.open_input_file(spine_name(1, 1)) as f:
        assert pa.ipc.open_file(f).metadata[ROWS_KEY.encode()] == b"3"


def test_a_run_without_its_row_count_is_still_counted(root):
    """Runs written before the footer carried the count (older data dirs) still resume."""
    sink = pa.BufferOutputStream()
    table = pa.table({"__h": pa.array([5, 6], pa.int64())})
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    d = partition_fs(root, 1)
    d.write_bytes(spine_name(1, 1), sink.getvalue().to_pybytes())
    assert run_rows(d, spine_name(1, 1)) == 2


def test_restore_removes_newer_runs_on_every_filesystem(root):
    arr = Arrangement(root.location, partitions=1)
    for _ in range(3):
        step = AccumulateStep(SPEC, arr.fs, arr.advance())
        step.run(delta(random.Random(arr.version), 10, 5), 0)
        arr.finish_tick()
        if arr.version == 2:
            arr.pin()  # a checkpoint at version 2 keeps its runs through later merges
    arr.restore({"version": 2, "partitions": 1})
    d = partition_fs(arr.fs, 0)
    assert [(r.first, r.last) for r in live_spine(d, 2)][-1][1] == 2
    assert all(not n.endswith("0000000003.arrow") for n in d.names())
