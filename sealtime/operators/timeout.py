"""`Timeout`: one row when a key has had no update for a span of logical time.

``col.timeout(by="sensor", after="5m")``: for every key and every time ``t`` at which
the key's updates do not cancel out, if the key has no such update at a time in
``(t, t + after]``, the output gets the row ``(key..., last_update=t,
timed_out_at=t + after)`` at time ``t + after``, with multiplicity +1 (append-only).

The row's time ``t + after`` is below the input frontier when it is emitted (the
frontier has passed it, so no update in ``(t, t + after]`` can still come): like a
windowed aggregate, the operator needs no capability and its path summary is the
identity. It is a function of the input's updates alone, which are a function of the
log and the bindings — so every run, restart and replay emits the same rows at the same
times, whatever the tick boundaries. No clock is read.

State: the keys whose timeout has not fired yet, with their last update time — one row
per such key, kept as a frame spilled to the data dir each tick (`SpillStore`, like
`SessionReduce`), checkpointed by path. A tick costs O(delta + pending keys): the
pending keys are scanned every tick (not an arrangement with a time index; keys whose
timeout fired leave the state).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .. import plan as P
from ..spark.frames import DIFF, TIME, consolidate, union_all
from ..spark.spill import SpillStore, checkpoint_frame
from ..time.order import MAX_TIME
from .base import Env, Operator

__all__ = ["Timeout"]


class Timeout(Operator[P.Timeout]):
    """Per-key timeout (the node's ``by`` and ``after`` in ms)."""

    stateful = True

    def __init__(self, node: P.Timeout, env: Env) -> None:
        super().__init__(node, env)
        self.by: list[str] = list(node.by)
        self.after: int = node.after
        self.spills = SpillStore(env.spark, os.path.join(env.state_dir, "spill"))
        self.pending: DataFrame | None = None  # by..., __t: keys not timed out yet
        self.generation = 0

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        delta = inputs[0]
        acts = None
        if delta is not None:
            # Times at which the key's updates do not cancel out.
            cols = [c for c in delta.columns if c not in (TIME, DIFF)]
            acts = (
                consolidate(delta, cols + [TIME])
                .select(*self.by, F.col(TIME).alias("__t"))
                .distinct()
            )
        both = union_all([self.pending, acts])
        if both is None:
            return None
        w = Window.partitionBy(*self.by).orderBy("__t")
        deadline = F.col("__t") + F.lit(self.after).cast("long")
        nxt = F.lead("__t").over(w)
        tagged = both.select(
            *self.by,
            "__t",
            (nxt.isNull() | (nxt > deadline)).alias("__quiet"),
            nxt.isNull().alias("__last"),
        )
        self.generation += 1
        tagged = self.spills.write(tagged.coalesce(self.env.partitions), "keys", self.generation)
        due = deadline < F.lit(hi) if hi is not None else F.lit(True)
        fired = tagged.filter(F.col("__quiet") & due)
        self.pending = (
            None if hi is None else tagged.filter(F.col("__last") & ~due).select(*self.by, "__t")
        )
        return fired.select(
            *self.by,
            F.col("__t").alias(P.LAST_UPDATE),
            deadline.alias(P.TIMED_OUT_AT),
            deadline.alias(TIME),
            F.lit(1).cast("long").alias(DIFF),
        )

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        # Rows fire at times below the input frontier, not at their inputs' times.
        return MAX_TIME if hi is None else hi - 1

    # Deliberately parallel to `SessionReduce`'s: the same spilled-frame state, under its
    # own attribute and names (a shared base would hide which frame is the state).
    def state(self, directory: str) -> dict[str, Any]:
        return {"pending": checkpoint_frame(self.pending, os.path.join(directory, "pending"))}

    def restore(self, state: dict[str, Any]) -> None:
        self.generation += 1
        self.pending = self.spills.restore_frame(state.get("pending"), "keys", self.generation)

    def after_tick(self, pinned: bool) -> None:
        self.spills.collect_garbage()
