"""Window TVFs in SQL give the same windows as the Python API over generated bids.

The bid generator (`sealtime.sources.generator.Generator`, out-of-order and late events)
feeds one event-time source; each SQL view and its Python twin read it in the same
dataflow, and their updates (rows, times and multiplicities) must be identical.
A second test checks TUMBLE over ``DESCRIPTOR(_time)`` against an independent Spark
query (windows computed from the sealed inputs), with retractions.
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as hs
from pyspark.sql import functions as F

import sealtime as st
from sealtime.sources.generator import Generator
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import (
    accumulate,
    as_of,
    assert_matches,
    inputs_frame,
    sealed_times,
)

TUMBLE = """
SELECT window_start, window_end, auction, COUNT(*) AS n, SUM(price) AS total,
       MAX(price) AS hi, COUNT(DISTINCT bidder) AS bidders
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(date_time), INTERVAL '2' SECOND))
GROUP BY window_start, window_end, auction
"""

HOP = """
SELECT window_start, window_end, channel, MIN(price) AS lo, AVG(price) AS mean
FROM HOP(TABLE bids, DESCRIPTOR(date_time), INTERVAL '500' MILLISECONDS, INTERVAL '2' SECONDS)
WHERE price > 1000
GROUP BY window_start, window_end, channel
"""

SESSION = """
SELECT window_start, window_end, bidder, COUNT(*) AS n, SUM(price) AS total
FROM TABLE(SESSION(TABLE bids PARTITION BY bidder, DESCRIPTOR(date_time), INTERVAL '300' MILLISECOND))
GROUP BY window_start, window_end, bidder
"""

TOP3 = """
SELECT window_start, window_end, auction, price FROM (
  SELECT window_start, window_end, auction, price, bidder,
         ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn
  FROM TUMBLE(TABLE bids, DESCRIPTOR(date_time), INTERVAL '1' SECOND)
) WHERE rn <= 3
"""


def _same(sql_col, py_col) -> None:
    a, b = sql_col.updates(), py_col.updates()
    assert sql_col.columns == py_col.columns
    assert a.num_rows > 0
    assert a.to_pylist() == b.select(a.column_names).to_pylist()


def test_window_tvfs_equal_python_api(make_flow):
    flow = make_flow()
    gen = Generator(
        seed=7,
        limit=3000,
        rate=1000,
        out_of_order="200ms",
        late_fraction=0.01,
        late_by="3s",
        max_per_read=1000,
        auctions=20,
        bidders=30,
    )
    bids = flow.source("bids", gen, time="date_time", lateness="500ms")
    pairs = [
        (
            flow.sql(TUMBLE),
            bids.window(st.Tumbling("2s")).aggregate(
                by="auction",
                n=st.count(),
                total=st.sum("price"),
                hi=st.max("price"),
                bidders=st.count_distinct("bidder"),
            ),
        ),
        (
            flow.sql(HOP),
            bids.filter("price > 1000")
            .window(st.Sliding("2s", "500ms"))
            .aggregate(by="channel", lo=st.min("price"), mean=st.avg("price")),
        ),
        (
            flow.sql(SESSION),
            bids.window(st.Session("300ms")).aggregate(
                by="bidder", n=st.count(), total=st.sum("price")
            ),
        ),
        (
            flow.sql(TOP3),
            bids.window(st.Tumbling("1s"))
            .select("window_start", "window_end", "auction", "price", "bidder")
            .top_k(order_by="-price", k=3)
            .select("window_start", "window_end", "auction", "price"),
        ),
    ]
    flow.run()
    assert flow.metrics()["sources"]["bids"]["late"] > 0  # late rows exist and are routed
    for sql_col, py_col in pairs:
        _same(sql_col, py_col)
    # each window once, when sealed: append-only at window_end - 1
    rows = pairs[0][0].updates().to_pylist()
    assert all(r["_diff"] == 1 and r["_time"] == r["window_end"] - 1 for r in rows)


def _window_oracle(d, size):
    start = F.col("_time") - F.pmod(F.col("_time"), F.lit(size))
    return d.withColumn("window_start", start).withColumn("window_end", start + size)


@spark_settings(examples(ci=4, dev=1, default=1))
@given(src=W.source(max_time=12), size=hs.integers(1, 5))
def test_tumble_over_logical_time_equals_spark(spark, make_flow, src, size):
    assume(src.table.num_rows > 8)  # (not hypothesis' all-empty first example)
    flow = make_flow()
    flow.source("s", src)
    out = flow.sql(
        f"SELECT window_start, window_end, ex, k, COUNT(*) AS n, SUM(v) AS total "
        f"FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(_time), INTERVAL '{size}' MILLISECOND)) "
        "GROUP BY ex, k, window_start, window_end"
    )
    flow.run()
    times = sealed_times(src)
    # Independent oracle: window every input update by its time, accumulate, keep the
    # windows sealed at each time (a windowed aggregate emits a window once, when sealed).
    raw = _window_oracle(as_of(spark, inputs_frame(spark, src), times), size)
    rows = accumulate(raw.drop("_time").withColumn("_time", F.lit(0)))
    batch = (
        rows.filter(F.col("window_end") - 1 <= F.col("__asof"))
        .groupBy("window_start", "window_end", "ex", "k", "__asof")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
    )
    assert_matches(out.updates(), batch, out.columns, times)
