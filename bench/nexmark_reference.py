"""Independent references for Nexmark q0-q23: pandas and pyarrow over the event files.

Each reference is written from the query's definition in ``/work/shared/NEXMARK.md``
(and the Flink suite's text), not from either streaming version: no Spark, no sealtime
operator, no SQL. It reads the flat Parquet files `bench/nexmark.py` writes (all three
kinds in one table, ``_subsource`` naming the kind) with pyarrow and computes the
query's final result, in the canonical form the checks compare:

* timestamps as int64 milliseconds since the epoch (window bounds too);
* exact decimals (q1, q14's euro price) and averages as float64, rounded to 6 decimals
  by the comparison;
* strings as they are.

``reference(name, events_dir)`` returns a `Result`: the expected rows (for stateless
queries an iterator of per-file frames, so that a 10M-event q0 is never in memory as
Python objects at once) and, for the top-n queries whose SQL leaves ties open (q9,
q18, q19), the `Ties` rule: which columns the result determines and the candidate rows
an implementation may pick from.

>>> import tempfile
>>> from bench.nexmark_literal import write_events
>>> d = tempfile.mkdtemp()
>>> _ = write_events(Path(d), 5_000, 5_000)
>>> r = reference("q2", Path(d))
>>> frame = pd.concat(list(r.frames()))
>>> list(frame.columns), bool((frame["auction"] % 123 == 0).all())
(['auction', 'price'], True)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["Result", "Ties", "reference"]

FILE_PATTERN = "nexmark-*.parquet"
WINDOW_MS = 10_000
SLIDE_MS = 2_000
SESSION_GAP_MS = 10_000
SIDE_INPUT_ROWS = 10_000
RANK1, RANK2 = 10_000, 1_000_000  # q15-q17: rank1 < 10,000 <= rank2 < 1,000,000 <= rank3

PERSON = ["id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"]
AUCTION = ["id", "item_name", "description", "initial_bid", "reserve", "date_time"]
AUCTION += ["expires", "seller", "category", "extra"]
BID = ["auction", "bidder", "price", "channel", "url", "date_time", "extra"]
_KIND = {"person": PERSON, "auction": AUCTION, "bid": BID}
_TIMES = {"date_time", "expires"}
_RANKS = ["rank1", "rank2", "rank3"]


@dataclass(frozen=True)
class Ties:
    """A top-n result whose SQL does not fix every column: the rows must match the
    reference on `key` (a multiset), and every row must be one of `candidates` (all the
    rows the definition allows) on all columns."""

    key: list[str]
    candidates: pd.DataFrame


@dataclass
class Result:
    columns: list[str]
    _frames: Callable[[], Iterator[pd.DataFrame]]
    ties: Ties | None = None

    def frames(self) -> Iterator[pd.DataFrame]:
        """The expected rows, a frame at a time (columns in `columns` order)."""
        for f in self._frames():
            yield f[self.columns]


# ------------------------------------------------------------------ reading the events


def _files(events_dir: Path) -> list[Path]:
    files = sorted(Path(events_dir).glob(FILE_PATTERN))
    if not files:
        raise FileNotFoundError(f"{events_dir}: no {FILE_PATTERN} files")
    return files


def _ms(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pc.cast(pc.cast(col, pa.timestamp("ms", tz="UTC")), pa.int64())


def _kind_table(path: Path, kind: str, columns: list[str]) -> pa.Table:
    t = pq.read_table(path, columns=["_subsource", *columns])
    t = t.filter(pc.equal(t.column("_subsource"), kind)).select(columns)
    for name in columns:
        if name in _TIMES:
            t = t.set_column(t.schema.get_field_index(name), name, _ms(t.column(name)))
    return t


def _kind_files(events_dir: Path, kind: str, columns: list[str]) -> Iterator[pd.DataFrame]:
    for path in _files(events_dir):
        yield _kind_table(path, kind, columns).to_pandas()


def _kind(events_dir: Path, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
    cols = columns or _KIND[kind]
    return pd.concat(list(_kind_files(events_dir, kind, cols)), ignore_index=True)


# ------------------------------------------------------------------ helpers


def _per_file(
    events_dir: Path, kind: str, columns: list[str], fn: Callable[[pd.DataFrame], pd.DataFrame]
) -> Callable[[], Iterator[pd.DataFrame]]:
    return lambda: (fn(df) for df in _kind_files(events_dir, kind, columns))


def _once(fn: Callable[[], pd.DataFrame]) -> Callable[[], Iterator[pd.DataFrame]]:
    return lambda: iter([fn()])


def _euros(price: pd.Series) -> pd.Series:
    # 0.908 * price exactly is price * 908 / 1000 (an integer over 1000); as float64
    # the quotient is the correctly rounded value of that decimal.
    return (price.astype("int64") * 908) / 1000


def _day(ms: pd.Series) -> pd.Series:
    return pd.to_datetime(ms, unit="ms", utc=True).dt.strftime("%Y-%m-%d")


def _minute(ms: pd.Series) -> pd.Series:
    return pd.to_datetime(ms, unit="ms", utc=True).dt.strftime("%H:%M")


def _rank(price: pd.Series) -> pd.Series:
    return pd.Series(
        np.where(price < RANK1, "rank1", np.where(price < RANK2, "rank2", "rank3")),
        index=price.index,
    )


def _bids_in_lifetime(events_dir: Path, auction_cols: list[str], bid_cols: list[str]):
    """Bids joined with their auction, kept when auction.date_time <= bid.date_time <=
    auction.expires (both inclusive, SQL BETWEEN)."""
    a = _kind(events_dir, "auction", sorted({"id", "date_time", "expires", *auction_cols}))
    b = _kind(events_dir, "bid", sorted({"auction", "date_time", *bid_cols}))
    b = b.rename(columns={c: f"b_{c}" for c in b.columns})
    j = a.merge(b, left_on="id", right_on="b_auction")
    return j[(j["b_date_time"] >= j["date_time"]) & (j["b_date_time"] <= j["expires"])]


# ------------------------------------------------------------------ the queries


def _q0(d: Path) -> Result:
    cols = ["auction", "bidder", "price", "date_time", "extra"]
    return Result(cols, _per_file(d, "bid", cols, lambda df: df))


def _q1(d: Path) -> Result:
    cols = ["auction", "bidder", "price", "date_time", "extra"]
    return Result(cols, _per_file(d, "bid", cols, lambda df: df.assign(price=_euros(df["price"]))))


def _q2(d: Path, with_time: int = 0) -> Result:
    # with_time: the bid's date_time too (the latency harness finds each row's arrival
    # by it)
    cols = ["auction", "price"] + (["date_time"] if with_time else [])
    return Result(cols, _per_file(d, "bid", cols, lambda df: df[df["auction"] % 123 == 0]))


def _q3(d: Path) -> Result:
    def run() -> pd.DataFrame:
        a = _kind(d, "auction", ["id", "seller", "category"])
        p = _kind(d, "person", ["id", "name", "city", "state"])
        a = a[a["category"] == 10]
        p = p[p["state"].isin(["OR", "ID", "CA"])].rename(columns={"id": "pid"})
        return a.merge(p, left_on="seller", right_on="pid")

    return Result(["name", "city", "state", "id"], _once(run))


def _q4(d: Path) -> Result:
    def run() -> pd.DataFrame:
        j = _bids_in_lifetime(d, ["category"], ["price"])
        final = j.groupby(["id", "category"], as_index=False)["b_price"].max()
        out = final.groupby("category", as_index=False)["b_price"].mean()
        return out.rename(columns={"b_price": "average"})

    return Result(["category", "average"], _once(run))


def _q5(d: Path, window_ms: int = WINDOW_MS, slide_ms: int = SLIDE_MS) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["auction", "date_time"])
        t = b["date_time"].to_numpy()
        parts = []
        # the windows [s, s + size) with s a multiple of the slide that hold t
        for k in range(window_ms // slide_ms):
            start = t - np.mod(t, slide_ms) - k * slide_ms
            parts.append(pd.DataFrame({"auction": b["auction"].to_numpy(), "starttime": start}))
        w = pd.concat(parts, ignore_index=True)
        counts = w.groupby(["starttime", "auction"], as_index=False).size()
        counts = counts.rename(columns={"size": "num"})
        maxn = counts.groupby("starttime")["num"].transform("max")
        out = counts[counts["num"] == maxn].copy()
        out["endtime"] = out["starttime"] + window_ms
        return out

    return Result(["auction", "num", "starttime", "endtime"], _once(run))


def _winners(
    d: Path, auction_cols: list[str], bid_cols: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per auction the highest bid made while it was open, the earliest of equal
    prices, the lowest bidder of those: (the winners, every bid that ties a winner on
    price, time and bidder)."""
    j = _bids_in_lifetime(d, auction_cols, sorted({"price", "bidder", *bid_cols}))
    j = j.sort_values(
        ["id", "b_price", "b_date_time", "b_bidder"], ascending=[True, False, True, True]
    )
    first = j.drop_duplicates("id", keep="first")
    key = ["id", "b_price", "b_date_time", "b_bidder"]
    tied = j.merge(first[key], on=key)
    return first, tied


