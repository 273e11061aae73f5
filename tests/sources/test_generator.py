"""Tests of the synthetic bid generator: determinism, schema, value rules, late injection."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.errors import ConfigError
from sealtime.sources.base import Source
from sealtime.sources.generator import (
    CHANNELS,
    FIRST_AUCTION_ID,
    FIRST_PERSON_ID,
    Generator,
    parse_time_ms,
)
from tests.conftest import examples

BEAM_START_MS = 1436918400000  # 2015-07-15T00:00:00Z


def col(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).combine_chunks().to_numpy(zero_copy_only=False)


def times(table: pa.Table) -> np.ndarray:
    return table.column("date_time").cast(pa.int64()).to_numpy()


def read_all(reader, sizes):
    batches = [reader.read(n) for n in sizes]
    return batches, pa.concat_tables([b.data for b in batches])


def late_by_rule(t: np.ndarray, lateness: int) -> np.ndarray:
    """Brute force: record i is late iff t_i < max(t_j for j < i) - lateness."""
    prev_max = np.empty_like(t)
    prev_max[0] = np.iinfo(np.int64).min + lateness
    prev_max[1:] = np.maximum.accumulate(t)[:-1]
    return t < prev_max - lateness


# ---------------------------------------------------------------- schema and positions


def test_schema_and_types():
    g = Generator(limit=10)
    assert isinstance(g, Source)
    assert g.schema.names == ["event_id", "auction", "bidder", "price", "channel", "date_time"]
    assert g.schema.field("date_time").type == pa.timestamp("ms", tz="UTC")
    for name in ("event_id", "auction", "bidder", "price"):
        assert g.schema.field(name).type == pa.int64()
    assert g.schema.field("channel").type == pa.string()
    batch = g.open().read()
    assert batch.data.schema.equals(g.schema)
    assert batch.errors is None
    assert col(batch.data, "event_id").tolist() == list(range(10))
    assert times(batch.data)[0] == BEAM_START_MS


def test_finite_and_exhaustion():
    assert not Generator().finite
    assert Generator(limit=0).finite
    empty = Generator(limit=0).open().read()
    assert empty.data.num_rows == 0 and empty.exhausted and empty.position == 0
    r = Generator(limit=25, max_per_read=10).open()
    got = [(b.data.num_rows, b.position, b.exhausted) for b in (r.read() for _ in range(4))]
    assert got == [(10, 10, False), (10, 20, False), (5, 25, True), (0, 25, True)]
    r = Generator(limit=25).open(25)
    assert r.read().exhausted


def test_max_rows_and_max_per_read():
    r = Generator(max_per_read=7).open()
    assert r.read().data.num_rows == 7
    assert r.read(3).data.num_rows == 3
    assert r.read(100).data.num_rows == 7
    assert r.read(0).data.num_rows == 0
    assert r.position == 17
    with pytest.raises(ConfigError, match="max_rows"):
        r.read(-1)


@settings(max_examples=examples(100))
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=8),
    seed=st.integers(0, 2**64 - 1),
    jitter=st.sampled_from([0, 1, 37, 2000]),
    late=st.sampled_from([0.0, 0.1, 0.5]),
)
def test_read_splits_are_deterministic(sizes, seed, jitter, late):
    kwargs = dict(seed=seed, out_of_order=jitter, late_fraction=late, late_by=jitter + 5000)
    g = Generator(**kwargs)
    _, got = read_all(g.open(), sizes)
    whole = Generator(**kwargs).generate(0, sum(sizes))
    assert got.equals(whole)
    # one big read equals the split reads too
    assert Generator(**kwargs).open().read(sum(sizes)).data.equals(whole)


@settings(max_examples=examples(50))
@given(position=st.integers(0, 3000), n=st.integers(0, 500), seed=st.integers(0, 1000))
def test_resume_from_position(position, n, seed):
    g = Generator(seed=seed, out_of_order="1s", late_fraction=0.05, late_by="5s")
    resumed = g.open(position).read(n)
    assert resumed.position == position + n
    assert resumed.data.equals(g.generate(0, position + n).slice(position))


def test_counter_based_far_positions():
    """Event 10**12 is computed directly, without generating the events before it."""
    g = Generator(seed=9, out_of_order="3s", late_fraction=0.01, late_by="10s")
    far = g.open(10**12).read(1000)
    assert col(far.data, "event_id")[0] == 10**12
    assert far.data.slice(500).equals(g.open(10**12 + 500).read(500).data)
    assert times(far.data).max() <= BEAM_START_MS + (10**12 + 999) * 1000 // 10_000


def test_seed_changes_events_and_same_seed_repeats():
    a = Generator(seed=1).generate(0, 1000)
    assert a.equals(Generator(seed=1).generate(0, 1000))
    b = Generator(seed=2).generate(0, 1000)
    assert not np.array_equal(col(a, "price"), col(b, "price"))
    assert col(a, "event_id").tolist() == col(b, "event_id").tolist()


def test_pickle_round_trip():
    g = Generator(seed=5, limit=100, out_of_order="1s")
    g2 = pickle.loads(pickle.dumps(g))
    assert g2.open().read().data.equals(g.open().read().data)


def test_extra_bytes_column():
    t = Generator(extra_bytes=50).generate(0, 1000)
    assert t.schema.names[-1] == "extra"
    lengths = pa.compute.binary_length(t.column("extra")).to_numpy()
    assert (lengths == 50).all()
    assert Generator().generate(0, 1).schema.names[-1] == "date_time"


# ---------------------------------------------------------------- value rules


def beam_last_auction(n: int) -> int:
    """Beam's lastBase0AuctionId, written as in the Java generator (per event)."""
    epoch, offset = n // 50, n % 50
    if offset < 1:
        epoch -= 1
        offset = 2
    elif offset >= 4:
        offset = 2
    else:
        offset -= 1
    return epoch * 3 + offset


