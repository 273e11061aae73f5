"""Oracle tests, one per operator: at every sealed time the accumulated output equals a
plain Spark batch query over the inputs with time <= that time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as hs
from pyspark.sql import Window
from pyspark.sql import functions as F

import sealtime as st
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import accumulate, as_of, assert_matches, inputs_frame, sealed_times

N = examples(ci=5, dev=2, default=2)  # x 10 workloads per example (see workloads.py)


def run_one(spark, make_flow, src, build, batch):
    flow = make_flow()
    col = build(flow.source("s", src))
    flow.run()
    times = sealed_times(src)
    inp = accumulate(as_of(spark, inputs_frame(spark, src), times))
    assert_matches(col.updates(), batch(inp), col.columns, times)


@spark_settings(N)
@given(src=W.source())
def test_stateless_chain(spark, make_flow, src):
    def build(c):
        return c.filter("v > 0").with_columns(v2=F.col("v") * 10).select("ex", "k", "v2")

    def batch(d):
        return d.filter("v > 0").withColumn("v2", F.col("v") * 10).select("ex", "k", "v2", "__asof")

    run_one(spark, make_flow, src, build, batch)


@spark_settings(N)
@given(src=W.source())
def test_flat_map(spark, make_flow, src):
    def build(c):
        return c.flat_map(x=F.array(F.col("v"), F.col("v") + 1))

    def batch(d):
        return d.withColumn("x", F.explode(F.array(F.col("v"), F.col("v") + 1)))

    run_one(spark, make_flow, src, build, batch)


@spark_settings(N)
@given(src=W.source())
def test_consolidate_and_negate(spark, make_flow, src):
    # negate twice is the identity; consolidate does not change accumulations.
    run_one(spark, make_flow, src, lambda c: c.negate().negate().consolidate(), lambda d: d)


@spark_settings(N)
@given(src=W.source(), by_key=hs.booleans())
def test_aggregate(spark, make_flow, src, by_key):
    by = ["ex", "k"] if by_key else ["ex"]

    def build(c):
        return c.aggregate(
            by=by,
            n=st.count(),
            total=st.sum("v"),
            lo=st.min("v"),
            hi=st.max("v"),
            mean=st.avg("v"),
            kinds=st.count_distinct("v"),
        )

    def batch(d):
        return d.groupBy(*by, "__asof").agg(
            F.count(F.lit(1)).alias("n"),
            F.sum("v").alias("total"),
            F.min("v").alias("lo"),
            F.max("v").alias("hi"),
            F.avg("v").alias("mean"),
            F.countDistinct("v").alias("kinds"),
        )

    run_one(spark, make_flow, src, build, batch)


@spark_settings(N)
@given(src=W.source())
def test_distinct(spark, make_flow, src):
    run_one(spark, make_flow, src, lambda c: c.distinct(), lambda d: d.distinct())


@spark_settings(N)
@given(src=W.source(), k=hs.integers(1, 3), desc=hs.booleans())
def test_top_k(spark, make_flow, src, k, desc):
    order = "-v" if desc else "v"

    def batch(d):
        o = F.col("v").desc_nulls_last() if desc else F.col("v").asc_nulls_first()
        w = Window.partitionBy("ex", "k", "__asof").orderBy(o, F.col("ex"))
        return d.withColumn("__r", F.row_number().over(w)).filter(F.col("__r") <= k)

    run_one(spark, make_flow, src, lambda c: c.top_k(by=["ex", "k"], order_by=order, k=k), batch)


@spark_settings(N)
@given(
    left=W.source(), right=W.source(schema=W.KW, value="w"), how=hs.sampled_from(["inner", "left"])
)
def test_join(spark, make_flow, left, right, how):
    flow = make_flow()
    a = flow.source("a", left)
    b = flow.source("b", right)
    out = a.join(b, on=["ex", "k"], how=how)
    flow.run()
    times = sealed_times(left, right)
    da = accumulate(as_of(spark, inputs_frame(spark, left), times))
    db = accumulate(as_of(spark, inputs_frame(spark, right), times))
    cond = (da["ex"] == db["ex"]) & (da["k"] == db["k"]) & (da["__asof"] == db["__asof"])
    batch = da.join(db, cond, how).select(da["ex"], da["k"], da["v"], db["w"], da["__asof"])
    assert_matches(out.updates(), batch, out.columns, times)


@spark_settings(N)
@given(a=W.source(), b=W.source())
def test_union_with_priority(spark, make_flow, a, b):
    flow = make_flow()
    out = flow.source("a", a).union(flow.source("b", b), priority_column="src")
    flow.run()
    times = sealed_times(a, b)
    da = accumulate(as_of(spark, inputs_frame(spark, a), times)).withColumn("src", F.lit(0))
    db = accumulate(as_of(spark, inputs_frame(spark, b), times)).withColumn("src", F.lit(1))
    assert_matches(out.updates(), da.unionByName(db), out.columns, times)


def _window_oracle(d, size, slide):
    # Independent of sealtime: every window [s, s + size) with s a multiple of slide
    # that contains the update's time.
    n = -(-size // slide)
    last = F.col("_time") - F.pmod(F.col("_time"), F.lit(slide))
    starts = F.sequence(last - F.lit((n - 1) * slide), last, F.lit(slide))
    d = d.withColumn("window_start", F.explode(starts)).withColumn(
        "window_end", F.col("window_start") + size
    )
    return d.filter(F.col("window_end") > F.col("_time"))


@spark_settings(N)
@given(src=W.source(max_time=12), size=hs.integers(1, 5), slide_div=hs.sampled_from([1, 2]))
def test_window_aggregate_emits_sealed_windows(spark, make_flow, src, size, slide_div):
    slide = max(1, size // slide_div)
    spec = st.Tumbling(size) if slide == size else st.Sliding(size, slide)

    def build(c):
        return c.window(spec).aggregate(
            by=["ex", "k"], n=st.count(), hi=st.max("v"), kinds=st.count_distinct("v")
        )

    flow = make_flow()
    out = build(flow.source("s", src))
    flow.run()
    times = sealed_times(src)
    raw = as_of(spark, inputs_frame(spark, src), times)
    windowed = accumulate(
        _window_oracle(raw, size, slide).drop("_time").withColumn("_time", F.lit(0))
    )
    batch = (
        windowed.filter(F.col("window_end") - 1 <= F.col("__asof"))
        .groupBy("window_start", "window_end", "ex", "k", "__asof")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.max("v").alias("hi"),
            F.countDistinct("v").alias("kinds"),
        )
    )
    ups = out.updates()
    assert_matches(ups, batch, out.columns, times)
    # Append-only: every window is emitted once, at window_end - 1, never retracted.
    df = ups.to_pandas()
    assert (df["_diff"] > 0).all()
    assert (df["_time"] == df["window_end"] - 1).all()
    assert not df.duplicated(["window_start", "window_end", "ex", "k"]).any()


@spark_settings(N)
@given(src=W.source(max_time=12, retract=False), gap=hs.integers(1, 4))
def test_session_aggregate(spark, make_flow, src, gap):
    flow = make_flow()
    out = (
        flow.source("s", src)
        .window(st.Session(gap))
        .aggregate(by=["ex", "k"], n=st.count(), total=st.sum("v"))
    )
    flow.run()
    times = sealed_times(src)
    raw = as_of(spark, inputs_frame(spark, src), times).withColumn("__t", F.col("_time"))
    rows = accumulate(raw.drop("_time").withColumn("_time", F.lit(0)), keep=["__t"])
    w = Window.partitionBy("ex", "k", "__asof").orderBy("__t")
    ts = rows.select("ex", "k", "__asof", "__t").distinct()
    gap_break = F.when(
        F.lag("__t").over(w).isNull() | (F.col("__t") - F.lag("__t").over(w) >= gap), 1
    ).otherwise(0)
    ts = ts.withColumn("sid", F.sum(gap_break).over(w.rowsBetween(Window.unboundedPreceding, 0)))
    # Rename the session side's columns: both sides derive from `rows` (a self-join).
    ts = ts.select(
        F.col("ex").alias("s_ex"),
        F.col("k").alias("s_k"),
        F.col("__asof").alias("s_asof"),
        F.col("__t").alias("s_t"),
        "sid",
    )
    on = (
        rows["k"].eqNullSafe(ts["s_k"])
        & (rows["ex"] == ts["s_ex"])
        & (rows["__asof"] == ts["s_asof"])
    )
    on = on & (rows["__t"] == ts["s_t"])
    tagged = rows.join(ts, on, "inner").select("ex", "k", "v", "__asof", "__t", "sid")
    sess = tagged.groupBy("ex", "k", "__asof", "sid").agg(
        F.min("__t").alias("window_start"),
        (F.max("__t") + gap).alias("window_end"),
        F.count(F.lit(1)).alias("n"),
        F.sum("v").alias("total"),
    )
    batch = sess.filter(F.col("window_end") - 1 <= F.col("__asof"))
    assert_matches(out.updates(), batch, out.columns, times)