def _q6(d: Path) -> Result:
    def run() -> pd.DataFrame:
        w, _ = _winners(d, ["seller"], [])
        w = w.sort_values(["seller", "b_date_time", "id"])
        avg = w.groupby("seller")["b_price"].rolling(11, min_periods=1).mean()
        w["avg_price"] = avg.reset_index(level=0, drop=True)
        return w.rename(columns={"id": "auction", "b_date_time": "bid_date_time"})

    return Result(["seller", "auction", "bid_date_time", "avg_price"], _once(run))


def _q7(d: Path) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["auction", "price", "bidder", "date_time", "extra"])
        start = b["date_time"] - np.mod(b["date_time"], WINDOW_MS)
        top = b["price"].groupby(start).transform("max")
        return b[b["price"] == top]

    return Result(["auction", "price", "bidder", "date_time", "extra"], _once(run))


def _q8(d: Path) -> Result:
    def run() -> pd.DataFrame:
        p = _kind(d, "person", ["id", "name", "date_time"])
        a = _kind(d, "auction", ["seller", "date_time"])
        p["starttime"] = p["date_time"] - np.mod(p["date_time"], WINDOW_MS)
        a["starttime"] = a["date_time"] - np.mod(a["date_time"], WINDOW_MS)
        people = p[["id", "name", "starttime"]].drop_duplicates()
        sellers = a[["seller", "starttime"]].drop_duplicates()
        return people.merge(sellers, left_on=["id", "starttime"], right_on=["seller", "starttime"])

    return Result(["id", "name", "starttime"], _once(run))


