"""Spark's ``hash`` in Python (`sealtime.spark.murmur3`) equals Spark's own, and the
carriers chosen with it land in their partitions when Spark repartitions by them."""

from __future__ import annotations

from pyspark.sql import functions as F

from sealtime.operators.keys import carriers
from sealtime.spark.murmur3 import spark_hash_int, spark_hash_long

EDGES = [0, 1, -1, 42, 2**31 - 1, -(2**31), 123_456_789, -987_654_321]


def test_python_hash_equals_sparks_for_ints_and_longs(spark):
    ints = EDGES + list(range(-200, 200, 7))
    longs = ints + [2**40 + 7, -(2**50) - 3, 2**63 - 1, -(2**63)]
    got = spark.createDataFrame([(v,) for v in ints], "v int").select("v", F.hash("v").alias("h"))
    assert {r.v: r.h for r in got.collect()} == {v: spark_hash_int(v) for v in ints}
    got = spark.createDataFrame([(v,) for v in longs], "v bigint").select(
        "v", F.hash("v").alias("h")
    )
    assert {r.v: r.h for r in got.collect()} == {v: spark_hash_long(v) for v in longs}


def test_carriers_are_the_least_values_spark_hashes_to_each_partition(spark):
    for partitions in (1, 3, 8, 200):
        for dtype in ("int", "long"):
            ids = F.col("id").cast(dtype)
            rows = (
                spark.range(0, 256 * partitions)
                .select(F.pmod(F.hash(ids), F.lit(partitions)).alias("p"), ids.alias("c"))
                .groupBy("p")
                .agg(F.min("c").alias("c"))
                .collect()
            )
            spark_found = [c for _, c in sorted((r.p, r.c) for r in rows)]
            assert carriers(partitions, dtype) == spark_found, (partitions, dtype)
