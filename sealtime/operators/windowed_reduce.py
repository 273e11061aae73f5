"""`WindowedReduce`: an aggregate or top-k per tumbling/sliding window, emitted once,
when the window is sealed (at ``window_end - 1``).

State is the open windows only, kept as bucket runs per ``window_end`` in each hash
partition (`sealtime.arrangement.steps.WindowedStep`): a tick appends its updates for
windows still open and merges the windows it seals with their buckets. For append-only
input and decomposable aggregates (count, sum, avg, min, max), Spark first combines the
tick's rows into one partial aggregate per (window, key), map-side, and the shuffle
that groups them is the one that routes them to their partition; otherwise the rows
themselves are kept (with multiplicities) and Spark's reducer runs over each sealed
window's rows.

A tick that cannot seal a window emits nothing whatever its updates (`can_wait`): the
engine then leaves them in the log and hands them over, with later ticks' updates, in
the tick that seals a window (or before a checkpoint), as one plan over the log.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.partition import CNT as ROW_CNT
from ..arrangement.steps import WindowedStep
from ..arrangement.task import MARKER, PARTITION, KernelTask
from ..kernels.keyed import HASH
from ..plan import AggregateKind
from ..spark.frames import CNT, DIFF, TIME, with_system
from ..spark.plans import Projection, map_in_arrow
from ..spark.reducers import AggregateReducer, reducer_of
from ..time.order import MIN_TIME
from .base import Env, Operator
from .keys import KeyRouting, carriers

__all__ = ["WindowedReduce"]

_WINDOW = (P.WINDOW_START, P.WINDOW_END)


class WindowedReduce(Operator[P.WindowedReduce]):
    """Windowed aggregate / top-k over tumbling or sliding windows."""

    stateful = True
    kernel_counted = True

    def __init__(self, node: P.WindowedReduce, env: Env) -> None:
        super().__init__(node, env)
        src = node.inputs[0]
        self.spec = node.spec
        by = [c for c in node.by if c not in _WINDOW]
        self.group = [*_WINDOW, *by]
        self.reducer: Any
        self.reducer, self.values = reducer_of(
            node.reduction, src.schema, self.group, src.priority_column
        )
        self.partial = (
            src.monotonic
            and isinstance(self.reducer, AggregateReducer)
            and self.reducer.decomposable
        )
        self.routing = KeyRouting.of(self.group, src.schema, env)
        self.arrangement = Arrangement(os.path.join(env.state_dir, "windows"), env.partitions)
        #: the frontier the last step sealed up to (windows ending at or below it are out)
        self.last_hi: int | None = None
        self._marker_frame: DataFrame | None = None
        self._compile()
        # (an empty input frame, for a tick that only seals windows; immutable, so shared)
        self._empty = env.spark.createDataFrame([], with_system(src.schema))
        routed = self._prepare(self._empty)
        self.input_arrow = to_arrow_schema(routed.schema, timezone="UTC")
        self._args = tuple(F.col(n) for n in self.input_arrow.names)
        if self.partial:
            partial_cols = [c for c in routed.columns if c not in (*self.group, PARTITION, MARKER)]
            self.merge = tuple(
                (c, "min" if self._is_min(c) else "max" if c.startswith("__m_") else "sum")
                for c in partial_cols
            )
            out = [*self.group, *partial_cols]
        else:
            self.merge = ()
            out = [*self.group, *self.values, HASH, "__r", ROW_CNT]
        self.output_arrow = pa.schema([self.input_arrow.field(c) for c in out])
        self.output_spark = from_arrow_schema(self.output_arrow)
        # The output: the node's columns, emitted at window_end - 1.
        at = (F.col(P.WINDOW_END) - 1).alias(TIME)
        if self.partial:
            values = self.reducer.final_columns()
            cols = [values.get(c, F.col(c)) for c in node.columns]
            self._output = Projection([*cols, at, F.lit(1).cast("long").alias(DIFF)])
        else:
            self._rows = Projection([*self.group, *self.values, F.col(ROW_CNT).alias(CNT)])
            self._output = Projection([*node.columns, at, F.col(CNT).alias(DIFF)])

    def _compile(self) -> None:
        """Build the fixed expressions of `_prepare` once: rebuilding them every tick
        cost ~50 ms of py4j per operator (`sealtime.spark.plans`)."""
        if self.partial:
            self._keyed = Projection([*self.routing.key_exprs, *self.values, TIME, DIFF])
            partition = F.pmod(F.hash(*[F.col(k) for k in self.group]), F.lit(self.env.partitions))
            marker = F.col(P.WINDOW_END).isNull()
            self._marked = Projection(["*", partition.alias(PARTITION), marker.alias(MARKER)])
        else:
            raw = [F.col(c) for c in self.values]
            row_hash = F.xxhash64(*self.routing.key_values, *raw).alias("__r")
            self._rows_in = Projection(
                [
                    *self.routing.key_exprs,
                    *raw,
                    row_hash,
                    F.col(DIFF).alias(ROW_CNT),
                    *self.routing.derived,
                ]
            )

    def _is_min(self, column: str) -> bool:
        name = column[len("__m_") :]
        return column.startswith("__m_") and self.reducer.aggs[name].kind is AggregateKind.MIN

    def _prepare(self, delta: DataFrame) -> DataFrame:
        """The tick's updates as the kernel's input, shuffled to their partitions."""
        if self.partial:
            keyed = self._keyed.apply(delta)
            keyed = keyed.unionByName(self._markers(keyed))
            partials = self.reducer.partials(keyed, self.group, DIFF)
            # The aggregate's own shuffle (map-side combined) routes each (window, key) to
            # its partition; the markers' groups (window_end null) mark every partition.
            return self.routing.coalesce(self._marked.apply(partials))
        return self.routing.route(self._rows_in.apply(delta), key=self._rows_in)

    def _markers(self, like: DataFrame) -> DataFrame:
        """One row per partition whose group lands in that partition of the aggregate's
        shuffle: ``window_start`` a carrier (hashing alone to p), everything else null."""
        if self._marker_frame is None:
            spark = like.sparkSession
            longs = carriers(self.env.partitions, "long")
            array = F.array(*[F.lit(c).cast("long") for c in longs])
            special = {
                P.WINDOW_START: F.element_at(array, F.col("id").cast("int") + 1),
                TIME: F.lit(0).cast("long"),
                DIFF: F.lit(0).cast("long"),
            }
            cols = [
                special.get(f.name, F.lit(None).cast(f.dataType)).alias(f.name)
                for f in like.schema.fields
            ]
            self._marker_frame = spark.range(0, self.env.partitions, 1, 1).select(*cols)
        return self._marker_frame

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        may_close = self._may_close(lo, hi)
        self.last_hi = hi
        if d is None and not may_close:
            return None
        return self._run(d, lo, hi)

    def can_wait(self, lo: int, hi: int | None) -> bool:
        return hi is not None and not self._may_close(lo, hi)

    def _run(self, d: DataFrame | None, lo: int, hi: int | None) -> DataFrame:
        """The kernel's plan over the updates `d`: emit the windows ending in
        ``(lo, hi]``, append the rest to their buckets."""
        if d is None:
            d = self._empty
        version = self.arrangement.advance()
        step = WindowedStep(
            self.arrangement.fs,
            version,
            tuple(self.group),
            self.merge,
            tuple(self.values),
            lo,
            hi,
        )
        # Exact counts only: partial mode feeds the kernel map-side combined partials
        # (not the updates); otherwise Spark aggregates the kernel's rows again.
        probe = self.probe(version, count_in=not self.partial, count_out=self.partial)
        task = KernelTask(step, self.input_arrow, self.output_arrow, probe)
        merged = map_in_arrow(self._prepare(d), task, self.output_spark, self._args)
        if self.partial:
            return self._output.apply(merged)
        return self._output.apply(self.reducer(self._rows.apply(merged), self.group))

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        # a window is emitted at window_end - 1, below the frontier
        return hi - 1 if hi is not None else super().output_bound(inputs, lo, hi)

    def _may_close(self, lo: int, hi: int | None) -> bool:
        """Can a window end in ``(lo, hi]``? When no window boundary of the spec falls in
        that range, nothing can be sealed."""
        if hi is None or lo <= MIN_TIME:
            return True
        if isinstance(self.spec, P.Tumbling):
            period, phase = self.spec.size, self.spec.offset
        elif isinstance(self.spec, P.Sliding):
            period, phase = self.spec.slide, self.spec.size % self.spec.slide
        else:
            return True
        return (hi - phase) // period > (lo - phase) // period

    def state(self, directory: str) -> dict[str, Any]:
        return {**self.arrangement.state(), "last_hi": self.last_hi}

    def restore(self, state: dict[str, Any]) -> None:
        self.arrangement.restore(state)
        self.last_hi = state.get("last_hi")

    def after_tick(self, pinned: bool) -> None:
        self.arrangement.finish_tick(emitted=self.last_hi)

    def durable(self) -> None:
        self.arrangement.durable()

    def pin(self) -> None:
        self.arrangement.pin()
