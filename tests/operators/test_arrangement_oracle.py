"""Oracle properties for the arrangement-backed operators: at every sealed time the
accumulated output equals a plain Spark batch query, whatever the number of hash
partitions (1, 3 or 8), with retractions and with many times of one key in one tick."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as hs
from pyspark.sql import Window
from pyspark.sql import functions as F

import sealtime as st
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import accumulate, as_of, assert_matches, inputs_frame, sealed_times

N = examples(ci=4, dev=1, default=1)
PARTITIONS = hs.sampled_from([1, 3, 8])
# Few keys, many times, all in one tick: each key has many times per tick.
DENSE = {"max_time": 30, "max_rows": 14, "times_per_tick": hs.sampled_from([100, 7])}


def check(spark, make_flow, partitions, sources, build, batch):
    flow = make_flow(shuffle_partitions=partitions)
    cols = [flow.source(f"s{i}", src) for i, src in enumerate(sources)]
    out = build(*cols)
    flow.run()
    times = sealed_times(*sources)
    ins = [accumulate(as_of(spark, inputs_frame(spark, s), times)) for s in sources]
    assert_matches(out.updates(), batch(*ins), out.columns, times)


@spark_settings(N)
@given(src=W.source(**DENSE), partitions=PARTITIONS)
def test_accumulable_aggregate(spark, make_flow, src, partitions):
    def build(c):
        x = c.with_columns(x=F.col("v") / 3.0)
        return x.aggregate(
            by=["ex", "k"],
            n=st.count(),
            total=st.sum("v"),
            xs=st.sum("x"),
            mean=st.avg("x"),
        )

    def batch(d):
        return d.groupBy("ex", "k", "__asof").agg(
            F.count(F.lit(1)).alias("n"),
            F.sum("v").alias("total"),
            F.sum(F.col("v") / 3.0).alias("xs"),
            F.avg(F.col("v") / 3.0).alias("mean"),
        )

    check(spark, make_flow, partitions, [src], build, batch)


@spark_settings(N)
@given(src=W.source(**DENSE), partitions=PARTITIONS)
def test_min_max_count_distinct_under_retractions(spark, make_flow, src, partitions):
    def build(c):
        return c.aggregate(
            by=["ex", "k"], lo=st.min("v"), hi=st.max("v"), kinds=st.count_distinct("v")
        )

    def batch(d):
        return d.groupBy("ex", "k", "__asof").agg(
            F.min("v").alias("lo"), F.max("v").alias("hi"), F.countDistinct("v").alias("kinds")
        )

    check(spark, make_flow, partitions, [src], build, batch)


@spark_settings(N)
@given(src=W.source(retract=False, **DENSE), partitions=PARTITIONS)
def test_min_max_of_append_only_input(spark, make_flow, src, partitions):
    def build(c):
        return c.aggregate(by="ex", lo=st.min("k"), hi=st.max("v"), n=st.count())

    def batch(d):
        return d.groupBy("ex", "__asof").agg(
            F.min("k").alias("lo"), F.max("v").alias("hi"), F.count(F.lit(1)).alias("n")
        )

    check(spark, make_flow, partitions, [src], build, batch)


@spark_settings(N)
@given(src=W.source(**DENSE), partitions=PARTITIONS)
def test_distinct(spark, make_flow, src, partitions):
    check(spark, make_flow, partitions, [src], lambda c: c.distinct(), lambda d: d.distinct())


@spark_settings(N)
@given(
    left=W.source(**DENSE),
    right=W.source(schema=W.KW, value="w", **DENSE),
    partitions=PARTITIONS,
    how=hs.sampled_from(["inner", "left"]),
)
def test_join(spark, make_flow, left, right, partitions, how):
    def batch(da, db):
        cond = (da["ex"] == db["ex"]) & (da["k"] == db["k"]) & (da["__asof"] == db["__asof"])
        return da.join(db, cond, how).select(da["ex"], da["k"], da["v"], db["w"], da["__asof"])

    check(
        spark,
        make_flow,
        partitions,
        [left, right],
        lambda a, b: a.join(b, on=["ex", "k"], how=how),
        batch,
    )


@spark_settings(N)
@given(src=W.source(**DENSE), partitions=PARTITIONS, k=hs.integers(1, 3))
def test_top_k(spark, make_flow, src, partitions, k):
    def batch(d):
        w = Window.partitionBy("ex", "__asof").orderBy(
            F.col("v").desc_nulls_last(), F.col("k").asc_nulls_first()
        )
        return d.withColumn("__r", F.row_number().over(w)).filter(F.col("__r") <= k).drop("__r")

    check(
        spark,
        make_flow,
        partitions,
        [src],
        lambda c: c.top_k(by="ex", order_by=["-v", "k"], k=k),
        batch,
    )