_Q9_COLS = [*AUCTION, "auction", "bidder", "price", "bid_date_time", "bid_extra"]


def _q9(d: Path) -> Result:
    first, tied = _winners(d, AUCTION, ["extra"])

    def shape(df: pd.DataFrame) -> pd.DataFrame:
        return df.rename(
            columns={
                "b_auction": "auction",
                "b_bidder": "bidder",
                "b_price": "price",
                "b_date_time": "bid_date_time",
                "b_extra": "bid_extra",
            }
        )

    key = [*AUCTION, "auction", "bidder", "price", "bid_date_time"]
    return Result(_Q9_COLS, _once(lambda: shape(first)), Ties(key, shape(tied)[_Q9_COLS]))


def _q10(d: Path) -> Result:
    cols = ["auction", "bidder", "price", "date_time", "extra"]
    return Result(
        [*cols, "dt", "hm"],
        _per_file(
            d,
            "bid",
            cols,
            lambda df: df.assign(dt=_day(df["date_time"]), hm=_minute(df["date_time"])),
        ),
    )


def _q11(d: Path) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["bidder", "date_time"]).sort_values(
            ["bidder", "date_time"], kind="stable"
        )
        t = b["date_time"].to_numpy()
        bidder = b["bidder"].to_numpy()
        # a new session where the bidder changes or the gap to the previous bid is >= 10 s
        new = np.ones(len(b), dtype=bool)
        new[1:] = (bidder[1:] != bidder[:-1]) | (t[1:] - t[:-1] >= SESSION_GAP_MS)
        session = np.cumsum(new)
        g = pd.DataFrame({"bidder": bidder, "t": t, "s": session}).groupby("s")
        out = g.agg(
            bidder=("bidder", "first"),
            bid_count=("t", "size"),
            first=("t", "min"),
            last=("t", "max"),
        )
        return out.assign(starttime=out["first"], endtime=out["last"] + SESSION_GAP_MS)

    return Result(["bidder", "bid_count", "starttime", "endtime"], _once(run))


