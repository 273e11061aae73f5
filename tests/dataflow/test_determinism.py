"""Determinism: the same input gives the same (row, time, diff) updates whatever the
shuffle partitions, the number of times per tick, or the arrival order of rows."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as hs

import sealtime as st
from sealtime.sources.rows import Rows
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W


def pipeline(flow, left: Rows, right: Rows):
    a = flow.source("a", left)
    b = flow.source("b", right)
    key = ["ex", "k"]
    j = a.join(b, on=key, how="left")
    agg = j.aggregate(by=key, n=st.count(), s=st.sum("v"), hi=st.max("w"))
    top = a.top_k(by=key, order_by="-v", k=2)
    win = a.window(st.Sliding(4, 2)).aggregate(by=key, n=st.count(), lo=st.min("v"))
    return [j, agg, top, win, a.distinct()]


def run(make_flow, items_a, items_b, tpt, partitions):
    flow = make_flow(shuffle_partitions=partitions)
    outs = pipeline(
        flow, Rows(W.KV, items_a, times_per_tick=tpt), Rows(W.KW, items_b, times_per_tick=tpt)
    )
    flow.run()
    return [_rows(o.updates()) for o in outs]


def _rows(table):
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@spark_settings(examples(ci=2, dev=1, default=1))
@given(
    items_a=W.batch_items(workloads=10, max_time=6),
    items_b=W.batch_items(workloads=10, value="w", max_time=6),
    seed=hs.integers(0, 2**16),
)
def test_partitions_tick_size_and_arrival_order(make_flow, items_a, items_b, seed):
    base = run(make_flow, items_a, items_b, tpt=1, partitions=1)
    rng = random.Random(seed)
    shuffled_a, shuffled_b = items_a[:], items_b[:]
    rng.shuffle(shuffled_a)
    rng.shuffle(shuffled_b)
    assert run(make_flow, shuffled_a, shuffled_b, tpt=100, partitions=4) == base
    assert run(make_flow, items_a, items_b, tpt=3, partitions=3) == base
