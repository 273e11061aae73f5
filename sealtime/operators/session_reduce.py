"""`SessionReduce`: an aggregate or top-k per session window, emitted once, when sealed.

Sessions are formed per key from the rows present (count > 0) ordered by time: a gap of
at least ``gap`` starts a new session ``[first, last + gap)``; a session is sealed when
the frontier reaches its end. State is the rows of open sessions, kept as a frame
spilled to the data dir every tick (`SpillStore`: it survives executor loss); a tick
costs O(delta + rows of open sessions), since an insertion may merge two sessions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .. import plan as P
from ..spark.frames import CNT, DIFF, TIME, consolidate, null_safe_join, union_all
from ..spark.reducers import reducer_of
from ..spark.spill import SpillStore, checkpoint_frame
from .base import Env, Operator

__all__ = ["SessionReduce"]


class SessionReduce(Operator[P.SessionReduce]):
    """Aggregate / top-k over ``window(st.Session(gap))``."""

    stateful = True

    def __init__(self, node: P.SessionReduce, env: Env) -> None:
        super().__init__(node, env)
        src = node.inputs[0]
        self.gap = node.gap
        self.by = [c for c in node.by if c not in (P.WINDOW_START, P.WINDOW_END)]
        group = [P.WINDOW_START, P.WINDOW_END, *self.by]
        self.reducer: Any
        self.reducer, self.values = reducer_of(
            node.reduction, src.schema, group, src.priority_column
        )
        self.spills = SpillStore(env.spark, os.path.join(env.state_dir, "spill"))
        self.buffer: DataFrame | None = None  # rows of open sessions: by, values, __t, _cnt
        self.generation = 0

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        delta = inputs[0]
        cols = self.by + self.values
        fresh = (
            None
            if delta is None
            else delta.select(*cols, F.col(TIME).alias("__t"), F.col(DIFF).alias(CNT))
        )
        both = union_all([self.buffer, fresh])
        if both is None:
            return None
        rows = consolidate(both, cols + ["__t"], CNT) if fresh is not None else both
        w = Window.partitionBy(*self.by).orderBy("__t")
        present = rows.filter(F.col(CNT) > 0)
        times = present.select(*self.by, "__t").distinct()
        brk = F.when(
            F.lag("__t").over(w).isNull() | (F.col("__t") - F.lag("__t").over(w) >= self.gap), 1
        ).otherwise(0)
        times = times.withColumn(
            "__sid", F.sum(brk).over(w.rowsBetween(Window.unboundedPreceding, 0))
        )
        bounds = times.groupBy(*self.by, "__sid").agg(
            F.min("__t").alias("window_start"), (F.max("__t") + self.gap).alias("window_end")
        )
        times = null_safe_join(times, bounds, self.by + ["__sid"])
        tagged = null_safe_join(rows, times, self.by + ["__t"], "left")
        self.generation += 1
        tagged = self.spills.write(tagged.coalesce(self.env.partitions), "tagged", self.generation)
        closed = (
            F.col("window_end").isNotNull() & (F.col("window_end") <= hi)
            if hi is not None
            else F.lit(True)
        )
        sealed = tagged.filter(closed & (F.col(CNT) > 0))
        # Rows whose count is not positive belong to no session; keep them until their key
        # has no open session left, so a later insertion can cancel them.
        self.buffer = None if hi is None else tagged.filter(~closed).select(*cols, "__t", CNT)
        group = ["window_start", "window_end", *self.by]
        out = self.reducer(sealed.select(*group, *self.values, CNT), group)
        return out.withColumn(TIME, F.col("window_end") - 1).withColumnRenamed(CNT, DIFF)

    def state(self, directory: str) -> dict[str, Any]:
        return {"buffer": checkpoint_frame(self.buffer, os.path.join(directory, "buffer"))}

    def restore(self, state: dict[str, Any]) -> None:
        self.generation += 1
        self.buffer = self.spills.restore_frame(state.get("buffer"), "tagged", self.generation)

    def after_tick(self, pinned: bool) -> None:
        self.spills.collect_garbage()