def test_value_ranges():
    n = 100_000
    g = Generator(seed=11, auctions=1000, bidders=10_000)
    t = g.generate(0, n)
    ids = col(t, "event_id")
    price = col(t, "price")
    assert price.min() >= 100 and price.max() <= 100_000_000
    sample = range(0, n, 97)
    auction = col(t, "auction")
    bidder = col(t, "bidder")
    for i in sample:
        last = max(beam_last_auction(i), 0)
        lo = FIRST_AUCTION_ID + max(last - 1000, 0)
        assert lo <= auction[i] <= FIRST_AUCTION_ID + last + 10
        people = i // 50 + 1
        assert FIRST_PERSON_ID + max(people - 10_000, 0) <= bidder[i]
        assert bidder[i] <= FIRST_PERSON_ID + people + 10
    assert set(col(t, "channel").tolist()) == set(CHANNELS)
    assert (times(t) == g.base_time(ids)).all()  # no jitter, no late injection by default


def test_hot_key_ratios():
    n = 100_000
    t = Generator(seed=3).generate(0, n)
    ids = col(t, "event_id")
    last_auction = np.maximum(np.array([beam_last_auction(i) for i in ids.tolist()]), 0)
    hot_auction = (last_auction // 100) * 100 + FIRST_AUCTION_ID
    frac = (col(t, "auction") == hot_auction).mean()
    assert 0.49 < frac < 0.515  # 1 - 1/2, plus the uniform branch hitting the hot id
    hot_bidder = (ids // 50 // 100) * 100 + 1 + FIRST_PERSON_ID
    frac = (col(t, "bidder") == hot_bidder).mean()
    assert 0.74 < frac < 0.765  # 1 - 1/4
    # channels about uniform, prices log-uniform over 10^2 .. 10^8
    _, counts = np.unique(col(t, "channel"), return_counts=True)
    assert len(counts) == len(CHANNELS) and (abs(counts / n - 0.2) < 0.01).all()
    assert abs((col(t, "price") < 100_000).mean() - 0.5) < 0.01
    # ratio 1 = no hot key
    t1 = Generator(seed=3, hot_auction_ratio=1, hot_bidder_ratio=1).generate(0, n)
    assert (col(t1, "auction") == hot_auction).mean() < 0.05
    assert (col(t1, "bidder") == hot_bidder).mean() < 0.05


def test_out_of_order_jitter_bounds():
    g = Generator(seed=4, out_of_order="2s")
    t = g.generate(0, 100_000)
    delay = g.base_time(col(t, "event_id")) - times(t)
    assert delay.min() == 0 and delay.max() == 1999
    assert abs(delay.mean() - 999.5) < 15


# ---------------------------------------------------------------- late injection


def test_injection_rule():
    g = Generator(seed=8, late_fraction=0.02, late_by="7s", out_of_order="1s", late_warmup=500)
    n = 100_000
    ids = np.arange(n)
    injected = g.is_injected_late(ids)
    assert not injected[:500].any()
    assert not (injected[1:] & injected[:-1]).any()  # never two in a row
    assert abs(injected.mean() - 0.02) < 0.002
    assert g.injected_late(n) == injected.sum()
    t = times(g.generate(0, n))
    assert (t[injected] == g.base_time(ids[injected]) - 7000).all()
    assert (t[~injected] > g.base_time(ids[~injected]) - 1000).all()
    assert Generator(late_fraction=0.0).is_injected_late(ids).sum() == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(rate=10_000, out_of_order="2s", late_by="5s", late_fraction=0.01),
        dict(rate=1_000, out_of_order="0s", late_by="30s", late_fraction=0.005),
        dict(rate=3, out_of_order="0s", late_by="2s", late_fraction=0.05),
        dict(rate=7, out_of_order="250ms", late_by="2s", late_fraction=0.05),
    ],
)
def test_late_injection_brute_force(kwargs):
    """With L in the documented range, the late records are exactly the injected ones."""
    n = 200_000
    g = Generator(seed=21, **kwargs)
    t = times(g.generate(0, n))
    injected = g.is_injected_late(np.arange(n))
    assert injected.sum() == g.injected_late(n) > 0
    lo, hi = g.lateness_range()
    assert lo == g.out_of_order_ms
    assert hi == g.late_by_ms - g.out_of_order_ms - -(-1000 // g.rate) - 1
    for lateness in sorted({lo, (lo + hi) // 2, hi}):
        late = late_by_rule(t, lateness)
        assert np.array_equal(late, injected), lateness


@settings(max_examples=examples(60))
@given(
    seed=st.integers(0, 2**32),
    rate=st.sampled_from([1, 3, 7, 100, 999, 1000, 1001, 10_000, 123_456]),
    jitter=st.integers(0, 3000),
    gap=st.integers(1, 3000),
    fraction=st.floats(0.001, 0.5),
    pick=st.floats(0, 1),
)
def test_late_injection_contract_property(seed, rate, jitter, gap, fraction, pick):
    max_gap = -(-1000 // rate)
    late_by = 2 * jitter + max_gap + gap  # the smallest ranges included
    g = Generator(
        seed=seed,
        rate=rate,
        out_of_order=jitter,
        late_by=late_by,
        late_fraction=fraction,
        late_warmup=10,
    )
    lo, hi = g.lateness_range()
    lateness = lo + int(pick * (hi - lo))
    n = 5_000
    t = times(g.generate(0, n))
    assert np.array_equal(late_by_rule(t, lateness), g.is_injected_late(np.arange(n)))


def test_lateness_range_empty_is_an_error():
    g = Generator(rate=1000, out_of_order="1s", late_by="2001ms", late_fraction=0.1)
    with pytest.raises(ConfigError, match="late_by >= 2002ms"):
        g.lateness_range()


def test_event_frontier_is_a_lower_bound():
    g = Generator(seed=2, out_of_order="2s", late_fraction=0.05, late_by="9s", limit=20_000)
    r = g.open()
    seen = []
    while True:
        b = r.read(1000)
        seen.append((b.event_frontier, b.position))
        if b.exhausted:
            assert b.event_frontier is None
            break
    t = times(g.generate(0, 20_000))
    suffix_min = np.minimum.accumulate(t[::-1])[::-1]
    for frontier, pos in seen[:-1]:
        assert frontier <= suffix_min[pos]


# ---------------------------------------------------------------- pacing


def test_pace_with_injected_clock():
    now = [-1]
    g = Generator(start=0, rate=1000, pace=True, clock=lambda: now[0], limit=50)
    r = g.open()
    assert r.read().data.num_rows == 0 and r.position == 0
    now[0] = 0
    assert col(r.read().data, "event_id").tolist() == [0]
    now[0] = 9
    assert col(r.read().data, "event_id").tolist() == list(range(1, 10))
    assert r.read().data.num_rows == 0
    now[0] = 30
    assert r.read(5).position == 15  # max_rows still caps
    now[0] = 10**6
    last = r.read()
    assert last.position == 50 and last.exhausted


def test_pace_default_clock_releases_past_events():
    g = Generator(pace=True, max_per_read=100)  # Beam's start is in the past
    assert g.open().read().data.num_rows == 100
    future = Generator(pace=True, start=datetime.now(timezone.utc) + timedelta(days=1))
    assert future.open().read().data.num_rows == 0


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(seed=-1), "seed"),
        (dict(seed=2**64), "seed"),
        (dict(seed=1.5), "seed"),
        (dict(limit=-1), "limit"),
        (dict(rate=0), "rate"),
        (dict(rate=2.5), "rate"),
        (dict(start="yesterday"), "start"),
        (dict(max_per_read=0), "max_per_read"),
        (dict(out_of_order="-1s"), "out_of_order"),
        (dict(out_of_order="2 fortnights"), "out_of_order"),
        (dict(late_fraction=0.6), "late_fraction"),
        (dict(late_fraction=float("nan")), "late_fraction"),
        (dict(late_fraction=0.1, late_by="2s", out_of_order="2s"), "late_by"),
        (dict(late_warmup=0), "late_warmup"),
        (dict(auctions=0), "auctions"),
        (dict(bidders=0), "bidders"),
        (dict(hot_auction_ratio=0), "hot_auction_ratio"),
        (dict(hot_bidder_ratio=0), "hot_bidder_ratio"),
        (dict(extra_bytes=-1), "extra_bytes"),
        (dict(pace="yes"), "pace"),
        (dict(clock=5), "clock"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs, name):
    # "Generator(rate=0): ..." or, for durations, "Generator(out_of_order)='-1s' ..."
    with pytest.raises(ConfigError, match=rf"\b{name}\)?="):
        Generator(**kwargs)


def test_bad_positions():
    g = Generator(limit=10)
    with pytest.raises(ConfigError, match="position"):
        g.open(-1)
    with pytest.raises(ConfigError, match="position"):
        g.open(11)
    with pytest.raises(ConfigError, match="limit"):
        g.generate(5, 6)


def test_late_by_not_checked_without_injection():
    assert Generator(out_of_order="1m", late_by="30s").late_by_ms == 30_000


def test_parse_time_ms():
    assert parse_time_ms("2015-07-15T00:00:00Z") == BEAM_START_MS
    assert parse_time_ms("2015-07-15T00:00:00") == BEAM_START_MS  # naive = UTC
    assert parse_time_ms("2015-07-15T02:00:00+02:00") == BEAM_START_MS
    assert parse_time_ms(datetime(2015, 7, 15)) == BEAM_START_MS
    assert parse_time_ms(BEAM_START_MS) == BEAM_START_MS
    assert abs(parse_time_ms("now") - datetime.now(timezone.utc).timestamp() * 1000) < 5000
    assert Generator(start="2015-07-15T00:00:01.5Z").start_ms == BEAM_START_MS + 1500
