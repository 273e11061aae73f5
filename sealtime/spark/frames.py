"""DataFrame helpers shared by the operators.

A *delta* is a DataFrame of updates: the data columns plus ``_time`` (int64 logical time)
and ``_diff`` (int64 multiplicity change). A *multiset* is a DataFrame of data columns
plus ``_cnt`` (accumulated multiplicity), with times collapsed. `consolidate` is the
DataFrame form of `sealtime.columns.consolidate` (which works on Arrow tables).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..columns import CNT, DIFF, TIME

__all__ = [
    "CNT",
    "DIFF",
    "TIME",
    "consolidate",
    "null_safe_join",
    "persist",
    "to_arrow",
    "union_all",
    "with_system",
]


def with_system(schema: T.StructType) -> T.StructType:
    """`schema` (a Spark StructType of data columns) plus ``_time`` and ``_diff``.

    >>> with_system(T.StructType([T.StructField("k", T.StringType())])).fieldNames()
    ['k', '_time', '_diff']
    """
    return T.StructType(
        list(schema.fields)
        + [T.StructField(TIME, T.LongType(), False), T.StructField(DIFF, T.LongType(), False)]
    )


def to_arrow(df: DataFrame) -> pa.Table:
    """``df.toArrow()``, faster: in local mode the tasks write the result's Arrow
    batches to files that Python maps (`sealtime.spark.arrow_files`), elsewhere the
    batches Spark sends, without re-reading `df`'s schema and settings unless the
    result is empty (about half ``toArrow``'s JVM calls). Timestamps are zoned UTC.

    >>> from sealtime.spark.session import get_or_create_session
    >>> t = to_arrow(get_or_create_session().range(3))
    >>> t.num_rows, t.schema.names
    (3, ['id'])
    >>> to_arrow(get_or_create_session().range(0)).schema.names
    ['id']
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    from .arrow_files import collector

    files = collector(df.sparkSession)
    table = None if files is None else files.collect(df)
    if table is None:
        batches = df._collect_as_arrow(empty_list_if_zero_records=True)
        table = pa.Table.from_batches(batches) if batches else None
    if table is not None:
        # Spark writes timestamps in the session's time zone; toArrow's are UTC.
        utc = pa.schema([f.with_type(_utc(f.type)) for f in table.schema])
        return table if utc.equals(table.schema) else table.cast(utc)
    # No rows: an empty table in the schema toArrow would give (no second job).
    large = df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
    schema = to_arrow_schema(
        df.schema,
        error_on_duplicated_field_names_in_struct=True,
        timezone="UTC",
        prefers_large_types=str(large).lower() == "true",
    )
    return schema.empty_table()


def _utc(t: pa.DataType) -> pa.DataType:
    """`t` with every zoned timestamp in it zoned UTC (the instants stay the same)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, "UTC") if t.tz is not None else t
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_utc(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_utc(t.value_type))
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_utc(t.key_type)), t.item_field.with_type(_utc(t.item_type))
        )
    return t


def consolidate(df: DataFrame, keys: Sequence[str], weight: str = DIFF) -> DataFrame:
    """Sum `weight` per distinct `keys` and drop zero weights (differential consolidation).

    Grouping is null-safe (SQL GROUP BY puts nulls in one group), so rows with null
    fields consolidate like any other value.
    """
    return (
        df.groupBy(*[F.col(k) for k in keys])
        .agg(F.sum(weight).cast("long").alias(weight))
        .filter(F.col(weight) != 0)
    )


def union_all(frames: Sequence[DataFrame | None]) -> DataFrame | None:
    """Union by name of the non-None frames (None when there are none)."""
    present = [f for f in frames if f is not None]
    if not present:
        return None
    out = present[0]
    for f in present[1:]:
        out = out.unionByName(f)
    return out


def null_safe_join(
    left: DataFrame, right: DataFrame, keys: Sequence[str], how: str = "inner"
) -> DataFrame:
    """Join on `keys` with null-safe equality (``<=>``), keeping the left key columns.

    Internal lookups (state by group key) must match null keys; SQL ``=`` would not.
    """
    if not keys:
        return left.crossJoin(right) if how == "inner" else left.join(right, how=how)
    renamed = right
    for k in keys:
        renamed = renamed.withColumnRenamed(k, f"__r_{k}")
    cond: Column | None = None
    for k in keys:
        c = left[k].eqNullSafe(renamed[f"__r_{k}"])
        cond = c if cond is None else cond & c
    joined = left.join(renamed, on=cond, how=how)
    if how in ("left_semi", "left_anti"):
        return joined
    return joined.drop(*[f"__r_{k}" for k in keys])


def persist(df: DataFrame, name: str) -> DataFrame:
    """``df.persist(MEMORY_AND_DISK)`` under the cache name `name`. Spark names an
    unnamed cache entry after its physical plan printed whole (then cut to 1,024
    characters): for a fused group's plan that printing was a visible part of the
    driver's work every tick. ``df.unpersist()`` removes it as usual.

    >>> from sealtime.spark.session import get_or_create_session
    >>> df = persist(get_or_create_session().range(3), "three")
    >>> df.count(), df.storageLevel.useMemory
    (3, True)
    >>> _ = df.unpersist()
    """
    from pyspark import StorageLevel

    spark = df.sparkSession
    jvm = spark.sparkContext._jvm
    level = spark.sparkContext._getJavaStorageLevel(StorageLevel.MEMORY_AND_DISK)
    manager = spark._jsparkSession.sharedState().cacheManager()
    manager.cacheQuery(df._jdf, jvm.scala.Option.apply(name), level)
    return df
