"""Join, distinct and window assignment on Spark deltas.

* `BilinearJoin` — an inner equi-join of two collections. With ``A``/``B`` the inputs
  accumulated before the tick and ``dA``/``dB`` the tick's updates, the output updates
  are ``dA ⋈ B`` (at dA's time), ``A ⋈ dB`` (at dB's time) and ``dA ⋈ dB`` (at the later
  of the two times), each with the product of the multiplicities. State: both inputs'
  multisets. A tick costs O(|dA| + |dB| + matching state) plus scans of the cached state.
* `Distinct` — a row is present at time t iff its accumulated multiplicity at t is
  positive; a running sum per row over the tick's times finds the changes. State: the
  multiplicity per row.
* `assign_windows` — adds ``window_start``/``window_end`` for tumbling and sliding windows
  (a pure function of ``_time``; sliding windows explode a row into its windows).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..dataflow.windows import Sliding, Tumbling, WindowSpec
from .frames import CNT, DIFF, TIME, consolidate, pack, union_all, unpack

__all__ = ["BilinearJoin", "Distinct", "assign_windows"]


class BilinearJoin:
    """Inner join on equal `on` columns (SQL semantics: null keys do not match)."""

    def __init__(
        self, on: Sequence[str], left_cols: Sequence[str], right_cols: Sequence[str], checkpoint
    ) -> None:
        self.on = list(on)
        self.left_cols = list(left_cols)
        self.right_cols = list(right_cols)
        self.checkpoint = checkpoint
        self.left: DataFrame | None = None
        self.right: DataFrame | None = None

    def _pair(self, a: DataFrame, b: DataFrame, time) -> DataFrame:
        j = a.alias("l").join(b.alias("r"), on=self.on, how="inner")
        cols = [F.col(c) for c in self.on]
        cols += [F.col(f"l.{c}") for c in self.left_cols if c not in self.on]
        cols += [F.col(f"r.{c}") for c in self.right_cols if c not in self.on]
        return j.select(*cols, time.alias(TIME), (F.col("l.__w") * F.col("r.__w")).alias(DIFF))

    def step(self, da: DataFrame | None, db: DataFrame | None) -> DataFrame | None:
        def weighted(df, time_col):
            return df.withColumnRenamed(DIFF, "__w").withColumnRenamed(TIME, time_col)

        if da is None and db is None:
            return None
        da = None if da is None else consolidate(da, self.left_cols + [TIME])
        db = None if db is None else consolidate(db, self.right_cols + [TIME])
        parts = []
        if da is not None and self.right is not None:
            parts.append(
                self._pair(
                    weighted(da, "__ta"), self.right.withColumnRenamed(CNT, "__w"), F.col("l.__ta")
                )
            )
        if db is not None and self.left is not None:
            parts.append(
                self._pair(
                    self.left.withColumnRenamed(CNT, "__w"), weighted(db, "__tb"), F.col("r.__tb")
                )
            )
        if da is not None and db is not None:
            t = F.greatest(F.col("l.__ta"), F.col("r.__tb"))
            parts.append(self._pair(weighted(da, "__ta"), weighted(db, "__tb"), t))
        left = right = None
        if da is not None:
            add = da.drop(TIME).withColumnRenamed(DIFF, CNT)
            left = consolidate(union_all([self.left, add]), self.left_cols, CNT)
        if db is not None:
            add = db.drop(TIME).withColumnRenamed(DIFF, CNT)
            right = consolidate(union_all([self.right, add]), self.right_cols, CNT)
        out = union_all(parts)
        packed = self.checkpoint(pack({"left": left, "right": right, "delta": out}))
        if left is not None:
            self.left = unpack(packed, "left", self.left_cols + [CNT])
        if right is not None:
            self.right = unpack(packed, "right", self.right_cols + [CNT])
        if out is None:
            return None
        return unpack(packed, "delta", out.columns)


class Distinct:
    """Set semantics: multiplicity 1 for every row with positive accumulated count."""

    def __init__(self, columns: Sequence[str], checkpoint) -> None:
        self.columns = list(columns)
        self.checkpoint = checkpoint
        self.state: DataFrame | None = None  # columns + _cnt

    def step(self, delta: DataFrame | None) -> DataFrame | None:
        if delta is None:
            return None
        cols = self.columns
        d = consolidate(delta, cols + [TIME])
        rows = d.withColumnRenamed(DIFF, CNT)
        if self.state is not None:
            # The accumulated count enters the running sum as a row at time -inf (null).
            rows = union_all([self.state.withColumn(TIME, F.lit(None).cast("long")), rows])
        w = Window.partitionBy(*cols).orderBy(F.col(TIME).asc_nulls_first())
        run = F.sum(CNT).over(w.rowsBetween(Window.unboundedPreceding, 0))
        ran = rows.withColumn("__after", run)
        before = F.col("__after") - F.col(CNT)
        change = F.when((F.col("__after") > 0) & (before <= 0), 1).when(
            (F.col("__after") <= 0) & (before > 0), -1
        )
        out = ran.filter(F.col(TIME).isNotNull()).select(
            *cols, TIME, change.cast("long").alias(DIFF)
        )
        out = out.filter(F.col(DIFF).isNotNull())
        state = consolidate(ran.select(*cols, CNT), cols, CNT)
        packed = self.checkpoint(pack({"state": state, "delta": out}))
        self.state = unpack(packed, "state", cols + [CNT])
        return unpack(packed, "delta", cols + [TIME, DIFF])


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
