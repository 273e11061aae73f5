"""The general reduce kernel against a brute-force definition at every time, over several
ticks through a real additive spine partition, with collisions forced by weak hashes."""

from __future__ import annotations

import datetime
import decimal
import math
import random
import tempfile
import zlib
from collections import Counter
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sealtime.arrangement.partition import SpinePartition
from sealtime.errors import PlanError
from sealtime.kernels.general_reduce import GAgg, ReduceSpec, general_reduce, timeline
from tests.conftest import examples

KEYS = ["a", "b", "c", None, "dd"]
XS = [None, -3, -1, 0, 2, 5]
SS = [None, "", "p", "q", "é", "pq"]
FS = [None, -1.5, 0.0, 2.0, math.nan, math.inf]
BIG = 6 * 10**37  # unscaled: two of them no longer fit decimal(38)
DS = [None, 0, 125, -250, BIG, -BIG]  # unscaled values of decimal(38, 2)
VALUES = ("x", "s", "f", "d")
TYPES = {"x": pa.int64(), "s": pa.string(), "f": pa.float64(), "d": pa.decimal128(38, 2)}

SPEC = ReduceSpec(
    keys=("k",),
    values=VALUES,
    aggs=(
        GAgg("n", "count"),
        GAgg("sx", "sum", "x"),
        GAgg("ax", "avg", "x"),
        GAgg("sd", "sum", "d", "dec", 2),
        GAgg("ad", "avg", "d", "dec", 2),
        *(GAgg(f"{kind}_{c}", kind, c) for kind in ("min", "max") for c in ("x", "s", "f", "d")),
        *(GAgg(f"cd_{c}", "count_distinct", c) for c in ("x", "s", "f")),
    ),
)


def to_dec(unscaled: int | None) -> Decimal | None:
    if unscaled is None:
        return None
    with decimal.localcontext(prec=80):
        return Decimal(unscaled).scaleb(-2)


def unscaled(d: Decimal | None) -> int | None:
    if d is None:
        return None
    with decimal.localcontext(prec=80):
        return int(d.scaleb(2))


def norm(v):
    """NaN never equals itself: compare it as a marker."""
    return "NaN" if isinstance(v, float) and math.isnan(v) else v


def order_key(column: str, v):
    if column == "s":
        return v.encode()
    if column == "f":
        return (math.isnan(v), 0.0 if math.isnan(v) else v)
    return v


@hs.composite
def workload(draw, max_rows=10, max_span=6, valid=True, domains=(XS, SS, FS, DS)):
    """Ticks of (key, (x, s, f, d), time, diff); retractions remove earlier insertions
    (with `valid` False, some retract rows that are not there: counts go negative)."""
    ticks, live, t0 = [], [], 0
    for _ in range(draw(hs.integers(1, 4))):
        rows = []
        span = draw(hs.integers(1, max_span))
        for _ in range(draw(hs.integers(0, max_rows))):
            t = t0 + draw(hs.integers(0, span - 1))
            if live and draw(hs.booleans()):
                k, vals, c, t_in = live.pop(draw(hs.integers(0, len(live) - 1)))
                rows.append((k, vals, max(t, t_in), -c))
            elif not valid and draw(hs.integers(0, 4)) == 0:
                k, vals, _, _ = (
                    draw(hs.sampled_from(live)) if live else ("a", (0, "", 0.0, 0), 0, 0)
                )
                rows.append((k, vals, t, -1))
            else:
                k = draw(hs.sampled_from(KEYS))
                vals = tuple(draw(hs.sampled_from(d)) for d in domains)
                c = draw(hs.sampled_from([1, 1, 1, 2]))
                rows.append((k, vals, t, c))
                live.append((k, vals, c, t))
        ticks.append(rows)
        t0 += span
    return ticks


def crc(v) -> int:
    return zlib.crc32(repr(v).encode())


def hashes(weak: bool):
    if weak:
        return (lambda k: 0 if k is None else len(k) % 2), (lambda row: crc(row) & 3)
    return crc, crc


def delta_table(rows, weak: bool) -> pa.Table:
    key_hash, row_hash = hashes(weak)
    cols = {
        "__h": pa.array([key_hash(r[0]) for r in rows], pa.int64()),
        "k": pa.array([r[0] for r in rows], pa.string()),
    }
    for i, c in enumerate(VALUES):
        vals = [r[1][i] for r in rows]
        cols[c] = pa.array([to_dec(v) for v in vals] if c == "d" else vals, TYPES[c])
    cols["__r"] = pa.array([row_hash((r[0], r[1])) for r in rows], pa.int64())
    cols["_time"] = pa.array([r[2] for r in rows], pa.int64())
    cols["_diff"] = pa.array([r[3] for r in rows], pa.int64())
    cols["extra"] = pa.array([1.0] * len(rows))  # ignored by the kernel
    return pa.table(cols)


