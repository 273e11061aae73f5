"""The top-k kernel against a brute-force top-k at every time, over several ticks through
a real additive spine partition, with collisions forced by weak hashes."""

from __future__ import annotations

import math
import random
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sealtime.errors import PlanError
from sealtime.kernels.differential_top_k import TopKSpec, top_k_step
from tests.conftest import examples
from tests.kernels.test_general_reduce import (
    DS,
    FS,
    KEYS,
    SS,
    VALUES,
    XS,
    delta_table,
    hashes,
    norm,
    one_tick,
    order_key,
    run,
    update_stream,
    workload,
)

ORDERS = [
    (("x", False),),
    (("s", True), ("x", False)),
    (("f", False),),
    (("f", True), ("s", False)),
    (("d", True),),
]
TIES = [(), ("s",), ("x", "f")]


def sort_items(items: list, spec: TopKSpec, weak: bool) -> list:
    """Items (key, values) in the kernel's total order, by stable sorts from the least
    significant key: values, row hash, tie columns, order columns."""
    _, row_hash = hashes(weak)

    def asc(columns):
        idx = [VALUES.index(c) for c in columns]
        return lambda it: [
            (it[1][i] is not None, order_key(c, it[1][i]) if it[1][i] is not None else 0)
            for i, c in zip(idx, columns)
        ]

    items = sorted(items, key=asc(VALUES))
    items = sorted(items, key=row_hash)
    items = sorted(items, key=asc(spec.tie))
    for column, ascending in reversed(spec.order):
        items = sorted(items, key=asc([column]), reverse=not ascending)
    return items


def brute(groups: dict, spec: TopKSpec, weak: bool) -> Counter:
    out = Counter()
    for k, items in groups.items():
        present = [(k, v) for v, c in items.items() if c > 0]
        taken = 0
        for item in sort_items(present, spec, weak):
            if taken == spec.k:
                break
            n = min(items[item[1]], spec.k - taken)
            out[(k, *map(norm, item[1]))] += n
            taken += n
    return out


def row(r: dict) -> tuple:
    return (r["k"], *(norm(r[c]) for c in VALUES))


def check(ticks, spec: TopKSpec, out: pa.Table, weak: bool) -> None:
    """Accumulated output == brute force at every input time; one row per (row, time)."""
    rows = [{**r, "d": None if r["d"] is None else int(r["d"].scaleb(2))} for r in out.to_pylist()]
    inputs = sorted((r for tick in ticks for r in tick), key=lambda r: r[2])
    outputs = sorted(rows, key=lambda r: r["_time"])
    groups: dict = {}
    acc = Counter()
    i = j = 0
    for t in sorted({r[2] for r in inputs}):
        while i < len(inputs) and inputs[i][2] <= t:
            k, vals, _, diff = inputs[i]
            groups.setdefault(k, Counter())[vals] += diff
            i += 1
        while j < len(outputs) and outputs[j]["_time"] <= t:
            acc[row(outputs[j])] += outputs[j]["_diff"]
            j += 1
        assert Counter({k: v for k, v in acc.items() if v}) == brute(groups, spec, weak), t
    assert j == len(outputs)
    assert all(r["_diff"] != 0 for r in rows)
    assert all(n == 1 for n in Counter((row(r), r["_time"]) for r in rows).values())


def spec_of(order, tie, k) -> TopKSpec:
    return TopKSpec(keys=("k",), values=VALUES, order=order, tie=tie, k=k)