def _q12(d: Path) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["bidder", "date_time"])
        b["starttime"] = b["date_time"] - np.mod(b["date_time"], WINDOW_MS)
        out = b.groupby(["bidder", "starttime"], as_index=False).size()
        return out.rename(columns={"size": "bid_count"}).assign(
            endtime=lambda x: x["starttime"] + WINDOW_MS
        )

    return Result(["bidder", "bid_count", "starttime", "endtime"], _once(run))


def _q13(d: Path) -> Result:
    cols = ["auction", "bidder", "price", "date_time"]

    def shape(df: pd.DataFrame) -> pd.DataFrame:
        key = df["auction"] % SIDE_INPUT_ROWS
        # the side input holds every key 0..9,999 once, its value the key's decimal text
        return df.assign(value=key.astype(str))

    return Result([*cols, "value"], _per_file(d, "bid", cols, shape))


def _time_type(ms: pd.Series) -> pd.Series:
    hour = pd.to_datetime(ms, unit="ms", utc=True).dt.hour
    return pd.Series(
        np.where(
            (hour >= 8) & (hour <= 18),
            "dayTime",
            np.where((hour <= 6) | (hour >= 20), "nightTime", "otherTime"),
        ),
        index=ms.index,
    )


def _q14(d: Path) -> Result:
    cols = ["auction", "bidder", "price", "date_time", "extra"]

    def shape(df: pd.DataFrame) -> pd.DataFrame:
        euros = _euros(df["price"])
        # compare exactly: 1,000,000 < 0.908 price < 50,000,000 on the integers x 1000
        thousandths = df["price"].astype("int64") * 908
        keep = (thousandths > 1_000_000 * 1000) & (thousandths < 50_000_000 * 1000)
        out = df.assign(price=euros)[keep]
        counts = out["extra"].map(lambda s: 0 if s is None else s.count("c"))
        return out.assign(bidTimeType=_time_type(out["date_time"]), c_counts=counts)

    return Result(
        ["auction", "bidder", "price", "bidTimeType", "date_time", "extra", "c_counts"],
        _per_file(d, "bid", cols, shape),
    )


def _bid_stats(b: pd.DataFrame, keys: list[str], distinct: bool) -> pd.DataFrame:
    """q15-q17's counts per group: bids (total and per rank) and, with `distinct`,
    distinct bidders and auctions (total and per rank)."""
    b = b.assign(rank=_rank(b["price"]))
    g = b.groupby(keys)
    out = pd.DataFrame({"total_bids": g.size()})
    per_rank = b.groupby([*keys, "rank"]).size().unstack("rank")
    for r in _RANKS:
        out[f"{r}_bids"] = per_rank.get(r, 0)
    if distinct:
        for what, col in (("bidders", "bidder"), ("auctions", "auction")):
            out[f"total_{what}"] = g[col].nunique()
            per = b.groupby([*keys, "rank"])[col].nunique().unstack("rank")
            for r in _RANKS:
                out[f"{r}_{what}"] = per.get(r, 0)
    return out.fillna(0).astype("int64").reset_index()


