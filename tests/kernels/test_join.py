"""The join kernel against a brute-force join, over several ticks through real
additive spine partitions, with collisions forced by a weak hash."""

from __future__ import annotations

import tempfile
from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as hs

from sealtime.arrangement.partition import SpinePartition
from sealtime.kernels.join import JoinSpec, join_step
from tests.conftest import examples

SPEC = JoinSpec(keys=("k",), left=("a",), right=("b",))
KEYS = ["x", "y", "zz", None]


@hs.composite
def ticks(draw):
    out, live, t0 = [], [], 0
    for _ in range(draw(hs.integers(1, 5))):
        rows = []
        span = draw(hs.integers(1, 3))
        for _ in range(draw(hs.integers(0, 7))):
            t = t0 + draw(hs.integers(0, span - 1))
            if live and draw(hs.booleans()):
                side, k, v, t_in = live.pop(draw(hs.integers(0, len(live) - 1)))
                rows.append((side, k, v, max(t, t_in), -1))
            else:
                side = draw(hs.integers(0, 1))
                k = draw(hs.sampled_from(KEYS))
                v = draw(hs.integers(0, 3))
                rows.append((side, k, v, t, 1))
                live.append((side, k, v, t))
        out.append(rows)
        t0 += span
    return out


def run(all_ticks, hash_fn):
    dirs = [tempfile.mkdtemp(), tempfile.mkdtemp()]
    outputs = []
    for version, rows in enumerate(all_ticks, start=1):
        parts = [SpinePartition(d, version, ["k"], "additive") for d in dirs]
        delta = pa.table(
            {
                "__side": pa.array([r[0] for r in rows], pa.int8()),
                "__h": pa.array([hash_fn(r[1]) for r in rows], pa.int64()),
                "__r": pa.array([hash((r[1], r[2])) & 0xFF for r in rows], pa.int64()),
                "k": pa.array([r[1] for r in rows], pa.string()),
                "a": pa.array([r[2] if r[0] == 0 else None for r in rows], pa.int64()),
                "b": pa.array([r[2] if r[0] == 1 else None for r in rows], pa.int64()),
                "_time": pa.array([r[3] for r in rows], pa.int64()),
                "_diff": pa.array([r[4] for r in rows], pa.int64()),
            }
        )
        out, runs = join_step(delta, SPEC, lambda side, q, parts=parts: parts[side].lookup(q))
        for part, new in zip(parts, runs):
            part.write(new)
        outputs.append(out)
    return pa.concat_tables(outputs)


def brute(all_ticks, t):
    rows = [r for tick in all_ticks for r in tick if r[3] <= t]
    sides = [Counter(), Counter()]
    for side, k, v, _, d in rows:
        sides[side][(k, v)] += d
    out = Counter()
    for (ka, a), ca in sides[0].items():
        for (kb, b), cb in sides[1].items():
            if ka == kb and ka is not None and ca and cb:
                out[(ka, a, b)] += ca * cb
    return Counter({k: v for k, v in out.items() if v})


def accumulated(out, t):
    acc = Counter()
    for r in out.to_pylist():
        if r["_time"] <= t:
            acc[(r["k"], r["a"], r["b"])] += r["_diff"]
    return Counter({k: v for k, v in acc.items() if v})


@settings(max_examples=examples(ci=300, dev=100), deadline=None)
@given(all_ticks=ticks(), weak=hs.booleans())
def test_join_matches_brute_force_at_every_time(all_ticks, weak):
    def hash_fn(k):
        if weak:
            return 0 if k is None else len(k) % 2
        return hash(k) & 0xFFFFFF

    out = run(all_ticks, hash_fn)
    for t in range(0, 16):
        assert accumulated(out, t) == brute(all_ticks, t), t


def stream(out) -> Counter:
    """The output as a multiset of (row, time, diff): not consolidated."""
    return Counter((r["k"], r["a"], r["b"], r["_time"], r["_diff"]) for r in out.to_pylist())


def canonical(all_ticks) -> Counter:
    """The one stream of differences: per time, the change of the brute-force join."""
    out: Counter = Counter()
    before: Counter = Counter()
    for t in range(0, 16):
        now = brute(all_ticks, t)
        for row in set(now) | set(before):
            if now[row] != before[row]:
                out[(*row, t, now[row] - before[row])] += 1
        before = now
    return out


@settings(max_examples=examples(ci=200, dev=60), deadline=None)
@given(all_ticks=ticks(), weak=hs.booleans())
def test_join_output_is_the_same_stream_however_times_are_cut_into_ticks(all_ticks, weak):
    """The kernel consolidates its output per (row, time), so the update stream (not
    only its accumulation) is the canonical one: one tick per logged tick, all of them
    in one tick (a restart catching up), and the brute-force differences agree."""

    def hash_fn(k):
        if weak:
            return 0 if k is None else len(k) % 2
        return hash(k) & 0xFFFFFF

    want = canonical(all_ticks)
    assert stream(run(all_ticks, hash_fn)) == want
    merged = [[r for tick in all_ticks for r in tick]]
    assert stream(run(merged, hash_fn)) == want


def _consolidate_reference(rows: pa.Table, columns: list[str], with_time: bool) -> list:
    """The definition: equal (row[, time]) — by value — become one row with the sum of
    their ``_diff``; zero sums go. (As a sorted list of rows: the kernel's order is
    checked separately.)"""
    keep = [c for c in rows.column_names if c != "_diff"]
    if not with_time:
        keep = [c for c in keep if c != "_time"]
    sums: dict[tuple, int] = {}
    firsts: dict[tuple, dict] = {}
    for row in rows.to_pylist():
        key = tuple(row[c] for c in keep)
        sums[key] = sums.get(key, 0) + row["_diff"]
        firsts.setdefault(key, row)
    out = [{**firsts[k], "_diff": d} for k, d in sums.items() if d != 0]
    return sorted(out, key=lambda r: tuple(str(v) for v in r.values()))


@settings(max_examples=examples(ci=300, dev=100), deadline=None)
@given(
    rows=hs.lists(
        hs.tuples(
            hs.integers(0, 3),
            hs.sampled_from(["x", "y", "a long payload string"]),
            hs.integers(0, 2),
            hs.integers(-2, 2),
        ),
        max_size=30,
    ),
    with_time=hs.booleans(),
    weak=hs.booleans(),
)
def test_consolidate_equals_its_definition(rows, with_time, weak):
    """`_consolidate` (no sort of the rows when every (row, time) is there once, no take
    when they are in hash order) equals its definition, with merges, zero sums, equal
    hashes and collisions, and orders its rows by hash."""
    from sealtime.kernels.join import _consolidate

    k = [r[0] for r in rows]
    table = pa.table(
        {
            "__h": pa.array([x % 2 if weak else x * 7919 for x in k], pa.int64()),
            "k": pa.array(k, pa.int64()),
            "a": pa.array([r[1] for r in rows], pa.string()),
            "__r": pa.array(
                [(x % 2 if weak else hash((x, r[1]))) for x, r in zip(k, rows)], pa.int64()
            ),
            "_time": pa.array([r[2] for r in rows], pa.int64()),
            "_diff": pa.array([r[3] for r in rows], pa.int64()),
        }
    )
    got = _consolidate(table, ["k", "a"], with_time)
    rows_got = sorted(got.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))
    assert rows_got == _consolidate_reference(table, ["k", "a"], with_time)
    h = got.column("__h").to_pylist()
    assert h == sorted(h)  # ordered by hash: runs are searched by it
    assert got.schema == table.schema
