"""Window assignment on Spark deltas: ``window_start``/``window_end`` for tumbling and
sliding windows, a pure function of ``_time`` (a sliding window explodes a row into its
windows)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..dataflow.windows import Sliding, Tumbling, WindowSpec
from .frames import TIME

__all__ = ["assign_windows"]


def assign_windows(df: DataFrame, spec: WindowSpec) -> DataFrame:
    """Add ``window_start``/``window_end`` (ms, end exclusive) from ``_time``."""
    df = df.drop("window_start", "window_end")
    t = F.col(TIME)
    if isinstance(spec, Tumbling):
        start = t - F.pmod(t - F.lit(spec.offset), F.lit(spec.size))
        return df.withColumn("window_start", start).withColumn(
            "window_end", start + F.lit(spec.size)
        )
    if isinstance(spec, Sliding):
        last = t - F.pmod(t, F.lit(spec.slide))
        n = -(-spec.size // spec.slide)
        starts = F.sequence(last - F.lit((n - 1) * spec.slide), last, F.lit(spec.slide))
        out = df.withColumn("window_start", F.explode(starts))
        out = out.withColumn("window_end", F.col("window_start") + F.lit(spec.size))
        return out.filter(F.col("window_end") > t)
    raise TypeError(f"assign_windows does not handle {spec!r}")
