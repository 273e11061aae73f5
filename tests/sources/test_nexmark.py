"""Tests of the Nexmark generator: event mix, id rules, value rules, determinism, hot keys."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sealtime.errors import ConfigError
from sealtime.sources.base import Source
from sealtime.sources.decode import SUBSOURCE_COLUMN
from sealtime.sources.nexmark import (
    AUCTION_SCHEMA,
    BID_SCHEMA,
    CITIES,
    FIRST_NAMES,
    HOT_CHANNELS,
    LAST_NAMES,
    PERSON_SCHEMA,
    STATES,
    Nexmark,
)

BEAM_START_MS = 1436918400000  # 2015-07-15T00:00:00Z
N = 50_000


@pytest.fixture(scope="module")
def events() -> pa.Table:
    return Nexmark(seed=7, limit=N).generate(0, N)


@pytest.fixture(scope="module")
def parts(events: pa.Table) -> dict[str, pa.Table]:
    return Nexmark(seed=7).split(events)


def col(table: pa.Table, name: str) -> np.ndarray:
    c = table.column(name)
    if pa.types.is_timestamp(c.type):
        c = c.cast(pa.int64())
    return c.combine_chunks().to_numpy(zero_copy_only=False)


def test_source_contract():
    src = Nexmark(limit=10)
    assert isinstance(src, Source)
    assert src.finite and not Nexmark().finite
    assert src.schema.field(SUBSOURCE_COLUMN).type == pa.string()
    assert set(src.subsources) == {"person", "auction", "bid"}
    assert src.subsources["person"] == PERSON_SCHEMA
    assert src.subsources["auction"] == AUCTION_SCHEMA
    assert src.subsources["bid"] == BID_SCHEMA
    for sub in src.subsources.values():  # every subsource column is in the union
        for f in sub:
            assert src.schema.field(f.name).type == f.type
    r = src.open()
    b = r.read(4)
    assert b.position == 4 and not b.exhausted and b.event_frontier is not None
    assert json.loads(json.dumps(b.position)) == 4
    b = r.read()
    assert b.position == 10 and b.exhausted and b.event_frontier is None
    assert r.read().data.num_rows == 0
    assert r.health() == "running"


def test_mix_is_1_3_46(events: pa.Table, parts: dict[str, pa.Table]):
    kinds = col(events, SUBSOURCE_COLUMN)
    n = np.arange(N)
    expected = np.where(n % 50 == 0, "person", np.where(n % 50 <= 3, "auction", "bid"))
    assert (kinds == expected).all()
    assert [parts[k].num_rows for k in ("person", "auction", "bid")] == [
        N // 50,
        3 * N // 50,
        46 * N // 50,
    ]


def test_columns_null_where_they_do_not_apply(events: pa.Table):
    kinds = col(events, SUBSOURCE_COLUMN)
    for name, owners in [("id", {"person", "auction"}), ("price", {"bid"}), ("city", {"person"})]:
        valid = pc.is_valid(events.column(name)).to_numpy(zero_copy_only=False)
        assert (valid == np.isin(kinds, list(owners))).all(), name
    assert events.column("date_time").null_count == 0
    assert events.column("extra").null_count == 0


def test_id_rules(parts: dict[str, pa.Table]):
    person, auction, bid = parts["person"], parts["auction"], parts["bid"]
    assert (col(person, "id") == 1000 + np.arange(N // 50)).all()
    assert (col(auction, "id") == 1000 + np.arange(3 * N // 50)).all()
    # a bid at event n (epoch e = n // 50) refers to auctions up to 3e+2 (+10 lead ids)
    # and persons up to e (+10 lead ids); the hot ones are blocks of 100.
    n_bid = np.flatnonzero(np.arange(N) % 50 >= 4)
    epoch = n_bid // 50
    a = col(bid, "auction") - 1000
    assert (a >= 0).all() and (a <= 3 * epoch + 2 + 10).all()
    cold = a != (3 * epoch + 2) // 100 * 100
    assert (a[cold] >= np.maximum(3 * epoch[cold] + 2 - 100, 0)).all()
    b = col(bid, "bidder") - 1000
    assert (b >= 0).all() and (b <= epoch + 10).all()
    n_auc = np.flatnonzero((np.arange(N) % 50 >= 1) & (np.arange(N) % 50 <= 3))
    s = col(auction, "seller") - 1000
    assert (s >= 0).all() and (s <= n_auc // 50 + 10).all()
    # non-hot bidders are among the last 1000 people (+ lead)
    assert (b >= np.maximum(epoch + 1 - 1000, 0)).all()


def test_value_rules(parts: dict[str, pa.Table], events: pa.Table):
    person, auction, bid = parts["person"], parts["auction"], parts["bid"]
    cat = col(auction, "category")
    assert cat.min() == 10 and cat.max() == 14
    assert set(np.unique(col(person, "state"))) == set(STATES)
    assert set(np.unique(col(person, "city"))) == set(CITIES)
    firsts = {name.split(" ")[0] for name in col(person, "name")}
    lasts = {name.split(" ")[1] for name in col(person, "name")}
    assert firsts == set(FIRST_NAMES) and lasts == set(LAST_NAMES)
    assert all(len(cc) == 19 and cc.replace(" ", "").isdigit() for cc in col(person, "credit_card"))
    assert all(e.endswith(".com") and "@" in e for e in col(person, "email_address")[:500])
    for price in (col(bid, "price"), col(auction, "initial_bid")):
        assert price.min() >= 100 and price.max() <= 10**8
    assert (col(auction, "reserve") > col(auction, "initial_bid")).all()
    # prices are log-uniform: about half are below 10 ** 3 * 100
    assert 0.45 < np.mean(col(bid, "price") < 100_000) < 0.55
    channels = col(bid, "channel")
    hot = np.isin(channels, HOT_CHANNELS)
    assert 0.45 < hot.mean() < 0.55
    assert all(c.startswith("channel-") for c in channels[~hot][:100])
    # event time: start + n * 1000 // rate (10k/s => 0.1 ms per event)
    t = col(events, "date_time")
    assert (t == BEAM_START_MS + np.arange(N) * 1000 // 10_000).all()
    # expires in (date_time, date_time + 2 * horizon], horizon = time of ~1666 events
    span = col(auction, "expires") - col(auction, "date_time")
    assert span.min() >= 1 and span.max() <= 2 * 1666 * 1000 // 10_000 + 1
    assert 100 < span.mean() < 230


def test_extra_pads_to_the_average_sizes(parts: dict[str, pa.Table]):
    sizes = {}
    for kind, table in parts.items():
        extra = pc.binary_length(table.column("extra")).to_numpy()
        sizes[kind] = extra
    # bid: 32 bytes of fields + extra ≈ 100 ± 20 %
    bid_total = 32 + sizes["bid"]
    assert bid_total.min() >= 80 and bid_total.max() <= 120
    assert 95 < bid_total.mean() < 105
    assert 400 < sizes["auction"].mean() + 48 + 70 < 560
    assert 150 < sizes["person"].mean() + 60 < 250


def test_hot_key_ratios(parts: dict[str, pa.Table]):
    bid, auction = parts["bid"], parts["auction"]
    n_bid = np.flatnonzero(np.arange(N) % 50 >= 4)
    epoch = n_bid // 50
    hot_auction = (3 * epoch + 2) // 100 * 100 + 1000
    hot_bidder = epoch // 100 * 100 + 1 + 1000
    # hot with probability 1 - 1/ratio (plus the rare cold pick that hits it)
    assert 0.49 < np.mean(col(bid, "auction") == hot_auction) < 0.53
    assert 0.74 < np.mean(col(bid, "bidder") == hot_bidder) < 0.77
    n_auc = np.flatnonzero((np.arange(N) % 50 >= 1) & (np.arange(N) % 50 <= 3))
    hot_seller = (n_auc // 50) // 100 * 100 + 1000
    assert 0.72 < np.mean(col(auction, "seller") == hot_seller) < 0.79
    # ratio 1 = no hot key
    no_hot = Nexmark(seed=7, hot_auction_ratio=1).split(
        Nexmark(seed=7, hot_auction_ratio=1).generate(0, 5000)
    )
    n5 = np.flatnonzero(np.arange(5000) % 50 >= 4)
    assert np.mean(col(no_hot["bid"], "auction") == (3 * (n5 // 50) + 2) // 100 * 100 + 1000) < 0.2


def test_determinism_across_read_splits_and_restarts(events: pa.Table):
    src = Nexmark(seed=7, limit=N)
    rng = np.random.default_rng(1)
    pieces = []
    r = src.open()
    while True:
        b = r.read(int(rng.integers(1, 9000)))
        pieces.append(b.data)
        if rng.random() < 0.3:  # "restart": a new reader from the position
            r = src.open(json.loads(json.dumps(b.position)))
        if b.exhausted:
            break
    assert pa.concat_tables(pieces).equals(events)
    assert src.open(N).read().data.num_rows == 0
    # another seed gives other events, the same seed the same ones
    assert not Nexmark(seed=8).generate(0, 200).equals(events.slice(0, 200))
    assert Nexmark(seed=7).generate(123, 77).equals(events.slice(123, 77))


def test_event_frontier_bounds_the_rest():
    src = Nexmark(limit=1000, rate=1000, start=0)
    r = src.open()
    b1 = r.read(300)
    b2 = r.read(300)
    assert b1.event_frontier == 300
    assert col(b2.data, "date_time").min() >= b1.event_frontier


def test_bad_arguments():
    with pytest.raises(ConfigError, match="Nexmark\\(limit=-1\\)"):
        Nexmark(limit=-1)
    with pytest.raises(ConfigError, match="beyond limit"):
        Nexmark(limit=5).open(6)
    with pytest.raises(ConfigError, match="position"):
        Nexmark().open("x")
