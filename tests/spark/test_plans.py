"""`sealtime.spark.plans`: the prebuilt plan pieces give what PySpark's own calls give."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from sealtime.errors import InternalError
from sealtime.spark.plans import ParquetScan, Projection, runtime_long


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def generated_code(df) -> list[str]:
    """The Java source Spark generates for `df`'s stages (what its compile cache keys on)."""
    it = df._jdf.queryExecution().debug().codegenToSeq().iterator()
    out = []
    while it.hasNext():
        out.append(it.next()._2())
    return out


def test_projection_with_extra_columns_matches_select(spark):
    df = spark.createDataFrame([(1, 2), (3, 4)], "a long, b long")
    p = Projection(["a", F.col("b") * 10])
    for t in (5, 6):  # a column that changes per use, after the fixed ones
        extra = F.expr(f"CAST({t} AS BIGINT) AS t")
        got = p.apply(df, extra)
        want = df.select("a", F.col("b") * 10, F.lit(t).cast("long").alias("t"))
        assert got.columns == want.columns
        assert _rows(got) == _rows(want)
    assert _rows(p.apply(df)) == _rows(df.select("a", F.col("b") * 10))  # fixed part unchanged


def test_parquet_scan_reads_one_or_several_files(spark, tmp_path):
    paths = []
    for i in range(3):
        path = str(tmp_path / f"p{i}.parquet")
        pq.write_table(pa.table({"k": [i, i + 10], "v": ["x", None]}), path)
        paths.append(path)
    scan = ParquetScan("k long, v string")
    assert _rows(scan.read(spark, paths[:1])) == [(0, "x"), (10, None)]
    want = _rows(spark.read.schema("k long, v string").parquet(*paths))
    assert _rows(scan.read(spark, paths)) == want
    assert scan.read(spark, paths[1:2]).columns == ["k", "v"]
    with pytest.raises(InternalError, match="at least one path"):
        scan.read(spark, [])


def test_runtime_long_keeps_the_generated_code(spark, codegen):
    base = spark.range(3).selectExpr("id", "id * 2 AS v")

    def stamped(expr):
        return base.selectExpr("id", "v", f"{expr} AS t").filter("v >= 0")

    a = stamped(runtime_long(1_700_000_000_000))
    b = stamped(runtime_long(1_700_000_050_000))
    assert generated_code(a) == generated_code(b)
    assert {r.t for r in b.collect()} == {1_700_000_050_000}
    assert b.schema["t"].dataType.simpleString() == "bigint"
    assert not b.schema["t"].nullable  # as the literal was
    # What it avoids: a literal is written into the code, so each value compiles anew.
    one, two = stamped("CAST(1 AS BIGINT)"), stamped("CAST(2 AS BIGINT)")
    assert generated_code(one) != generated_code(two)
