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


# ================================================================ the fair harness
#
# Spark Structured Streaming's best formulation of each query, as a Spark expert would
# write it (bench/nexmark.py's default mode; the forms above are `--literal`). Every
# form reads the same file stream (`stream`: the flat table, no watermark yet) and
# returns a streaming DataFrame; `per_batch` (if any) runs inside `foreachBatch` on each
# micro-batch before the sink. The comment on each says why it is the best form.


@dataclass(frozen=True)
class SparkSS:
    """A Spark SS formulation of a query (see above)."""

    build: Callable[..., DataFrame]
    why: str
    mode: str = "append"
    per_batch: Callable[[DataFrame], DataFrame] | None = None
    #: windowed results: the columns whose values identify a row's window; append mode
    #: emits a window only once the watermark passes it, so only emitted windows compare
    window: list[str] | None = None
    #: update mode: the final contents are the last row emitted per key
    upsert_key: list[str] | None = None
    #: session settings the form needs (e.g. a RocksDB state store for transformWithState)
    conf: dict[str, str] = field(default_factory=dict)


def _bids(stream: DataFrame, watermark: bool = False) -> DataFrame:
    s = stream.withWatermark("date_time", WATERMARK) if watermark else stream
    return df_kind(s, "bid")


def _ss_q0(stream, base_dir=None):
    return _bids(stream).select(*Q0_COLS)


def _ss_q1(stream, base_dir=None):
    # The SQL file's `0.908 * price`: an exact DECIMAL(24, 3), in both systems.
    return _bids(stream).select(
        "auction", "bidder", F.expr("0.908 * price").alias("price"), "date_time", "extra"
    )


def _ss_q2(stream, base_dir=None):
    return _bids(stream).filter(F.expr("auction % 123 = 0")).select("auction", "price")


def _ss_q3(stream, base_dir=None):
    # A stream-stream inner join without watermarks: both sides are kept for ever, as
    # the query (and Flink's q3) needs. Filtering before the join is what Spark's
    # optimizer does anyway.
    return q3_df(stream)


def _ss_q5(stream, base_dir=None):
    # One windowed count (the literal form computes it twice and joins the two in a
    # stream-stream join): in append mode a window's counts all arrive in the one
    # micro-batch whose watermark passes the window, so each window's maximum can be
    # taken in that batch (`_ss_q5_batch`), exactly.
    counts = (
        _bids(stream, watermark=True)
        .groupBy(F.window("date_time", WINDOW, SLIDE).alias("w"), "auction")
        .agg(F.count(F.lit(1)).alias("num"))
    )
    return counts.select(
        "auction",
        "num",
        _ms(F.col("w.start")).alias("starttime"),
        _ms(F.col("w.end")).alias("endtime"),
    )


def _ss_q5_batch(batch: DataFrame) -> DataFrame:
    from pyspark.sql import Window

    w = Window.partitionBy("starttime")
    return (
        batch.withColumn("maxn", F.max("num").over(w))
        .filter("num >= maxn")
        .select("auction", "num", "starttime", "endtime")
    )


def _ss_q7(stream, base_dir=None):
    # One windowed aggregate: the highest bid of each window as max(struct(price, ...))
    # (the literal form scans the bids twice and keeps every bid in join state). The
    # struct's order breaks a tie on price by the later time, then the other columns,
    # so on a tie it returns one bid where q7 wants all tied bids; the check compares
    # with the reference, which keeps all of them, so a tie would show as a missing row.
    top = (
        _bids(stream, watermark=True)
        .groupBy(F.window("date_time", WINDOW).alias("w"))
        .agg(F.max(F.struct("price", "date_time", "auction", "bidder", "extra")).alias("b"))
    )
    return top.select("b.auction", "b.price", "b.bidder", "b.date_time", "b.extra")


def _ss_q8(stream, base_dir=None):
    # One aggregation over the union of persons and sellers per (window, id), instead
    # of two windowed aggregates and a stream-stream join: a window's person and seller
    # rows meet in one group; the group is a match when it holds both kinds.
    s = stream.withWatermark("date_time", WATERMARK)
    people = df_kind(s, "person").select("id", "name", "date_time", F.lit(1).alias("is_person"))
    sellers = df_kind(s, "auction").select(
        F.col("seller").alias("id"),
        F.lit(None).cast("string").alias("name"),
        "date_time",
        F.lit(0).alias("is_person"),
    )
    g = (
        people.unionByName(sellers)
        .groupBy(F.window("date_time", WINDOW).alias("w"), "id")
        .agg(
            F.max("name").alias("name"),
            F.max("is_person").alias("p"),
            F.min("is_person").alias("a"),
        )
    )
    return g.filter("p = 1 AND a = 0").select(
        "id", "name", _ms(F.col("w.start")).alias("starttime")
    )