_STATS = ["total_bids", "rank1_bids", "rank2_bids", "rank3_bids"]
_DISTINCT = [f"{r}_{w}" for w in ("bidders", "auctions") for r in ["total", *_RANKS]]


def _q15(d: Path) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["bidder", "auction", "price", "date_time"])
        return _bid_stats(b.assign(day=_day(b["date_time"])), ["day"], True)

    return Result(["day", *_STATS, *_DISTINCT], _once(run))


def _q16(d: Path) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["channel", "bidder", "auction", "price", "date_time"])
        b = b.assign(day=_day(b["date_time"]), minute=_minute(b["date_time"]))
        out = _bid_stats(b, ["channel", "day"], True)
        minute = b.groupby(["channel", "day"], as_index=False)["minute"].max()
        return out.merge(minute, on=["channel", "day"])

    return Result(["channel", "day", "minute", *_STATS, *_DISTINCT], _once(run))


def _q17(d: Path) -> Result:
    def run() -> pd.DataFrame:
        b = _kind(d, "bid", ["auction", "price", "date_time"])
        b = b.assign(day=_day(b["date_time"]))
        out = _bid_stats(b, ["auction", "day"], False)
        g = b.groupby(["auction", "day"])["price"]
        agg = pd.DataFrame(
            {
                "min_price": g.min(),
                "max_price": g.max(),
                "avg_price": g.mean(),
                "sum_price": g.sum(),
            }
        ).reset_index()
        return out.merge(agg, on=["auction", "day"])

    cols = ["auction", "day", *_STATS, "min_price", "max_price", "avg_price", "sum_price"]
    return Result(cols, _once(run))


def _q18(d: Path) -> Result:
    b = _kind(d, "bid", BID)
    # the latest bid per (bidder, auction); among bids at the same time the highest price
    best = b.groupby(["bidder", "auction"])["date_time"].transform("max")
    latest = b[b["date_time"] == best]
    top = latest.groupby(["bidder", "auction"])["price"].transform("max")
    tied = latest[latest["price"] == top]
    first = tied.drop_duplicates(["bidder", "auction"])
    key = ["auction", "bidder", "price", "date_time"]
    return Result(BID, _once(lambda: first), Ties(key, tied[BID]))


def _q19(d: Path) -> Result:
    b = _kind(d, "bid", BID).sort_values(
        ["auction", "price", "date_time", "bidder"], ascending=[True, False, True, True]
    )
    b["rank_number"] = b.groupby("auction").cumcount() + 1
    top = b[b["rank_number"] <= 10]
    # bids equal to a top-10 bid on (auction, price, time, bidder) may take its place
    key = ["auction", "price", "date_time", "bidder"]
    tied = b.drop(columns="rank_number").merge(top[[*key, "rank_number"]], on=key)
    cols = [*BID, "rank_number"]
    return Result(
        cols,
        _once(lambda: top),
        Ties(["auction", "bidder", "price", "date_time", "rank_number"], tied[cols]),
    )


def _q20(d: Path) -> Result:
    a = None

    def auctions() -> pd.DataFrame:
        nonlocal a
        if a is None:
            a = _kind(d, "auction", AUCTION)
            a = a[a["category"] == 10].rename(
                columns={"date_time": "auction_date_time", "extra": "auction_extra"}
            )
        return a

    def shape(df: pd.DataFrame) -> pd.DataFrame:
        df = df.rename(columns={"date_time": "bid_date_time", "extra": "bid_extra"})
        return df.merge(auctions(), left_on="auction", right_on="id")

    cols = ["auction", "bidder", "price", "channel", "url", "bid_date_time", "bid_extra"]
    cols += ["item_name", "description", "initial_bid", "reserve", "auction_date_time"]
    cols += ["expires", "seller", "category", "auction_extra"]
    return Result(cols, _per_file(d, "bid", BID, shape))