@settings(max_examples=examples(ci=200, dev=60), deadline=None)
@given(
    ticks=workload(),
    weak=hs.booleans(),
    order=hs.sampled_from(ORDERS),
    tie=hs.sampled_from(TIES),
    k=hs.integers(1, 4),
)
def test_top_k_matches_brute_force_at_every_time(ticks, weak, order, tie, k):
    spec = spec_of(order, tie, k)
    check(ticks, spec, run(ticks, spec, weak, kernel=top_k_step), weak)


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(
    ticks=workload(max_rows=30, max_span=25),
    weak=hs.booleans(),
    order=hs.sampled_from(ORDERS),
    k=hs.integers(1, 4),
)
def test_top_k_with_many_times_per_key(ticks, weak, order, k):
    spec = spec_of(order, ("s",), k)
    check(ticks, spec, run(ticks, spec, weak, kernel=top_k_step), weak)


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(
    ticks=workload(max_rows=14, domains=([None, 1], [None, "p"], [None, 1.5, math.nan], [0, 5])),
    weak=hs.booleans(),
    order=hs.sampled_from(ORDERS),
    tie=hs.sampled_from(TIES),
    k=hs.integers(1, 4),
)
def test_ties_on_order_columns(ticks, weak, order, tie, k):
    # Few values: rows often agree on the order columns and the tie columns decide.
    spec = spec_of(order, tie, k)
    check(ticks, spec, run(ticks, spec, weak, kernel=top_k_step), weak)


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(ticks=workload(valid=False), weak=hs.booleans(), k=hs.integers(1, 4))
def test_rows_with_negative_counts_are_absent(ticks, weak, k):
    spec = spec_of(ORDERS[1], (), k)
    check(ticks, spec, run(ticks, spec, weak, kernel=top_k_step), weak)


def test_long_random_tick_with_thousands_of_times():
    rng = random.Random(11)
    rows, live = [], []
    for _ in range(1500):
        t = rng.randrange(1000)
        if live and rng.random() < 0.4:
            k, vals, c, t_in = live.pop(rng.randrange(len(live)))
            rows.append((k, vals, max(t, t_in), -c))
        else:
            vals = (rng.choice(XS), rng.choice(SS), rng.choice(FS), rng.choice(DS))
            k = rng.choice(KEYS[:2])
            c = rng.choice([1, 2, 3])
            rows.append((k, vals, t, c))
            live.append((k, vals, c, t))
    ticks = [rows[:700], [(k, v, max(t, 1000), d) for k, v, t, d in rows[700:]]]
    for k in (1, 3):
        spec = spec_of(ORDERS[1], ("f",), k)
        check(ticks, spec, run(ticks, spec, True, kernel=top_k_step), True)


def test_multiplicity_and_ties():
    # 3 copies of x=4, then x=7 arrives: with k=2 the copies of 4 leave the top, one by one.
    spec = spec_of((("x", False),), (), 2)
    rows = [
        ("a", (4, None, None, None), 1, 3),
        ("a", (7, None, None, None), 2, 1),
        ("a", (9, None, None, None), 3, 1),
        ("a", (9, None, None, None), 4, -1),
    ]
    out, new_run = top_k_step(delta_table(rows, False), spec, lambda q: None)
    got = sorted(zip(out["_time"].to_pylist(), out["x"].to_pylist(), out["_diff"].to_pylist()))
    assert got == [(1, 4, 2), (2, 4, -1), (2, 7, 1), (3, 4, -1), (3, 9, 1), (4, 4, 1), (4, 9, -1)]
    assert sorted(zip(new_run["x"].to_pylist(), new_run["__cnt"].to_pylist())) == [(4, 3), (7, 1)]


def test_invalid_specs_are_rejected():
    d = delta_table([], False)
    with pytest.raises(PlanError, match="k must be"):
        top_k_step(d, spec_of(ORDERS[0], (), 0), None)
    with pytest.raises(PlanError, match="not a value column"):
        top_k_step(d, spec_of((("zz", True),), (), 1), None)
    out, new_run = top_k_step(d, spec_of(ORDERS[0], (), 2), None)
    assert out.num_rows == 0 and new_run.num_rows == 0
    assert out.column_names == ["k", *VALUES, "_time", "_diff"]


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(
    ticks=workload(max_rows=12, max_span=8),
    weak=hs.booleans(),
    order=hs.sampled_from(ORDERS),
    k=hs.integers(1, 3),
)
def test_update_stream_does_not_depend_on_how_times_are_cut_into_ticks(ticks, weak, order, k):
    spec = spec_of(order, ("s",), k)
    split = run(ticks, spec, weak, kernel=top_k_step)
    merged = run(one_tick(ticks), spec, weak, kernel=top_k_step)
    assert update_stream(split) == update_stream(merged)