def run(ticks, spec, weak: bool, kernel=general_reduce) -> pa.Table:
    d = tempfile.mkdtemp()
    outputs = []
    for version, rows in enumerate(ticks, start=1):
        part = SpinePartition(d, version, ["k"], "additive", columns=["k", *VALUES])
        out, new_run = kernel(delta_table(rows, weak), spec, part.lookup)
        assert new_run.column_names == ["__h", "k", *VALUES, "__r", "__cnt"]
        part.write(new_run)
        outputs.append(out)
    return pa.concat_tables(outputs)


def aggregate(spec: ReduceSpec, items: Counter) -> tuple:
    """The output row (without the key) of one group's present items {values: count}."""
    row = []
    for a in spec.aggs:
        if a.kind == "count":
            row.append(sum(items.values()))
            continue
        i = VALUES.index(a.column)
        vals = [(v[i], c) for v, c in items.items() if v[i] is not None]
        nn = sum(c for _, c in vals)
        if a.kind in ("sum", "avg"):
            s = sum(x * c for x, c in vals) if nn else None
            if s is not None and a.repr == "dec" and abs(s) >= 10**38:
                s = None
            row += [s, nn] if a.kind == "avg" else [s]
        elif a.kind == "count_distinct":
            row.append(len({norm(x) for x, _ in vals}))
        else:
            pick = min if a.kind == "min" else max
            row.append(
                norm(pick((x for x, _ in vals), key=lambda v: order_key(a.column, v)))
                if vals
                else None
            )
    return tuple(row)


def brute(groups: dict, spec: ReduceSpec) -> Counter:
    """The expected output collection from each group's accumulated items."""
    out = Counter()
    for k, items in groups.items():
        present = Counter({v: c for v, c in items.items() if c > 0})
        if present:
            out[(k, *aggregate(spec, present))] += 1
    return out


def out_row(spec: ReduceSpec, r: dict) -> tuple:
    row = [r["k"]]
    for a in spec.aggs:
        for c in a.output_columns():
            v = r[c]
            if (a.column == "d" and a.kind not in ("count", "count_distinct")) and c[:4] != "__n_":
                v = unscaled(v)
            row.append(norm(v))
    return tuple(row)


def check(ticks, spec: ReduceSpec, out: pa.Table) -> None:
    """Accumulated output == brute force at every time where an input changes (both sides
    are constant in between), and the output is minimal."""
    rows = out.to_pylist()
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
            acc[out_row(spec, outputs[j])] += outputs[j]["_diff"]
            j += 1
        assert Counter({k: v for k, v in acc.items() if v}) == brute(groups, spec), t
    assert j == len(outputs)
    # Minimal output: at one time a key has at most one -1 and one +1 row, and they differ.
    per = Counter()
    for r in rows:
        per[(r["k"], r["_time"], r["_diff"])] += 1
        assert r["_diff"] in (-1, 1)
    assert all(n == 1 for n in per.values())
    same = Counter((out_row(spec, r), r["_time"]) for r in rows)
    assert all(n == 1 for n in same.values())


@settings(max_examples=examples(ci=200, dev=60), deadline=None)
@given(ticks=workload(), weak=hs.booleans())
def test_reduce_matches_brute_force_at_every_time(ticks, weak):
    check(ticks, SPEC, run(ticks, SPEC, weak))


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(ticks=workload(max_rows=30, max_span=25), weak=hs.booleans())
def test_many_times_per_key_in_one_tick(ticks, weak):
    spec = ReduceSpec(("k",), VALUES, tuple(a for a in SPEC.aggs if a.kind != "avg"))
    check(ticks, spec, run(ticks, spec, weak))


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(ticks=workload(valid=False), weak=hs.booleans())
def test_rows_with_negative_counts_are_absent(ticks, weak):
    check(ticks, SPEC, run(ticks, SPEC, weak))


