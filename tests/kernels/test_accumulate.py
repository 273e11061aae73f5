"""The accumulable-aggregate kernel against a brute-force definition, over several ticks
through a real spine partition (state read back from runs, merges included)."""

from __future__ import annotations

import tempfile
from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as hs

from sealtime.arrangement.partition import SpinePartition
from sealtime.kernels.accumulate import AccumulateSpec, Agg, accumulate, empty_state

KEYS = ["a", "b", "c", None, "dd"]


def weak_hash(k):
    # Few hash values: distinct keys collide all the time (the exact path must hold).
    return 0 if k is None else len(k) % 2


@hs.composite
def workload(draw, monotonic):
    """Ticks of (key, time, diff, x); retractions only remove earlier insertions."""
    ticks, live, t0 = [], [], 0
    for _ in range(draw(hs.integers(1, 5))):
        rows = []
        span = draw(hs.integers(1, 4))
        for _ in range(draw(hs.integers(0, 8))):
            t = t0 + draw(hs.integers(0, span - 1))
            if live and not monotonic and draw(hs.booleans()):
                k, x, t_in = live.pop(draw(hs.integers(0, len(live) - 1)))
                rows.append((k, max(t, t_in), -1, x))
            else:
                k = draw(hs.sampled_from(KEYS))
                x = draw(hs.one_of(hs.none(), hs.integers(-5, 5)))
                rows.append((k, t, 1, x))
                live.append((k, x, t))
        ticks.append(rows)
        t0 += span
    return ticks


def run(ticks, spec, hash_fn):
    d = tempfile.mkdtemp()
    outputs = []
    for version, rows in enumerate(ticks, start=1):
        part = SpinePartition(d, version, spec.keys, "upsert", empty=empty_state(spec))
        delta = pa.table(
            {
                "__h": pa.array([hash_fn(r[0]) for r in rows], pa.int64()),
                "k": pa.array([r[0] for r in rows], pa.string()),
                "_time": pa.array([r[1] for r in rows], pa.int64()),
                "_diff": pa.array([r[2] for r in rows], pa.int64()),
                **{
                    a.input: pa.array([r[3] for r in rows], pa.int64())
                    for a in spec.aggs
                    if a.kind != "count"
                },
            }
        )
        out, new_run = accumulate(delta, spec, part.lookup)
        part.write(new_run)
        outputs.append(out)
    return pa.concat_tables(outputs)


def brute(ticks, spec, t):
    rows = [r for tick in ticks for r in tick if r[1] <= t]
    out = Counter()
    for k in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == k]
        n = sum(r[2] for r in mine)
        if n <= 0:
            continue
        row = [k, n] if any(a.kind == "count" for a in spec.aggs) else [k]
        for a in spec.aggs:
            if a.kind == "count":
                continue
            vals = [(r[3], r[2]) for r in mine if r[3] is not None]
            nn = sum(w for _, w in vals)
            if a.kind in ("sum", "avg"):
                s = sum(x * w for x, w in vals)
                row += [s if (nn > 0 or a.kind == "avg") else s, nn if a.kind == "avg" else nn > 0]
            else:
                present = [x for x, w in vals]
                m = (min if a.kind == "min" else max)(present) if present else None
                row += [m, nn > 0]
        out[tuple(row)] += 1
    return out


def accumulated(out, spec, t):
    acc = Counter()
    for r in out.to_pylist():
        if r["_time"] > t:
            continue
        row = [r["k"], r["__rows"]] if any(a.kind == "count" for a in spec.aggs) else [r["k"]]
        for a in spec.aggs:
            if a.kind == "count":
                continue
            if a.kind in ("sum", "avg"):
                nn = r[a.count_column]
                row += [r[a.sum_column], nn if a.kind == "avg" else nn > 0]
            else:
                row += [r[a.value_column], r[a.count_column] > 0]
        acc[tuple(row)] += r["_diff"]
    return Counter({k: v for k, v in acc.items() if v})


SUMS = AccumulateSpec(("k",), (Agg("n", "count"), Agg("s", "sum"), Agg("m", "avg")))
EXTREMES = AccumulateSpec(("k",), (Agg("lo", "min", "value"), Agg("hi", "max", "value")))


@settings(max_examples=300, deadline=None)
@given(ticks=workload(monotonic=False), weak=hs.booleans())
def test_sums_match_brute_force_at_every_time(ticks, weak):
    out = run(ticks, SUMS, weak_hash if weak else lambda k: hash(k) & 0xFFFF)
    for t in range(0, 25):
        assert accumulated(out, SUMS, t) == brute(ticks, SUMS, t), t


@settings(max_examples=300, deadline=None)
@given(ticks=workload(monotonic=True), weak=hs.booleans())
def test_min_max_on_append_only_input(ticks, weak):
    out = run(ticks, EXTREMES, weak_hash if weak else lambda k: hash(k) & 0xFFFF)
    for t in range(0, 25):
        assert accumulated(out, EXTREMES, t) == brute(ticks, EXTREMES, t), t


def test_unchanged_value_emits_nothing():
    spec = AccumulateSpec(("k",), (Agg("s", "sum"),))
    ticks = [[("a", 0, 1, 5), ("a", 1, 1, 0)]]  # the second row leaves sum(x) at 5
    out = run(ticks, spec, lambda k: 1)
    assert sorted(zip(out["_time"].to_pylist(), out["_diff"].to_pylist())) == [(0, 1)]


@settings(max_examples=150, deadline=None)
@given(ticks=workload(monotonic=False), weak=hs.booleans())
def test_update_stream_does_not_depend_on_how_times_are_cut_into_ticks(ticks, weak):
    """One tick per batch of times or all times in one tick (a restart's catch-up): the
    same updates, not only the same accumulations."""
    h = weak_hash if weak else (lambda k: hash(k) & 0xFFFF)

    def stream(out):
        return Counter(repr(sorted(r.items())) for r in out.to_pylist())

    merged = [[r for tick in ticks for r in tick]]
    assert stream(run(ticks, SUMS, h)) == stream(run(merged, SUMS, h))