def _ss_q10(stream, base_dir=None):
    return _bids(stream).select(
        "auction",
        "bidder",
        "price",
        "date_time",
        "extra",
        F.date_format("date_time", "yyyy-MM-dd").alias("dt"),
        F.date_format("date_time", "HH:mm").alias("hm"),
    )


def _ss_q11(stream, base_dir=None):
    # Spark's session windows (3.2+): gap 10 s, end = last event + gap, as q11's.
    g = (
        _bids(stream, watermark=True)
        .groupBy(F.session_window("date_time", WINDOW).alias("w"), "bidder")
        .agg(F.count(F.lit(1)).alias("bid_count"))
    )
    return g.select(
        "bidder",
        "bid_count",
        _ms(F.col("w.start")).alias("starttime"),
        _ms(F.col("w.end")).alias("endtime"),
    )


def _ss_q12(stream, base_dir=None):
    g = (
        _bids(stream, watermark=True)
        .groupBy(F.window("date_time", WINDOW).alias("w"), "bidder")
        .agg(F.count(F.lit(1)).alias("bid_count"))
    )
    return g.select(
        "bidder",
        "bid_count",
        _ms(F.col("w.start")).alias("starttime"),
        _ms(F.col("w.end")).alias("endtime"),
    )


def _ss_q13(stream, base_dir=None):
    # A stream-static join with the side table broadcast: Spark's lookup-join idiom.
    from pathlib import Path

    spark = stream.sparkSession
    side = spark.read.parquet(str(Path(base_dir) / "side_input")).select("key", "value")
    return (
        _bids(stream)
        .join(F.broadcast(side), F.expr("auction % 10000 = key"))
        .select("auction", "bidder", "price", "date_time", "value")
    )


def _ss_q14(stream, base_dir=None):
    # The same registered function `count_char` as the SQL file (bench/nexmark_sql.py);
    # q14 is about a scalar UDF, so both systems call one.
    return (
        _bids(stream)
        .filter(F.expr("0.908 * price > 1000000 AND 0.908 * price < 50000000"))
        .select(
            "auction",
            "bidder",
            F.expr("0.908 * price").alias("price"),
            F.expr(
                "CASE WHEN hour(date_time) >= 8 AND hour(date_time) <= 18 THEN 'dayTime' "
                "WHEN hour(date_time) <= 6 OR hour(date_time) >= 20 THEN 'nightTime' "
                "ELSE 'otherTime' END"
            ).alias("bidTimeType"),
            "date_time",
            "extra",
            F.expr("count_char(extra, 'c')").alias("c_counts"),
        )
    )


def _ss_q20(stream, base_dir=None):
    # A stream-stream inner join without time bounds (the query has none): both sides
    # are kept for ever, as in sealtime and Flink.
    a = (
        df_kind(stream, "auction")
        .filter("category = 10")
        .select(
            "id",
            "item_name",
            "description",
            "initial_bid",
            "reserve",
            F.col("date_time").alias("auction_date_time"),
            "expires",
            "seller",
            "category",
            F.col("extra").alias("auction_extra"),
        )
    )
    b = _bids(stream).select(
        "auction",
        "bidder",
        "price",
        "channel",
        "url",
        F.col("date_time").alias("bid_date_time"),
        F.col("extra").alias("bid_extra"),
    )
    return b.join(a, F.col("auction") == F.col("id")).drop("id")


def _ss_q21(stream, base_dir=None):
    cid = "regexp_extract(url, '(&|^)channel_id=([^&]*)', 2)"
    return (
        _bids(stream)
        .filter(
            F.expr(f"{cid} <> '' OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')")
        )
        .select(
            "auction",
            "bidder",
            "price",
            "channel",
            F.expr(
                "CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1' "
                "WHEN lower(channel) = 'facebook' THEN '2' WHEN lower(channel) = 'baidu' THEN '3' "
                f"ELSE {cid} END"
            ).alias("channel_id"),
        )
    )