def test_long_random_tick_with_thousands_of_times():
    rng = random.Random(7)
    rows, live = [], []
    for _ in range(1500):
        t = rng.randrange(1000)
        if live and rng.random() < 0.4:
            k, vals, c, t_in = live.pop(rng.randrange(len(live)))
            rows.append((k, vals, max(t, t_in), -c))
        else:
            vals = (rng.choice(XS), rng.choice(SS), rng.choice(FS), rng.choice(DS))
            k = rng.choice(KEYS[:2])
            rows.append((k, vals, t, 1))
            live.append((k, vals, 1, t))
    ticks = [rows[:700], rows[700:]]  # a state from the first tick, then many times
    ticks[1] = [(k, v, max(t, 1000), d) for k, v, t, d in ticks[1]]
    check(ticks, SPEC, run(ticks, SPEC, weak=True))


def dec_delta(values, times, diffs):
    n = len(values)
    return pa.table(
        {
            "__h": pa.array([1] * n, pa.int64()),
            "k": pa.array(["g"] * n),
            "d": pa.array(
                [None if v is None else Decimal(v) for v in values], pa.decimal128(38, 0)
            ),
            "__r": pa.array([0 if v is None else v % 1000 for v in values], pa.int64()),
            "_time": pa.array(times, pa.int64()),
            "_diff": pa.array(diffs, pa.int64()),
        }
    )


def test_decimal_sums_are_exact_past_128_bits():
    # (10**38 - 1) * 2**62 needs about 188 bits; then one copy is left, and so on.
    spec = ReduceSpec(("k",), ("d",), (GAgg("s", "sum", "d", "dec", 0),))
    top, ten = 10**38 - 1, 10**37
    out, _ = general_reduce(
        dec_delta([top, top, -ten, -ten], [1, 2, 3, 4], [2**62, 1 - 2**62, 100, -95]),
        spec,
        lambda q: None,
    )
    got = sorted(zip(out["_time"].to_pylist(), out["_diff"].to_pylist(), out["s"].to_pylist()))
    assert got == [
        (1, 1, None),
        (2, -1, None),
        (2, 1, Decimal(top)),
        (3, -1, Decimal(top)),
        (3, 1, None),
        (4, -1, None),
        (4, 1, Decimal(top - 5 * ten)),
    ]


def test_decimal_overflow_and_return():
    spec = ReduceSpec(("k",), ("d",), (GAgg("s", "sum", "d", "dec", 0), GAgg("n", "count")))
    big = 6 * 10**37
    out, _ = general_reduce(
        dec_delta([big, big, big, -big], [1, 2, 3, 4], [1, 1, -1, 1]), spec, lambda q: None
    )
    rows = sorted(zip(out["_time"].to_pylist(), out["_diff"].to_pylist(), out["s"].to_pylist()))
    assert rows == [
        (1, 1, Decimal(big)),
        (2, -1, Decimal(big)),
        (2, 1, None),  # 1.2e38 does not fit decimal(38)
        (3, -1, None),
        (3, 1, Decimal(big)),
        (4, -1, Decimal(big)),
        (4, 1, Decimal(0)),
    ]


def test_empty_delta_and_unchanged_rows():
    out, run_ = general_reduce(delta_table([], False), SPEC, lambda q: None)
    assert out.num_rows == 0 and run_.num_rows == 0
    assert out.column_names[:2] == ["k", "n"]
    # x = 0 leaves sum(x) unchanged; count is not asked for: nothing to emit at time 1
    spec = ReduceSpec(("k",), VALUES, (GAgg("s", "sum", "x"), GAgg("m", "max", "x")))
    rows = [("a", (2, None, None, None), 0, 1), ("a", (0, None, None, None), 1, 1)]
    out, _ = general_reduce(delta_table(rows, False), spec, lambda q: None)
    assert out["_time"].to_pylist() == [0]


def test_insert_and_retract_at_one_time_emit_nothing():
    rows = [("a", (1, "p", 1.0, 5), 3, 1), ("a", (1, "p", 1.0, 5), 3, -1)]
    out, run_ = general_reduce(delta_table(rows, True), SPEC, lambda q: None)
    assert out.num_rows == 0 and run_.num_rows == 0


def test_invalid_specs_are_rejected():
    d = delta_table([], False)
    with pytest.raises(PlanError, match="kind"):
        general_reduce(d, ReduceSpec(("k",), ("x",), (GAgg("m", "median", "x"),)), None)
    with pytest.raises(PlanError, match="not a value column"):
        general_reduce(d, ReduceSpec(("k",), ("x",), (GAgg("m", "min", "s"),)), None)
    with pytest.raises(PlanError, match="key columns"):
        timeline(d, ["k"], ["k"], None)


