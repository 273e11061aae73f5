"""Nexmark queries q0, q1, q2, q3, q4, q5, q7, q8, each written three ways.

* ``sealtime(nx)``: sealtime's dataflow API over the one Nexmark source collection
  ``nx`` (all three kinds in one flat table, the kind in ``_subsource``), event time
  ``date_time``;
* ``spark_ss(stream)``: Spark Structured Streaming over the file stream of the same
  Parquet files (``stream`` has no watermark; the windowed queries and q4 add `WATERMARK`);
* ``batch(events)``: a plain Spark batch query over all the events, the reference.

Every form returns the query's output columns `columns` (same names and order). Times
are compared as int64 milliseconds (Spark's timestamps and sealtime's window bounds);
`window_of` says which output column identifies the event-time window of a row (used to
check what Spark SS emitted in append mode, where a window appears only after the
watermark has passed its end).

The queries follow /work/shared/NEXMARK.md and the Nexmark SQL of the Flink
repository; choices where the descriptions leave room are written next to each query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

import sealtime as st

__all__ = [
    "AUCTION_COLUMNS",
    "BID_COLUMNS",
    "LATENESS",
    "PERSON_COLUMNS",
    "QUERIES",
    "Query",
    "WATERMARK",
    "WINDOW",
    "WINDOW_MS",
]

#: Bounded lateness (sealtime) and watermark delay (Spark SS); the Flink Nexmark DDL uses
#: ``WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND``.
LATENESS = "4s"
WATERMARK = "4 seconds"
WINDOW = "10 seconds"
SLIDE = "2 seconds"
WINDOW_MS = 10_000
SLIDE_MS = 2_000

PERSON_COLUMNS = ["id", "name", "email_address", "credit_card", "city", "state", "date_time"]
PERSON_COLUMNS += ["extra"]
AUCTION_COLUMNS = ["id", "item_name", "description", "initial_bid", "reserve", "date_time"]
AUCTION_COLUMNS += ["expires", "seller", "category", "extra"]
BID_COLUMNS = ["auction", "bidder", "price", "channel", "url", "date_time", "extra"]
_KIND_COLUMNS = {"person": PERSON_COLUMNS, "auction": AUCTION_COLUMNS, "bid": BID_COLUMNS}


def _kind_filter(kind: str) -> Column:
    return F.col("_subsource") == kind


def st_kind(nx, kind: str):
    """One kind of event from the sealtime source (what ``Nexmark``'s ``nx[kind]`` does)."""
    return nx.filter(_kind_filter(kind)).select(*_KIND_COLUMNS[kind])


def df_kind(events: DataFrame, kind: str) -> DataFrame:
    """One kind of event from a Spark DataFrame (streaming or batch) of the flat table."""
    return events.filter(_kind_filter(kind)).select(*_KIND_COLUMNS[kind])


def _ms(c: Column) -> Column:
    """A timestamp column as int64 ms since the epoch."""
    return F.unix_millis(c)


@dataclass(frozen=True)
class Query:
    name: str
    title: str
    columns: list[str]
    sealtime: Callable
    batch: Callable[[DataFrame], DataFrame]
    #: None when Spark SS cannot express the query (see `spark_ss_attempts`).
    spark_ss: Callable[[DataFrame], DataFrame] | None
    #: windowed queries: (output column, ms) — the row's window starts at the column's
    #: value (int64 ms) rounded down to a multiple of ms; every window is `WINDOW_MS` long
    window_of: tuple[str, int] | None = None
    #: when `spark_ss` is None: (output mode, builder) pairs that Spark SS refuses
    spark_ss_attempts: list[tuple[str, Callable[[DataFrame], DataFrame]]] = field(
        default_factory=list
    )
    note: str = ""


# ---------------------------------------------------------------- q0 pass-through
Q0_COLS = ["auction", "bidder", "price", "date_time", "extra"]


def q0_sealtime(nx):
    return st_kind(nx, "bid").select(*Q0_COLS)


def q0_df(events: DataFrame) -> DataFrame:
    return df_kind(events, "bid").select(*Q0_COLS)


# ---------------------------------------------------------------- q1 currency conversion
def _q1_price() -> Column:
    return (F.col("price") * F.lit(0.908)).alias("price")


def q1_sealtime(nx):
    return st_kind(nx, "bid").select("auction", "bidder", _q1_price(), "date_time", "extra")


def q1_df(events: DataFrame) -> DataFrame:
    return df_kind(events, "bid").select("auction", "bidder", _q1_price(), "date_time", "extra")


# ---------------------------------------------------------------- q2 selection
def q2_sealtime(nx):
    return st_kind(nx, "bid").filter(F.col("auction") % 123 == 0).select("auction", "price")


def q2_df(events: DataFrame) -> DataFrame:
    return df_kind(events, "bid").filter(F.col("auction") % 123 == 0).select("auction", "price")


# ---------------------------------------------------------------- q3 local item suggestion
# auction ⋈ person on seller = id, category 10, state in (OR, ID, CA); an unwindowed
# inner join (both systems keep all rows of both sides as state, like Flink's q3).
Q3_COLS = ["name", "city", "state", "id"]
Q3_STATES = ("OR", "ID", "CA")


def q3_sealtime(nx):
    auctions = (
        st_kind(nx, "auction")
        .filter(F.col("category") == 10)
        .select(F.col("seller").alias("pid"), F.col("id").alias("auction_id"))
    )
    persons = (
        st_kind(nx, "person")
        .filter(F.col("state").isin(*Q3_STATES))
        .select(F.col("id").alias("pid"), "name", "city", "state")
    )
    return auctions.join(persons, on="pid").select(
        "name", "city", "state", F.col("auction_id").alias("id")
    )


def q3_df(events: DataFrame) -> DataFrame:
    auctions = (
        df_kind(events, "auction")
        .filter(F.col("category") == 10)
        .select(F.col("seller").alias("a_seller"), F.col("id").alias("auction_id"))
    )
    persons = (
        df_kind(events, "person")
        .filter(F.col("state").isin(*Q3_STATES))
        .select(F.col("id").alias("pid"), "name", "city", "state")
    )
    return auctions.join(persons, F.col("a_seller") == F.col("pid")).select(
        "name", "city", "state", F.col("auction_id").alias("id")
    )


# ---------------------------------------------------------------- q4 average price per category
# max(price) of the bids of each auction made between its start and its expiry
# (inclusive, SQL BETWEEN), then the average of those maxima per category. The result is
# a changing table (a category's average changes as bids arrive): unwindowed, like Flink's.
def _q4_parts(auctions, bids):
    a = auctions.select(
        F.col("id").alias("auction"),
        "category",
        F.col("date_time").alias("a_time"),
        "expires",
    )
    b = bids.select("auction", "price", F.col("date_time").alias("b_time"))
    return a, b


_Q4_WHEN = "b_time >= a_time AND b_time <= expires"


def q4_sealtime(nx):
    a, b = _q4_parts(st_kind(nx, "auction"), st_kind(nx, "bid"))
    winning = a.join(b, on="auction").filter(_Q4_WHEN)
    per_auction = winning.aggregate(by=["auction", "category"], final=st.max("price"))
    return per_auction.aggregate(by="category", average=st.avg("final"))


def _q4_df(events: DataFrame) -> DataFrame:
    a, b = _q4_parts(df_kind(events, "auction"), df_kind(events, "bid"))
    b = b.withColumnRenamed("auction", "b_auction")
    winning = a.join(b, (F.col("auction") == F.col("b_auction")) & F.expr(_Q4_WHEN))
    per_auction = winning.groupBy("auction", "category").agg(F.max("price").alias("final"))
    return per_auction.groupBy("category").agg(F.avg("final").alias("average"))


def q4_batch(events: DataFrame) -> DataFrame:
    return _q4_df(events)


def q4_ss_watermarked(stream: DataFrame) -> DataFrame:
    return _q4_df(stream.withWatermark("date_time", WATERMARK))


# ---------------------------------------------------------------- q5 hot items
# bids per auction in sliding windows (10 s, slide 2 s); per window, the auctions whose
# count is the window's maximum (all of them on ties), as Flink's q5.
Q5_COLS = ["auction", "num", "window_start", "window_end"]


def q5_sealtime(nx):
    counts = (
        st_kind(nx, "bid").window(st.Sliding("10s", "2s")).aggregate(by="auction", num=st.count())
    )
    maxes = counts.aggregate(by=["window_start", "window_end"], maxn=st.max("num"))
    return (
        counts.join(maxes, on=["window_start", "window_end"])
        .filter(F.col("num") >= F.col("maxn"))
        .select(*Q5_COLS)
    )


def _q5_df(bids: DataFrame) -> DataFrame:
    counts = bids.groupBy(F.window("date_time", WINDOW, SLIDE).alias("window"), "auction").agg(
        F.count(F.lit(1)).alias("num")
    )
    maxes = counts.groupBy("window").agg(F.max("num").alias("maxn"))
    maxes = maxes.select(F.col("window").alias("max_window"), "maxn")
    return counts.join(
        maxes, (F.col("window") == F.col("max_window")) & (F.col("num") >= F.col("maxn"))
    ).select(
        "auction",
        "num",
        _ms(F.col("window.start")).alias("window_start"),
        _ms(F.col("window.end")).alias("window_end"),
    )


def q5_batch(events: DataFrame) -> DataFrame:
    return _q5_df(df_kind(events, "bid"))


def q5_ss(stream: DataFrame) -> DataFrame:
    return _q5_df(df_kind(stream.withWatermark("date_time", WATERMARK), "bid"))


# ---------------------------------------------------------------- q7 highest bid
# max(price) per 10 s tumbling window, joined back to the bids of that window with that
# price. (Flink's q7 joins on `dateTime BETWEEN window_end - 10 s AND window_end`, which
# also admits a bid at exactly the next window's start; here a bid belongs to its own
# tumbling window only, in all three forms.)
Q7_COLS = ["auction", "price", "bidder", "date_time", "extra"]


def q7_sealtime(nx):
    bids = st_kind(nx, "bid").select(*Q7_COLS).window(st.Tumbling("10s"))
    maxes = bids.aggregate(price=st.max("price"))
    return bids.join(maxes, on=["window_start", "window_end", "price"]).select(*Q7_COLS)


def _q7_df(bids: DataFrame) -> DataFrame:
    maxes = bids.groupBy(F.window("date_time", WINDOW).alias("window")).agg(
        F.max("price").alias("max_price")
    )
    maxes = maxes.select(F.col("window.start").alias("max_start"), "max_price")
    # The bid side carries the window start as a plain column: a second event-time
    # column (the window struct) next to date_time is refused by Spark SS
    # (MULTIPLE_EVENT_TIME_COLUMNS).
    keyed = bids.select(*Q7_COLS, F.window("date_time", WINDOW).start.alias("bid_start"))
    return keyed.join(
        maxes,
        (F.col("bid_start") == F.col("max_start")) & (F.col("price") == F.col("max_price")),
    ).select(*Q7_COLS)


def q7_batch(events: DataFrame) -> DataFrame:
    return _q7_df(df_kind(events, "bid"))


def q7_ss(stream: DataFrame) -> DataFrame:
    # The same join, written so that Spark SS can drop its state: both sides are keyed by
    # an event-time window (the bid's date_time is carried as a plain copy, since a side
    # may have one event-time column), and Spark SS drops a window's rows once the
    # watermark passes its end. Joined on the window start as a plain column, as the
    # batch form is, it kept every bid and ran its driver out of memory at 10M events.
    bids = df_kind(stream.withWatermark("date_time", WATERMARK), "bid").select(*Q7_COLS)
    maxes = bids.groupBy(F.window("date_time", WINDOW).alias("m_window")).agg(
        F.max("price").alias("max_price")
    )
    plain = F.timestamp_micros(F.unix_micros("date_time")).alias("date_time")
    keyed = bids.select(
        F.window("date_time", WINDOW).alias("b_window"),
        *[plain if c == "date_time" else F.col(c) for c in Q7_COLS],
    )
    return keyed.join(
        maxes,
        (F.col("b_window") == F.col("m_window")) & (F.col("price") == F.col("max_price")),
    ).select(*Q7_COLS)


# ---------------------------------------------------------------- q8 monitor new users
# persons and auctions in the same 10 s tumbling window, joined on person id = seller;
# both sides grouped per window first (Flink's q8), so a person with several auctions
# in the window appears once.
Q8_COLS = ["id", "name", "starttime"]


def q8_sealtime(nx):
    tumble = st.Tumbling("10s")
    persons = (
        st_kind(nx, "person")
        .window(tumble)
        .aggregate(by=["id", "name"], n=st.count())
        .select("id", "name", "window_start", "window_end")
    )
    sellers = (
        st_kind(nx, "auction")
        .window(tumble)
        .aggregate(by="seller", n=st.count())
        .select(F.col("seller").alias("id"), "window_start", "window_end")
    )
    return persons.join(sellers, on=["id", "window_start", "window_end"]).select(
        "id", "name", F.col("window_start").alias("starttime")
    )


def _q8_df(events: DataFrame) -> DataFrame:
    persons = (
        df_kind(events, "person")
        .groupBy("id", "name", F.window("date_time", WINDOW).alias("p_window"))
        .agg(F.count(F.lit(1)).alias("n"))
        .select("id", "name", "p_window")
    )
    sellers = (
        df_kind(events, "auction")
        .groupBy("seller", F.window("date_time", WINDOW).alias("a_window"))
        .agg(F.count(F.lit(1)).alias("n"))
        .select("seller", "a_window")
    )
    return persons.join(
        sellers,
        (F.col("id") == F.col("seller")) & (F.col("p_window") == F.col("a_window")),
    ).select("id", "name", _ms(F.col("p_window.start")).alias("starttime"))


def q8_batch(events: DataFrame) -> DataFrame:
    return _q8_df(events)


def q8_ss(stream: DataFrame) -> DataFrame:
    return _q8_df(stream.withWatermark("date_time", WATERMARK))


QUERIES: dict[str, Query] = {
    q.name: q
    for q in [
        Query("q0", "pass-through", Q0_COLS, q0_sealtime, q0_df, q0_df),
        Query(
            "q1",
            "currency conversion",
            ["auction", "bidder", "price", "date_time", "extra"],
            q1_sealtime,
            q1_df,
            q1_df,
        ),
        Query("q2", "selection", ["auction", "price"], q2_sealtime, q2_df, q2_df),
        Query("q3", "local item suggestion", Q3_COLS, q3_sealtime, q3_df, q3_df),
        Query(
            "q4",
            "average price per category",
            ["category", "average"],
            q4_sealtime,
            q4_batch,
            None,
            spark_ss_attempts=[
                ("append", q4_ss_watermarked),
                ("update", q4_ss_watermarked),
                ("complete", q4_ss_watermarked),
            ],
        ),
        Query(
            "q5",
            "hot items",
            Q5_COLS,
            q5_sealtime,
            q5_batch,
            q5_ss,
            window_of=("window_start", SLIDE_MS),
        ),
        Query(
            "q7",
            "highest bid",
            Q7_COLS,
            q7_sealtime,
            q7_batch,
            q7_ss,
            window_of=("date_time", WINDOW_MS),
        ),
        Query(
            "q8",
            "monitor new users",
            Q8_COLS,
            q8_sealtime,
            q8_batch,
            q8_ss,
            window_of=("starttime", WINDOW_MS),
        ),
    ]
}