def _ss_q22(stream, base_dir=None):
    return _bids(stream).select(
        "auction",
        "bidder",
        "price",
        "channel",
        *[
            F.expr(f"try_element_at(split(url, '/'), {i + 1})").alias(f"dir{i - 2}")
            for i in (3, 4, 5)
        ],
    )


def _ss_q23(stream, base_dir=None):
    # Two stream-stream inner joins (append mode; Spark has run several since 3.x).
    b = _bids(stream).select("bidder", "price", "channel", "url", F.col("extra").alias("bid_extra"))
    p = df_kind(stream, "person").select(
        F.col("id").alias("person_id"),
        "name",
        "email_address",
        "credit_card",
        "city",
        "state",
        F.col("date_time").alias("person_date_time"),
        F.col("extra").alias("person_extra"),
    )
    a = df_kind(stream, "auction").select(
        "item_name",
        "description",
        "initial_bid",
        "reserve",
        F.col("date_time").alias("auction_date_time"),
        "expires",
        "seller",
        "category",
        F.col("extra").alias("auction_extra"),
    )
    return b.join(p, F.col("person_id") == F.col("bidder")).join(
        a, F.col("seller") == F.col("bidder")
    )


SPARK_SS: dict[str, SparkSS] = {
    "q0": SparkSS(_ss_q0, "projection"),
    "q1": SparkSS(_ss_q1, "projection with the SQL's decimal product"),
    "q2": SparkSS(_ss_q2, "filter and projection"),
    "q3": SparkSS(_ss_q3, "unwindowed stream-stream inner join (both sides kept)"),
    "q5": SparkSS(
        _ss_q5,
        "one windowed count; each window's maximum taken in foreachBatch (exact in append mode)",
        per_batch=_ss_q5_batch,
        window=["starttime"],
    ),
    "q7": SparkSS(
        _ss_q7,
        "one windowed max(struct(price, ...)); exact unless a window's top price ties",
        window=["date_time"],
    ),
    "q8": SparkSS(
        _ss_q8,
        "one windowed aggregation over the union of persons and sellers",
        window=["starttime"],
    ),
    "q10": SparkSS(_ss_q10, "projection with date_format"),
    "q11": SparkSS(_ss_q11, "session_window count per bidder", window=["bidder", "starttime"]),
    "q12": SparkSS(_ss_q12, "tumbling-window count per bidder (event time)", window=["starttime"]),
    "q13": SparkSS(_ss_q13, "stream-static join, side table broadcast"),
    "q14": SparkSS(_ss_q14, "filter, CASE and the same count_char pandas UDF"),
    "q20": SparkSS(_ss_q20, "unwindowed stream-stream inner join"),
    "q21": SparkSS(_ss_q21, "CASE and regexp_extract"),
    "q22": SparkSS(_ss_q22, "split and try_element_at"),
    "q23": SparkSS(_ss_q23, "two unwindowed stream-stream inner joins"),
}


_RANK_FILTERS = {
    "rank1": "price < 10000",
    "rank2": "price >= 10000 AND price < 1000000",
    "rank3": "price >= 1000000",
}


def _ss_q17(stream, base_dir=None):
    # An unwindowed aggregate in update mode; FILTER (WHERE ...) is Spark SQL's own.
    b = _bids(stream).withColumn("day", F.date_format("date_time", "yyyy-MM-dd"))
    return b.groupBy("auction", "day").agg(
        F.count(F.lit(1)).alias("total_bids"),
        *[
            F.expr(f"count(*) FILTER (WHERE {c})").alias(f"{r}_bids")
            for r, c in _RANK_FILTERS.items()
        ],
        F.min("price").alias("min_price"),
        F.max("price").alias("max_price"),
        F.avg("price").alias("avg_price"),
        F.sum("price").alias("sum_price"),
    )


