"""Window assignment on Spark deltas: ``window_start``/``window_end`` for tumbling and
sliding windows, a pure function of ``_time`` (a sliding window explodes a row into its
windows)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..plan.windows import Sliding, Tumbling, WindowSpec
from .frames import TIME
from .plans import Projection

__all__ = ["WindowAssigner"]

_WINDOW = ("window_start", "window_end")


class WindowAssigner:
    """The window columns of one spec as Spark expressions, built once and applied to
    every tick's frame with a few py4j calls (`sealtime.spark.plans` says why).

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> df = spark.createDataFrame([(12_000, 1)], "_time long, _diff long")
    >>> [tuple(r) for r in WindowAssigner(Tumbling(10_000)).apply(df).collect()]
    [(12000, 1, 10000, 20000)]
    """

    def __init__(self, spec: WindowSpec) -> None:
        t = F.col(TIME)
        self.spec = spec
        if isinstance(spec, Tumbling):
            start = t - F.pmod(t - F.lit(spec.offset), F.lit(spec.size))
            end = start + F.lit(spec.size)
            self.steps = [Projection(["*", start.alias("window_start"), end.alias("window_end")])]
        elif isinstance(spec, Sliding):
            last = t - F.pmod(t, F.lit(spec.slide))
            n = -(-spec.size // spec.slide)
            starts = F.sequence(last - F.lit((n - 1) * spec.slide), last, F.lit(spec.slide))
            end = F.col("window_start") + F.lit(spec.size)
            # (the end refers to the exploded start: two projections)
            self.steps = [
                Projection(["*", F.explode(starts).alias("window_start")]),
                Projection(["*", end.alias("window_end")]),
            ]
            self.open = F.col("window_end") > t
        else:
            raise TypeError(f"WindowAssigner does not handle {spec!r}")

    def apply(self, df: DataFrame, has_windows: bool = True) -> DataFrame:
        """`df` with ``window_start``/``window_end`` (replacing any it has; pass
        ``has_windows=False`` when it has none, to spare the drop)."""
        if has_windows:
            df = df.drop(*_WINDOW)
        for step in self.steps:
            df = step.apply(df)
        return df if isinstance(self.spec, Tumbling) else df.filter(self.open)
