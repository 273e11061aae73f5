"""Oracle tests for composed pipelines (>= 4 operators, with join + aggregate + top_k)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as hs
from pyspark.sql import Window
from pyspark.sql import functions as F

import sealtime as st
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import accumulate, as_of, assert_matches, inputs_frame, sealed_times

# Each example runs 25 independent workloads side by side (see workloads.py): the CI
# profile's 8 examples check 200 workloads per property.
N = examples(ci=8, dev=1, default=2)
B = 25


@spark_settings(N)
@given(left=W.source(workloads=B), right=W.source(schema=W.KW, value="w", workloads=B))
def test_filter_join_aggregate_top_k(spark, make_flow, left, right):
    """a.filter -> join b -> aggregate per key -> top_k over keys (5 operators)."""
    flow = make_flow()
    a = flow.source("a", left)
    b = flow.source("b", right)
    joined = a.filter("v >= 0").join(b, on=["ex", "k"])
    per_key = joined.with_columns(vw=F.col("v") * F.col("w")).aggregate(
        by=["ex", "k"], n=st.count(), total=st.sum("vw")
    )
    top = per_key.top_k(by="ex", order_by=["-total", "k"], k=2)
    flow.run()

    times = sealed_times(left, right)
    da = accumulate(as_of(spark, inputs_frame(spark, left), times)).filter("v >= 0")
    db = accumulate(as_of(spark, inputs_frame(spark, right), times))
    j = da.join(
        db, (da["ex"] == db["ex"]) & (da["k"] == db["k"]) & (da["__asof"] == db["__asof"])
    ).select(da["ex"], da["k"], da["__asof"], (da["v"] * db["w"]).alias("vw"))
    agg = j.groupBy("ex", "k", "__asof").agg(
        F.count(F.lit(1)).alias("n"), F.sum("vw").alias("total")
    )
    assert_matches(per_key.updates(), agg, per_key.columns, times)
    order = Window.partitionBy("ex", "__asof").orderBy(
        F.col("total").desc_nulls_last(), F.col("k").asc_nulls_first()
    )
    ranked = agg.withColumn("__r", F.row_number().over(order)).filter("__r <= 2")
    assert_matches(top.updates(), ranked, top.columns, times)


@spark_settings(N)
@given(
    left=W.source(max_time=9, workloads=B, times_per_tick=hs.sampled_from([4, 100])),
    other=W.source(max_time=9, workloads=B, times_per_tick=hs.sampled_from([4, 100])),
    right=W.source(schema=W.KW, value="w", retract=False, workloads=B, times_per_tick=100),
)
def test_union_window_aggregate_join_top_k(spark, make_flow, left, other, right):
    """union -> tumbling window aggregate -> left join -> top_k per window."""
    flow = make_flow()
    u = flow.source("a", left).union(flow.source("c", other))
    per_window = u.window(st.Tumbling(4)).aggregate(by=["ex", "k"], n=st.count(), hi=st.max("v"))
    names = flow.source("b", right).aggregate(by=["ex", "k"], w=st.max("w"))
    enriched = per_window.join(names, on=["ex", "k"], how="left")
    top = enriched.top_k(by=["ex", "window_start"], order_by=["-n", "k"], k=1)
    flow.run()

    times = sealed_times(left, other, right)
    raw = as_of(spark, inputs_frame(spark, left).unionByName(inputs_frame(spark, other)), times)
    start = F.col("_time") - F.pmod(F.col("_time"), F.lit(4))
    windowed = raw.withColumn("window_start", start).withColumn("window_end", start + 4)
    windowed = accumulate(windowed.drop("_time").withColumn("_time", F.lit(0)))
    # A window's aggregate exists from its end - 1 on (it is emitted when sealed).
    agg = (
        windowed.groupBy("window_start", "window_end", "ex", "k", "__asof")
        .agg(F.count(F.lit(1)).alias("n"), F.max("v").alias("hi"))
        .filter(F.col("window_end") - 1 <= F.col("__asof"))
    )
    db = accumulate(as_of(spark, inputs_frame(spark, right), times))
    db = db.groupBy("ex", "k", "__asof").agg(F.max("w").alias("w"))
    cond = (agg["ex"] == db["ex"]) & (agg["k"] == db["k"]) & (agg["__asof"] == db["__asof"])
    j = agg.join(db, cond, "left").select(
        agg["window_start"],
        agg["window_end"],
        agg["ex"],
        agg["k"],
        agg["n"],
        agg["hi"],
        db["w"],
        agg["__asof"],
    )
    assert_matches(enriched.updates(), j, enriched.columns, times)
    order = Window.partitionBy("ex", "window_start", "__asof").orderBy(
        F.col("n").desc(), F.col("k").asc_nulls_first()
    )
    ranked = j.withColumn("__r", F.row_number().over(order)).filter("__r <= 1")
    assert_matches(top.updates(), ranked, top.columns, times)