def _ss_q15_distinct(stream, base_dir=None, keys=("day",)):
    b = _bids(stream).withColumn("day", F.date_format("date_time", "yyyy-MM-dd"))
    aggs = [F.count(F.lit(1)).alias("total_bids")]
    aggs += [
        F.expr(f"count(*) FILTER (WHERE {c})").alias(f"{r}_bids") for r, c in _RANK_FILTERS.items()
    ]
    for what, col in (("bidders", "bidder"), ("auctions", "auction")):
        aggs.append(F.countDistinct(col).alias(f"total_{what}"))
        aggs += [
            F.expr(f"count(DISTINCT {col}) FILTER (WHERE {c})").alias(f"{r}_{what}")
            for r, c in _RANK_FILTERS.items()
        ]
    return b.groupBy(*keys).agg(*aggs)


def _ss_q16_distinct(stream, base_dir=None):
    return _ss_q15_distinct(stream, base_dir, keys=("channel", "day"))


def _ss_row_number(partition: list[str], order: str, k: int, join_auctions: bool = False):
    """ROW_NUMBER() OVER (PARTITION BY `partition` ORDER BY `order`) <= k over the bids
    (or, `join_auctions`, over bids joined to their auction within its lifetime)."""

    def build(stream, base_dir=None):
        from pyspark.sql import Window

        rows = _bids(stream)
        if join_auctions:
            a = df_kind(stream, "auction").select(
                F.col("id"), F.col("date_time").alias("a_time"), "expires"
            )
            rows = a.join(rows, F.expr("id = auction AND date_time BETWEEN a_time AND expires"))
        # one sort expression per key ("price DESC, date_time ASC" is two)
        w = Window.partitionBy(*partition).orderBy(*(F.expr(o) for o in order.split(",")))
        return rows.withColumn("rank_number", F.row_number().over(w)).filter(
            F.col("rank_number") <= k
        )

    return build


def _ss_q6_over(stream, base_dir=None):
    from pyspark.sql import Window

    a = df_kind(stream, "auction").select(
        "id", "seller", F.col("date_time").alias("a_time"), "expires"
    )
    b = _bids(stream).select("auction", "price", F.col("date_time").alias("b_time"))
    j = a.join(b, F.expr("id = auction AND b_time BETWEEN a_time AND expires"))
    winners = j.groupBy("id", "seller").agg(F.max(F.struct("price", "b_time")).alias("w"))
    over = Window.partitionBy("seller").orderBy("w.b_time").rowsBetween(-10, 0)
    return winners.select("seller", F.avg("w.price").over(over).alias("avg_price"))


#: Spark SS formulations that Spark refuses: (what was tried, output mode, builder).
SPARK_SS_REFUSED: dict[str, list[tuple[str, str, Callable[..., DataFrame]]]] = {
    "q6": [("max per auction, then AVG OVER 11 rows per seller", "update", _ss_q6_over)],
    "q9": [
        (
            "ROW_NUMBER over the join",
            "append",
            _ss_row_number(["id"], "price DESC, date_time ASC", 1, join_auctions=True),
        )
    ],
    "q15": [("COUNT(DISTINCT) with FILTER per day", "update", _ss_q15_distinct)],
    "q16": [("COUNT(DISTINCT) with FILTER per (channel, day)", "update", _ss_q16_distinct)],
    "q18": [
        (
            "ROW_NUMBER, keep 1",
            "update",
            _ss_row_number(["bidder", "auction"], "date_time DESC", 1),
        )
    ],
    "q19": [
        (
            "ROW_NUMBER, keep 10",
            "update",
            _ss_row_number(["auction"], "price DESC, date_time ASC", 10),
        )
    ],
}
SPARK_SS["q17"] = SparkSS(
    _ss_q17,
    "unwindowed aggregate in update mode, FILTER counts",
    mode="update",
    upsert_key=["auction", "day"],
)


# ---------------------------------------------------------------- q4 with transformWithState
# Spark SS refuses q4's join and two aggregates in every output mode (the literal form,
# above). The suggestion: transformWithStateInPandas over the flat stream keyed
# by auction, then a grouped sum in update mode. Per auction the processor keeps the
# auction's category and lifetime, its highest bid so far, and the bids that arrived
# before it (dropped once the watermark passes them: an auction starting before a bid
# that is below the watermark would itself be late). When the highest bid rises it
# emits the change for the category: (category, rise of the sum of maxima, 1 if it is
# the auction's first bid). The category's average is sum / count of those changes.
Q4_DELTAS = "category long, d_sum long, d_count long"


