"""Spine partitions: what readers see at each version, how merges amortise, and what
restore and garbage collection keep."""

from __future__ import annotations

import os
import tempfile
from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as hs

from sealtime.arrangement.arrangement import Arrangement
from sealtime.arrangement.partition import SpinePartition
from sealtime.arrangement.runs import live_spine, parse_spine, partition_dir
from tests.conftest import examples


def rows(keys, counts):
    order = np.argsort(np.array([hash(k) & 0xFFFF for k in keys], np.int64), kind="stable")
    keys = [keys[i] for i in order]
    counts = [counts[i] for i in order]
    return pa.table(
        {
            "__h": pa.array([hash(k) & 0xFFFF for k in keys], pa.int64()),
            "k": pa.array(keys, pa.string()),
            "__r": pa.array([0] * len(keys), pa.int64()),
            "__cnt": pa.array(counts, pa.int64()),
        }
    )


@settings(max_examples=examples(ci=150, dev=40), deadline=None)
@given(
    writes=hs.lists(
        hs.lists(hs.tuples(hs.sampled_from("abcdefgh"), hs.integers(-2, 3)), max_size=12),
        min_size=1,
        max_size=24,
    )
)
def test_additive_partition_holds_the_sum_of_all_writes(writes):
    d = tempfile.mkdtemp()
    truth: Counter = Counter()
    rewritten = 0
    for version, batch in enumerate(writes, start=1):
        merged: Counter = Counter()
        for k, c in batch:
            merged[k] += c
        merged = Counter({k: c for k, c in merged.items() if c})
        part = SpinePartition(d, version, ["k"], "additive")
        path = part.write(rows(list(merged), list(merged.values())))
        first, last = parse_spine(os.path.basename(path))
        rewritten += last - first  # versions folded into this run
        truth.update(merged)
        truth = Counter({k: c for k, c in truth.items() if c})
        got = SpinePartition(d, version + 1, ["k"], "additive").scan()
        seen = (
            Counter()
            if got is None
            else Counter(dict(zip(got.column("k").to_pylist(), got.column("__cnt").to_pylist())))
        )
        assert Counter({k: c for k, c in seen.items() if c}) == truth
        live = live_spine(d, version)
        # A binary counter on sizes: few live runs whatever the number of versions.
        assert len(live) <= version.bit_length() + 1


def test_readers_ignore_runs_written_after_their_version():
    d = tempfile.mkdtemp()
    SpinePartition(d, 1, ["k"], "additive").write(rows(["a"], [1]))
    SpinePartition(d, 2, ["k"], "additive").write(rows(["a"], [1]))
    # A task re-executed for version 2 reads version 1 only.
    again = SpinePartition(d, 2, ["k"], "additive").scan()
    assert again.column("__cnt").to_pylist() == [1]


def test_restore_removes_newer_runs_and_gc_keeps_the_checkpoint():
    root = tempfile.mkdtemp()
    arr = Arrangement(root, partitions=1)
    d = partition_dir(root, 0)
    for _ in range(3):
        v = arr.advance()
        SpinePartition(d, v, ["k"], "additive").write(rows(["a", "b"], [1, 1]))
        arr.finish_tick()
        if v == 2:
            arr.pin()  # a checkpoint at version 2
    assert arr.state()["version"] == 3
    arr.restore({"version": 2, "partitions": 1})
    live = live_spine(d, 2)
    assert [(r.first, r.last) for r in live] and all(r.last <= 2 for r in live)
    assert all(parse_spine(n)[1] <= 2 for n in os.listdir(d))
    got = SpinePartition(d, 3, ["k"], "additive").scan()
    assert dict(zip(got["k"].to_pylist(), got["__cnt"].to_pylist())) == {"a": 2, "b": 2}


def test_partition_count_change_is_refused_with_the_fix():
    arr = Arrangement(tempfile.mkdtemp(), partitions=3)
    try:
        arr.restore({"version": 4, "partitions": 8})
    except ValueError as exc:
        assert "shuffle_partitions=8" in str(exc)
    else:
        raise AssertionError("a different partition count must be refused")
