"""`advance_time(to=g)`: times rounded up to multiples of `g`, with the frontier rounded
up through the progress tracker (path summary `RoundUp`).

Oracle: at every multiple of `g`, the accumulated output of a pipeline over the
coarsened collection equals the same pipeline's over the original collection (and a
hand-written computation); no update is emitted at a time in between; the result does
not depend on how the input was split into ticks."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import sealtime as st
from sealtime.progress import Add, Chain, Identity, RoundUp
from sealtime.sources import Rows
from tests.dataflow.oracle import accumulated

G = 1000
SCHEMA = {"k": "string", "v": "long"}


def workload(seed: int = 3, n: int = 120) -> list[tuple]:
    """Inserts and retractions of (k, v) at times spread over ~12 s, including times on
    multiples of G and negative ones."""
    rng = random.Random(seed)
    items: list[tuple] = []
    live: list[tuple[int, dict]] = []
    for _ in range(n):
        t = rng.choice([rng.randrange(-1500, 12_000), rng.randrange(-1, 12) * G])
        if live and rng.random() < 0.25:
            t0, row = live.pop(rng.randrange(len(live)))
            items.append((max(t, t0), row, -1))
        else:
            row = {"k": rng.choice("abc"), "v": rng.randrange(1, 50)}
            items.append((t, row))
            live.append((t, row))
    return items


def ceil(t: int) -> int:
    return -((-t) // G) * G


def sums_at(items: list[tuple], t: int) -> Counter:
    """Hand-written oracle of ``aggregate(by="k", s=sum(v), n=count())`` at time t."""
    acc: dict[str, list[int]] = {}
    for item in items:
        time, row = item[0], item[1]
        diff = item[2] if len(item) == 3 else 1
        if time <= t:
            a = acc.setdefault(row["k"], [0, 0])
            a[0] += row["v"] * diff
            a[1] += diff
    return Counter({(k, s, n): 1 for k, (s, n) in acc.items() if n != 0})


# 2 times per tick is many more ticks (124 s on the CI machine): the full tier's; 20 a
# tick still puts the times of each multiple of G in several ticks (9 took 54-84 s).
@pytest.mark.parametrize("times_per_tick", [pytest.param(2, marks=pytest.mark.full), 20])
def test_accumulated_output_at_multiples_equals_uncoarsened(make_flow, times_per_tick):
    items = workload()
    flow = make_flow()
    src = flow.source("s", Rows(SCHEMA, items, times_per_tick=times_per_tick))
    coarse_rows = src.advance_time(to="1s")
    coarse = coarse_rows.aggregate(by="k", s=st.sum("v"), n=st.count())
    fine = src.aggregate(by="k", s=st.sum("v"), n=st.count())
    flow.run()
    cols = ["k", "s", "n"]
    c_up, f_up, rows_up = coarse.updates(), fine.updates(), coarse_rows.updates()
    # nothing at the times in between: every output time is a multiple of G
    assert rows_up.num_rows > 0
    assert all(t % G == 0 for t in rows_up.column("_time").to_pylist())
    assert all(t % G == 0 for t in c_up.column("_time").to_pylist())
    # fewer distinct output times than the uncoarsened aggregate has
    assert len(set(c_up.column("_time").to_pylist())) < len(set(f_up.column("_time").to_pylist()))
    times = sorted({item[0] for item in items})
    for m in range(ceil(times[0]), ceil(times[-1]) + G, G):
        got = accumulated(c_up, cols, m)
        assert got == accumulated(f_up, cols, m), f"at multiple {m}"
        assert got == sums_at(items, m), f"at multiple {m}"
    # each coarse row is its input row at the rounded time (no update lost or invented)
    want = Counter()
    for item in items:
        want[(item[1]["k"], item[1]["v"], ceil(item[0]))] += item[2] if len(item) == 3 else 1
    got = Counter()
    for r in rows_up.to_pylist():
        got[(r["k"], r["v"], r["_time"])] += r["_diff"]
    assert +got == +want and -got == -want


def test_independent_of_tick_size(make_flow):
    outs = []
    for per_tick in (3, 1000):
        flow = make_flow()
        src = flow.source("s", Rows(SCHEMA, workload(seed=11), times_per_tick=per_tick))
        agg = src.advance_time(to=G).aggregate(by="k", s=st.sum("v"))
        flow.run()
        outs.append(agg.updates().to_pylist())
    assert outs[0] == outs[1]


def test_frontier_is_rounded_up_and_windows_seal(make_flow):
    """Downstream of advance_time the frontier is the input's rounded up, and a window
    over the coarse time is emitted exactly when its end is sealed."""
    items = [(t, {"k": "a", "v": 1}) for t in (100, 900, 1000, 1001, 2500, 9999, 10_001)]
    items.append((25_000, {"k": "a", "v": 0}))  # the last row: seals the windows below
    flow = make_flow()
    src = flow.source("s", Rows(SCHEMA, items))
    coarse = src.advance_time(to="1s")
    per_window = coarse.window(st.Tumbling("5s")).aggregate(n=st.count())
    seen: list[tuple[int | None, int | None]] = []
    flow.run(on_tick=lambda r: seen.append((src.frontier, coarse.frontier)))
    for f_in, f_out in seen:
        if f_in is not None:
            assert f_out == ceil(f_in), (f_in, f_out)
    rows = per_window.updates().to_pylist()
    # coarse times: 1000, 1000, 1000, 2000, 3000, 10000, 11000, 25000
    got = {(r["window_start"], r["window_end"], r["n"], r["_time"]) for r in rows}
    assert got == {(0, 5000, 5, 4999), (10_000, 15_000, 2, 14_999), (25_000, 30_000, 1, 29_999)}


def test_bad_settings(make_flow):
    flow = make_flow()
    src = flow.source("s", Rows(SCHEMA, [(1, {"k": "a", "v": 1})]))
    with pytest.raises(ValueError, match=r"advance_time\(to\)='soon' is not a duration"):
        src.advance_time(to="soon")
    with pytest.raises(ValueError, match="at least 1 ms"):
        src.advance_time(to=0)
    with pytest.raises(ValueError, match=r"call advance_time\(\) before window\(\)"):
        src.window(st.Tumbling("1s")).advance_time(to="1s")


def test_round_up_summary():
    assert [RoundUp(5).results_in(t) for t in (-6, -5, 0, 1, 5, 6)] == [-5, -5, 0, 5, 5, 10]
    assert RoundUp(5).followed_by(RoundUp(10)) == RoundUp(10)
    chain = RoundUp(2).followed_by(RoundUp(3))
    assert isinstance(chain, Chain) and chain.results_in(3) == 6 and chain.results_in(5) == 6
    assert Add(1).followed_by(RoundUp(5)).results_in(5) == 10
    assert RoundUp(5).followed_by(Add(1)).results_in(5) == 6
    assert Identity().less_equal(RoundUp(5)) and not RoundUp(5).less_equal(Identity())
    assert not RoundUp(5).advances() and Chain((Add(1), RoundUp(5))).advances()
    # less_equal is sound: never claims an order that some time contradicts
    sums = [Identity(), RoundUp(2), RoundUp(4), RoundUp(3), Add(1), chain, Chain((Add(1), chain))]
    for a in sums:
        for b in sums:
            if a.less_equal(b):
                assert all(a.results_in(t) <= b.results_in(t) for t in range(-20, 20)), (a, b)