def _q4_processor():
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor

    class Q4Max(StatefulProcessor):
        def init(self, handle) -> None:
            self.handle = handle
            self.info = handle.getValueState("info", "category long, start long, expires long")
            self.best = handle.getValueState("best", "price long")
            self.early = handle.getListState("early", "b_time long, price long")

        def handleInputRows(self, key, rows, timerValues):
            df = pd.concat(list(rows), ignore_index=True)
            wm = timerValues.getCurrentWatermarkInMs()
            auctions = df[df["kind"] == "auction"]
            bids = df[df["kind"] == "bid"][["b_time", "price"]]
            if len(auctions):
                a = auctions.iloc[0]
                self.info.update((int(a["category"]), int(a["a_time"]), int(a["expires"])))
                # the auction's state goes once no bid in its lifetime can arrive
                self.handle.registerTimer(int(a["expires"]) + 1)
            if not self.info.exists():
                keep = bids[bids["b_time"] >= wm]
                if len(keep):
                    self.early.appendList(list(keep.itertuples(index=False, name=None)))
                    self.handle.registerTimer(int(keep["b_time"].max()) + 1)
                return iter([])
            category, start, expires = self.info.get()
            if self.early.exists():
                early = pd.DataFrame(list(self.early.get()), columns=["b_time", "price"])
                bids = pd.concat([x for x in (bids, early) if len(x)] or [bids], ignore_index=True)
                self.early.clear()
            bids = bids[(bids["b_time"] >= start) & (bids["b_time"] <= expires)]
            if not len(bids):
                return iter([])
            top = int(bids["price"].max())
            old = self.best.get()[0] if self.best.exists() else None
            if old is not None and top <= old:
                return iter([])
            self.best.update((top,))
            delta = pd.DataFrame(
                {"category": [category], "d_sum": [top - (old or 0)], "d_count": [int(old is None)]}
            )
            return iter([delta])

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            info = self.info.get() if self.info.exists() else None
            if info is None or timerValues.getCurrentWatermarkInMs() > info[2]:
                self.info.clear()
                self.best.clear()
                self.early.clear()
            return iter([])

        def close(self) -> None:
            pass

    return Q4Max()


def _q4_keyed(stream: DataFrame) -> DataFrame:
    s = stream.withWatermark("date_time", WATERMARK)
    auctions = df_kind(s, "auction").select(
        F.col("id").alias("key"),
        F.lit("auction").alias("kind"),
        "category",
        _ms(F.col("date_time")).alias("a_time"),
        _ms(F.col("expires")).alias("expires"),
        F.lit(None).cast("long").alias("b_time"),
        F.lit(None).cast("long").alias("price"),
        "date_time",
    )
    bids = df_kind(s, "bid").select(
        F.col("auction").alias("key"),
        F.lit("bid").alias("kind"),
        F.lit(None).cast("long").alias("category"),
        F.lit(None).cast("long").alias("a_time"),
        F.lit(None).cast("long").alias("expires"),
        _ms(F.col("date_time")).alias("b_time"),
        "price",
        "date_time",
    )
    return auctions.unionByName(bids)


def _ss_q4_tws(stream, base_dir=None):
    deltas = (
        _q4_keyed(stream)
        .groupBy("key")
        .transformWithStateInPandas(
            statefulProcessor=_q4_processor(),
            outputStructType=Q4_DELTAS,
            outputMode="Append",
            timeMode="EventTime",
        )
    )
    g = deltas.groupBy("category").agg(F.sum("d_sum").alias("s"), F.sum("d_count").alias("n"))
    return g.select("category", (F.col("s") / F.col("n")).alias("average"))


_ROCKSDB = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    )
}


def _ss_q4_literal(stream, base_dir=None):
    """The literal form (join, max per auction, avg per category) in the refused
    builders' signature."""
    return q4_ss_watermarked(stream)


SPARK_SS_REFUSED["q4"] = [
    ("join, max per auction, avg per category (literal)", mode, _ss_q4_literal)
    for mode in ("append", "update", "complete")
]
# It runs (Spark's checker accepts a stateful aggregation after transformWithState in
# update mode) and its last row per category equals the reference: q4's best form.
SPARK_SS["q4"] = SparkSS(
    _ss_q4_tws,
    "transformWithStateInPandas keyed by auction (max while open, emitted as changes), "
    "then sum and count per category in update mode",
    mode="update",
    upsert_key=["category"],
    conf=_ROCKSDB,
)