_CHANNEL_IDS = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
_CHANNEL_ID_RE = re.compile(r"(&|^)channel_id=([^&]*)")


def _q21(d: Path) -> Result:
    def shape(df: pd.DataFrame) -> pd.DataFrame:
        def from_url(url: str | None) -> str | None:
            m = None if url is None else _CHANNEL_ID_RE.search(url)
            return m.group(2) if m and m.group(2) else None

        named = df["channel"].str.lower().map(_CHANNEL_IDS)
        from_urls = df["url"].map(from_url)
        channel_id = named.where(named.notna(), from_urls)
        return df.assign(channel_id=channel_id)[channel_id.notna()]

    cols = ["auction", "bidder", "price", "channel", "url"]
    return Result(
        ["auction", "bidder", "price", "channel", "channel_id"], _per_file(d, "bid", cols, shape)
    )


def _q22(d: Path) -> Result:
    def shape(df: pd.DataFrame) -> pd.DataFrame:
        pieces = df["url"].str.split("/")

        def piece(i: int) -> pd.Series:
            return pieces.map(lambda p: p[i] if p is not None and len(p) > i else None)

        return df.assign(dir1=piece(3), dir2=piece(4), dir3=piece(5))

    cols = ["auction", "bidder", "price", "channel", "url"]
    return Result(
        ["auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"],
        _per_file(d, "bid", cols, shape),
    )


_Q23_COLS = ["bidder", "price", "channel", "url", "bid_extra", "person_id", "name"]
_Q23_COLS += ["email_address", "credit_card", "city", "state", "person_date_time"]
_Q23_COLS += ["person_extra", "item_name", "description", "initial_bid", "reserve"]
_Q23_COLS += ["auction_date_time", "expires", "seller", "category", "auction_extra"]


def _q23(d: Path) -> Result:
    state: dict[str, pd.DataFrame] = {}

    def sides() -> tuple[pd.DataFrame, pd.DataFrame]:
        if not state:
            p = _kind(d, "person", PERSON).rename(
                columns={
                    "id": "person_id",
                    "date_time": "person_date_time",
                    "extra": "person_extra",
                }
            )
            a = _kind(d, "auction", AUCTION).drop(columns="id")
            state["p"] = p
            state["a"] = a.rename(
                columns={"date_time": "auction_date_time", "extra": "auction_extra"}
            )
        return state["p"], state["a"]

    def shape(df: pd.DataFrame) -> pd.DataFrame:
        p, a = sides()
        df = df.drop(columns=["auction", "date_time"]).rename(columns={"extra": "bid_extra"})
        j = df.merge(p, left_on="bidder", right_on="person_id")
        return j.merge(a, left_on="bidder", right_on="seller")

    return Result(_Q23_COLS, _per_file(d, "bid", BID, shape))


_REFERENCES: dict[str, Callable[[Path], Result]] = {
    f"q{i}": fn
    for i, fn in enumerate(
        [_q0, _q1, _q2, _q3, _q4, _q5, _q6, _q7, _q8, _q9, _q10, _q11, _q12, _q13, _q14, _q15]
        + [_q16, _q17, _q18, _q19, _q20, _q21, _q22, _q23]
    )
}


def reference(name: str, events_dir: Path, **params: int) -> Result:
    """The expected result of query `name` over the events in `events_dir`; `params`
    change a query's constants (q5: ``window_ms``, ``slide_ms``; q2: ``with_time``)."""
    if name not in _REFERENCES:
        raise KeyError(f"no reference for {name!r}; queries: {', '.join(_REFERENCES)}")
    return _REFERENCES[name](Path(events_dir), **params)