def test_timeline_slots_and_events():
    rows = [
        ("a", (1, None, None, None), 7, 1),
        ("b", (1, None, None, None), 5, 1),
        ("a", (1, None, None, None), 9, 1),
        ("a", (2, None, None, None), 7, 1),
    ]
    tl = timeline(delta_table(rows, False), ["k"], VALUES, lambda q: None)
    assert sorted(tl.n_slots.tolist()) == [2, 3]
    assert sorted(tl.slot_time[~tl.base_slots()].tolist()) == [5, 7, 9]
    assert np.all(np.diff(tl.offsets) > 0)
    assert sorted(tl.ev_new.tolist()) == [1, 1, 1, 2]


@pytest.mark.parametrize(
    "arrow_type, domain",
    [
        (pa.date32(), [datetime.date(2024, 1, d) for d in (1, 5, 9)]),
        (pa.timestamp("us"), [datetime.datetime(2024, 1, 1, h) for h in (0, 7, 23)]),
        (pa.bool_(), [False, True]),
        (pa.binary(), [b"", b"\x00", b"\xff", b"a"]),
        (pa.float32(), [-2.5, 0.5, math.inf, math.nan]),
        (pa.decimal128(10, 3), [Decimal("-1.250"), Decimal("0.001"), Decimal("7.000")]),
    ],
)
def test_min_max_count_distinct_of_other_types(arrow_type, domain):
    rng = random.Random(3)
    rows, live = [], []
    for _ in range(60):
        t = rng.randrange(30)
        if live and rng.random() < 0.4:
            k, v, t_in = live.pop(rng.randrange(len(live)))
            rows.append((k, v, max(t, t_in), -1))
        else:
            k, v = rng.choice([None, (1, None), (None, 1), (1, 1)]), rng.choice([None, *domain])
            rows.append((k, v, t, 1))
            live.append((k, v, t))
    spec = ReduceSpec(
        ("k1", "k2"),
        ("v",),
        (GAgg("lo", "min", "v"), GAgg("hi", "max", "v"), GAgg("cd", "count_distinct", "v")),
    )
    keys = [(None, None) if r[0] is None else r[0] for r in rows]
    delta = pa.table(
        {
            "__h": pa.array([0] * len(rows), pa.int64()),  # every key collides
            "k1": pa.array([k[0] for k in keys], pa.int64()),
            "k2": pa.array([k[1] for k in keys], pa.int64()),
            "v": pa.array([r[1] for r in rows], arrow_type),
            "__r": pa.array([crc((k, r[1])) & 1 for k, r in zip(keys, rows)], pa.int64()),
            "_time": pa.array([r[2] for r in rows], pa.int64()),
            "_diff": pa.array([r[3] for r in rows], pa.int64()),
        }
    )
    out, _ = general_reduce(delta, spec, lambda q: None)
    got = out.to_pylist()

    def sort_key(v):
        return (math.isnan(v), 0.0) if isinstance(v, float) and math.isnan(v) else (False, v)

    for t in range(30):
        items = Counter()
        for k, r in zip(keys, rows):
            if r[2] <= t:
                items[(k, r[1])] += r[3]
        expected = Counter()
        for k in {k for (k, _), c in items.items() if c > 0}:
            vs = [v for (kk, v), c in items.items() if kk == k and c > 0 and v is not None]
            lo = norm(min(vs, key=sort_key)) if vs else None
            hi = norm(max(vs, key=sort_key)) if vs else None
            expected[(*k, lo, hi, len({norm(v) for v in vs}))] += 1
        acc = Counter()
        for r in got:
            if r["_time"] <= t:
                acc[(r["k1"], r["k2"], norm(r["lo"]), norm(r["hi"]), r["cd"])] += r["_diff"]
        assert Counter({k: v for k, v in acc.items() if v}) == expected, t


def update_stream(out: pa.Table) -> Counter:
    """The output as a multiset of whole update rows (not consolidated; NaN-safe)."""
    return Counter(repr(sorted(r.items())) for r in out.to_pylist())


def one_tick(ticks) -> list:
    """The same updates with every time in one tick (as a restart's catch-up runs them)."""
    return [[r for tick in ticks for r in tick]]


@settings(max_examples=examples(ci=100, dev=30), deadline=None)
@given(ticks=workload(max_rows=12, max_span=8), weak=hs.booleans())
def test_update_stream_does_not_depend_on_how_times_are_cut_into_ticks(ticks, weak):
    assert update_stream(run(ticks, SPEC, weak)) == update_stream(run(one_tick(ticks), SPEC, weak))
