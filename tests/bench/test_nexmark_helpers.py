"""The Nexmark benchmark's own helpers: the multiset comparison, the tie rule of top-n
checks, the independent references of the windowed queries (against brute-force
definitions written here, row by row), and the latency harness's arrival lookup."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.nexmark_check import Digest, canonical, check_ties, compare
from bench.nexmark_latency import arrival_of
from bench.nexmark_literal import write_events
from bench.nexmark_reference import Ties, reference

rows = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(["a", "b", None]), st.integers(-2, 2)),
    max_size=40,
)


@given(rows)
def test_digest_consolidates_differential_updates(updates):
    """The consolidated digest of (row, diff) updates equals the digest of the net rows."""
    t = pa.table(
        {
            "k": [u[0] for u in updates],
            "s": pa.array([u[1] for u in updates], pa.string()),
            "_diff": [u[2] for u in updates],
        }
    )
    net = Counter()
    for k, s, d in updates:
        net[(k, s)] += d
    plain = [(k, s) for (k, s), n in net.items() for _ in range(max(n, 0))]
    want = pa.table({"k": [r[0] for r in plain], "s": pa.array([r[1] for r in plain], pa.string())})
    res = compare(
        Digest.of([t], ["k", "s"], diff=True).multiset(), Digest.of([want], ["k", "s"]).multiset()
    )
    assert res["ok"] == all(n >= 0 for n in net.values())


@given(st.lists(st.integers(0, 4), max_size=20), st.lists(st.integers(0, 4), max_size=20))
def test_compare_counts_missing_and_extra(got, want):
    g = Digest.of([pa.table({"x": got})], ["x"]).multiset() if got else pd.Series(dtype="int64")
    w = Digest.of([pa.table({"x": want})], ["x"]).multiset() if want else pd.Series(dtype="int64")
    res = compare(g, w)
    cg, cw = Counter(got), Counter(want)
    assert res["missing"] == sum((cw - cg).values())
    assert res["extra"] == sum((cg - cw).values())
    assert res["ok"] == (cg == cw)


def test_canonical_makes_engines_types_comparable():
    """Timestamps of any unit as ms, decimals as rounded floats, nulls kept apart."""
    a = pa.table(
        {
            "t": pa.array([1_500, None], pa.timestamp("us", tz="UTC")),
            "d": pa.array([1, 2], pa.int32()),
        }
    )
    b = pa.table({"t": pa.array([1, None], pa.timestamp("ms", tz="UTC")), "d": [1, 2]})
    assert canonical(a, ["t", "d"]).equals(canonical(b, ["t", "d"]))


def test_check_ties_accepts_any_candidate_and_refuses_others():
    cands = pd.DataFrame({"k": [1, 1, 2], "v": [5, 5, 7], "x": ["a", "b", "c"]})
    ties = Ties(["k", "v"], cands)
    want = Digest.of([cands.drop_duplicates(["k", "v"])], ["k", "v"]).multiset()
    pick_b = pa.table({"k": [1, 2], "v": [5, 7], "x": ["b", "c"]})
    assert check_ties([pick_b], ties, ["k", "v", "x"], want, diff=False)["ok"]
    foreign = pa.table({"k": [1, 2], "v": [5, 7], "x": ["z", "c"]})
    res = check_ties([foreign], ties, ["k", "v", "x"], want, diff=False)
    assert not res["ok"] and res["not_candidates"] == 1


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("nexmark")
    write_events(d, 60_000, 20_000)
    return d


def _bids(events: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    t = pa.concat_tables(pq.read_table(p) for p in sorted(events.glob("nexmark-*.parquet")))
    ms = t.column("date_time").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    b = t.append_column("ms", ms).to_pandas()
    return b[b["_subsource"] == "bid"].copy()


def test_q5_reference_equals_windows_counted_one_by_one(events):
    """Sliding windows of 1 s every 200 ms: per window, per auction, counted by
    enumerating the windows and filtering the bids (no window arithmetic shared)."""
    b = _bids(events)
    want = []
    lo = (b["ms"].min() // 200) * 200 - 1000
    for start in range(int(lo), int(b["ms"].max()) + 1, 200):
        inside = b[(b["ms"] >= start) & (b["ms"] < start + 1000)]
        if not len(inside):
            continue
        counts = inside["auction"].value_counts()
        for auction, n in counts[counts == counts.max()].items():
            want.append((int(auction), int(n), start, start + 1000))
    got = pd.concat(list(reference("q5", events, window_ms=1000, slide_ms=200).frames()))
    assert sorted(map(tuple, got.to_numpy().tolist())) == sorted(want)


def test_q11_reference_equals_sessions_built_bid_by_bid(events):
    b = _bids(events)
    want = []
    for bidder, g in b.groupby("bidder"):
        times = sorted(g["ms"].tolist())
        start = last = times[0]
        n = 1
        for t in times[1:]:
            if t - last < 10_000:
                n, last = n + 1, t
            else:
                want.append((int(bidder), n, start, last + 10_000))
                start = last = t
                n = 1
        want.append((int(bidder), n, start, last + 10_000))
    got = pd.concat(list(reference("q11", events).frames()))
    assert sorted(map(tuple, got.to_numpy().tolist())) == sorted(want)


@given(st.lists(st.integers(0, 100), min_size=1, max_size=8, unique=True), st.data())
def test_arrival_of_is_the_earliest_file_reaching_a_time(lasts, data):
    lasts = sorted(lasts)
    arrivals = [(f"f{i}", float(i), 0, last) for i, last in enumerate(lasts)]
    times = np.array(data.draw(st.lists(st.integers(0, 120), max_size=20)), dtype=np.int64)
    got = arrival_of(times, arrivals)
    for t, g in zip(times.tolist(), got.tolist()):
        reaching = [a[1] for a in arrivals if a[3] >= t]
        assert (np.isnan(g) and not reaching) or g == min(reaching)
