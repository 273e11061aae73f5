"""Oracle harness: accumulated output at every sealed time == a plain Spark batch query.

`inputs_frame` turns a `Rows` workload into a Spark DataFrame of updates; `as_of` crosses
it with the sealed times (column ``__asof``) and keeps updates with ``_time <= __asof``;
`accumulate` consolidates multiplicities and expands positive ones into plain rows — the
input a batch query sees. Each test then writes its batch query with ``__asof`` as an
extra key, independently of sealtime's operators, and `assert_matches` compares it with
the dataflow's accumulated updates at every sealed time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sealtime.sources.rows import Rows


def inputs_frame(spark, source: Rows) -> DataFrame:
    """The workload's updates (data columns, ``_time``, ``_diff``) as a DataFrame."""
    return spark.createDataFrame(source.table)


def as_of(spark, updates: DataFrame, times: Iterable[int]) -> DataFrame:
    """Updates visible at each sealed time, tagged with ``__asof``."""
    ts = spark.createDataFrame(pa.table({"__asof": pa.array(sorted(set(times)), pa.int64())}))
    return updates.crossJoin(F.broadcast(ts)).filter(F.col("_time") <= F.col("__asof"))


def accumulate(df: DataFrame, keep: Sequence[str] = ()) -> DataFrame:
    """Consolidate per (data columns, ``__asof``, `keep`) and expand positive counts into
    that many rows (negative or zero counts: absent, as the reducers define)."""
    cols = [c for c in df.columns if c not in ("_time", "_diff")] + [
        c for c in keep if c not in df.columns
    ]
    acc = df.groupBy(*cols).agg(F.sum("_diff").alias("__n")).filter("__n > 0")
    return acc.withColumn("__i", F.explode(F.sequence(F.lit(1), F.col("__n").cast("int")))).drop(
        "__n", "__i"
    )


def sealed_times(*sources: Rows) -> list[int]:
    """Every time at which some input changes: the accumulated output is checked there
    (between two of them nothing changes)."""
    return sorted({t for s in sources for t in s.times})


def _norm(value):
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return round(value, 9)
    return value


def accumulated(updates: pa.Table, columns: Sequence[str], t: int) -> Counter:
    """Multiset of rows of an updates table accumulated to time `t` (positive counts)."""
    df = updates.to_pandas()
    acc: Counter = Counter()
    if len(df):
        df = df[df["_time"] <= t]
        for row, diff in zip(df[list(columns)].itertuples(index=False, name=None), df["_diff"]):
            acc[tuple(_norm(v) for v in row)] += int(diff)
    return Counter({k: v for k, v in acc.items() if v != 0})


def expected(oracle: pd.DataFrame, columns: Sequence[str], t: int) -> Counter:
    rows = oracle[oracle["__asof"] == t][list(columns)]
    return Counter(tuple(_norm(v) for v in row) for row in rows.itertuples(index=False, name=None))


def assert_matches(
    updates: pa.Table, oracle: DataFrame, columns: Sequence[str], times: Iterable[int]
) -> None:
    """At every sealed time, the accumulated updates equal the oracle's rows."""
    ora = oracle.toPandas()
    for t in times:
        got = accumulated(updates, columns, t)
        want = expected(ora, columns, t)
        if got != want:
            missing = want - got
            extra = got - want
            raise AssertionError(
                f"at sealed time {t}: missing {dict(missing)} extra {dict(extra)}\n"
                f"(got {sorted(got.items(), key=repr)}, want {sorted(want.items(), key=repr)})"
            )


def nulls_to_none(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(object).where(df.notna(), None)
