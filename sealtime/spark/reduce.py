"""Reductions on Spark: aggregate and top-k, per sealed time (differential) or per sealed
window (append-only).

A *reducer* maps a multiset of a group's rows (``group..., values..., _cnt`` with
``_cnt > 0``) to the group's output multiset (``group..., outputs..., _cnt``). Two
drivers apply it:

* `DifferentialReduce` — for every touched key and every distinct time ``t`` of the tick
  it recomputes the reducer over the key's accumulated rows at ``t`` and emits the
  difference from the previous result (differential dataflow's ``reduce``). State: the
  input multiset per key and the current output per key. A tick costs O(new updates +
  state of the touched keys x distinct times per key in the tick), plus a scan of the
  cached state to find the touched keys.
* `WindowedReduce` — for windowed input: buffers the rows (or, for append-only input and
  decomposable aggregates, partial aggregates) of open windows and emits each window once
  when the frontier passes its end, at time ``window_end - 1``. State: open windows only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..dataflow.aggregates import Aggregate
from ..dataflow.windows import Session, Sliding, Tumbling, WindowSpec
from .frames import CNT, DIFF, TIME, consolidate, null_safe_join, pack, union_all, unpack

__all__ = ["AggregateReducer", "DifferentialReduce", "TopKReducer", "WindowedReduce"]

_FLOAT_SUM = T.DecimalType(38, 12)


def _is_float(dtype: T.DataType) -> bool:
    return isinstance(dtype, (T.FloatType, T.DoubleType))


class AggregateReducer:
    """``aggregate(by=..., name=st.sum(col) | ...)`` as a reducer."""

    def __init__(self, aggs: Mapping[str, Aggregate], schema: T.StructType) -> None:
        self.aggs = dict(aggs)
        self.types = {f.name: f.dataType for f in schema.fields}
        for name, agg in self.aggs.items():
            if agg.column is not None and agg.column not in self.types:
                raise ValueError(
                    f"aggregate {name}=st.{agg.kind}({agg.column!r}): no column {agg.column!r}; "
                    f"columns are {sorted(self.types)}"
                )

    @property
    def value_columns(self) -> list[str]:
        """Input columns the reducer reads (the state keeps only these)."""
        cols: list[str] = []
        for agg in self.aggs.values():
            if agg.column is not None and agg.column not in cols:
                cols.append(agg.column)
        return cols

    @property
    def decomposable(self) -> bool:
        return all(a.decomposable for a in self.aggs.values())

    def _sum(self, column: str, weight: Column) -> Column:
        x = F.col(column)
        if _is_float(self.types[column]):
            # Decimal addition is associative: the sum does not depend on partitioning.
            return F.sum((x * weight).cast(_FLOAT_SUM))
        return F.sum(x * weight)

    def __call__(self, m: DataFrame, group: Sequence[str]) -> DataFrame:
        w = F.col(CNT)
        exprs = []
        for name, agg in self.aggs.items():
            if agg.kind == "count":
                e = F.sum(w).cast("long")
            elif agg.kind == "sum":
                e = self._sum(agg.column, w)
                if _is_float(self.types[agg.column]):
                    e = e.cast("double")
            elif agg.kind == "avg":
                n = F.sum(F.when(F.col(agg.column).isNotNull(), w))
                e = (self._sum(agg.column, w).cast(_FLOAT_SUM) / n).cast("double")
            elif agg.kind == "min":
                e = F.min(agg.column)
            elif agg.kind == "max":
                e = F.max(agg.column)
            else:
                e = F.countDistinct(agg.column).cast("long")
            exprs.append(e.alias(name))
        return m.groupBy(*group).agg(*exprs).withColumn(CNT, F.lit(1).cast("long"))

    # Partial aggregation (append-only input): partial columns, merge, finalize.
    def partials(self, df: DataFrame, group: Sequence[str], weight: str) -> DataFrame:
        w = F.col(weight)
        exprs = []
        for name, agg in self.aggs.items():
            if agg.kind == "count":
                exprs.append(F.sum(w).cast("long").alias(f"__c_{name}"))
            elif agg.kind in ("sum", "avg"):
                exprs.append(self._sum(agg.column, w).alias(f"__s_{name}"))
                if agg.kind == "avg":
                    n = F.sum(F.when(F.col(agg.column).isNotNull(), w)).cast("long")
                    exprs.append(n.alias(f"__c_{name}"))
            elif agg.kind == "min":
                exprs.append(F.min(agg.column).alias(f"__m_{name}"))
            elif agg.kind == "max":
                exprs.append(F.max(agg.column).alias(f"__m_{name}"))
        return df.groupBy(*group).agg(*exprs)

    def row_partials(self, df: DataFrame, group: Sequence[str], weight: str) -> DataFrame:
        """The partial columns of each row on its own (no aggregation): `merge` of these
        unioned with partials equals `merge` of their `partials` — one shuffle, not two."""
        w = F.col(weight)
        cols: list[Column] = [F.col(g) for g in group]
        for name, agg in self.aggs.items():
            if agg.kind == "count":
                cols.append(w.cast("long").alias(f"__c_{name}"))
            elif agg.kind in ("sum", "avg"):
                x = F.col(agg.column)
                s = (x * w).cast(_FLOAT_SUM) if _is_float(self.types[agg.column]) else x * w
                cols.append(s.alias(f"__s_{name}"))
                if agg.kind == "avg":
                    n = F.when(x.isNotNull(), w).cast("long")
                    cols.append(n.alias(f"__c_{name}"))
            elif agg.kind in ("min", "max"):
                cols.append(F.col(agg.column).alias(f"__m_{name}"))
        return df.select(*cols)

    def merge(self, partials: DataFrame, group: Sequence[str]) -> DataFrame:
        exprs = []
        for name, agg in self.aggs.items():
            if agg.kind in ("count", "avg"):
                exprs.append(F.sum(f"__c_{name}").cast("long").alias(f"__c_{name}"))
            if agg.kind in ("sum", "avg"):
                exprs.append(F.sum(f"__s_{name}").alias(f"__s_{name}"))
            if agg.kind == "min":
                exprs.append(F.min(f"__m_{name}").alias(f"__m_{name}"))
            if agg.kind == "max":
                exprs.append(F.max(f"__m_{name}").alias(f"__m_{name}"))
        return partials.groupBy(*group).agg(*exprs)

    def finalize(self, merged: DataFrame, group: Sequence[str]) -> DataFrame:
        cols: list[Column] = [F.col(g) for g in group]
        for name, agg in self.aggs.items():
            if agg.kind == "count":
                cols.append(F.col(f"__c_{name}").alias(name))
            elif agg.kind == "sum":
                e = F.col(f"__s_{name}")
                cols.append(
                    (e.cast("double") if _is_float(self.types[agg.column]) else e).alias(name)
                )
            elif agg.kind == "avg":
                e = F.col(f"__s_{name}").cast(_FLOAT_SUM) / F.col(f"__c_{name}")
                cols.append(e.cast("double").alias(name))
            else:
                cols.append(F.col(f"__m_{name}").alias(name))
        return merged.select(*cols).withColumn(CNT, F.lit(1).cast("long"))


@dataclass(frozen=True)
class OrderKey:
    column: str
    ascending: bool = True


def parse_order_by(order_by: str | Sequence[str]) -> list[OrderKey]:
    """``"price"`` ascending, ``"-price"`` descending; a list for several keys."""
    items = [order_by] if isinstance(order_by, str) else list(order_by)
    keys = []
    for item in items:
        if not isinstance(item, str) or not item.lstrip("-"):
            raise ValueError(
                f"top_k(order_by=...) takes column names ('-col' = descending), got {item!r}"
            )
        keys.append(OrderKey(item.lstrip("-"), not item.startswith("-")))
    return keys


_UNORDERABLE = (T.MapType, T.ArrayType, T.BinaryType)


class TopKReducer:
    """``top_k(by=..., order_by=..., k=...)``: the first `k` rows per group.

    Ties on `order_by` are broken by the union priority column (when the input came
    through ``union(..., priority_column=...)``) and then by the remaining columns, so the
    result is a function of the group's multiset, whatever the arrival order.
    """

    def __init__(
        self,
        k: int,
        order_by: Sequence[OrderKey],
        schema: T.StructType,
        by: Sequence[str],
        priority_column: str | None,
    ) -> None:
        if not isinstance(k, int) or k <= 0:
            raise ValueError(f"top_k(k={k!r}): k must be a positive int")
        names = [f.name for f in schema.fields]
        for key in order_by:
            if key.column not in names:
                raise ValueError(
                    f"top_k(order_by={key.column!r}): no such column; columns are {names}"
                )
        self.k = k
        self.order_by = list(order_by)
        ordered = {key.column for key in order_by} | set(by)
        tie = []
        if priority_column and priority_column not in ordered:
            tie.append(priority_column)
        tie += [
            f.name
            for f in schema.fields
            if f.name not in ordered
            and f.name != priority_column
            and not isinstance(f.dataType, _UNORDERABLE)
        ]
        self.tie = tie
        self.value_columns = [n for n in names if n not in by]

    def __call__(self, m: DataFrame, group: Sequence[str]) -> DataFrame:
        order = [
            F.col(k.column).asc_nulls_first() if k.ascending else F.col(k.column).desc_nulls_last()
            for k in self.order_by
        ] + [F.col(c).asc_nulls_first() for c in self.tie]
        w = Window.partitionBy(*group).orderBy(*order).rowsBetween(Window.unboundedPreceding, 0)
        cum = F.sum(CNT).over(w)
        take = F.least(F.col(CNT), F.lit(self.k) - (cum - F.col(CNT)))
        return (
            m.withColumn("__take", take)
            .filter(F.col("__take") > 0)
            .withColumn(CNT, F.col("__take"))
            .drop("__take")
        )


class DifferentialReduce:
    """Per-time reduction of a keyed collection (see module docstring)."""

    def __init__(
        self, reducer, by: Sequence[str], value_columns: Sequence[str], checkpoint
    ) -> None:
        self.reducer = reducer
        self.by = list(by)
        self.values = [c for c in value_columns if c not in self.by]
        self.checkpoint = checkpoint
        self.state: DataFrame | None = None  # by + values + _cnt
        self.output: DataFrame | None = None  # by + outputs + _cnt

    def step(self, delta: DataFrame | None) -> DataFrame | None:
        if delta is None:
            return None
        by, cols = self.by, self.by + self.values
        d = consolidate(delta.select(*cols, TIME, DIFF), cols + [TIME])
        kt = d.select(*by, TIME).distinct()
        kw = Window.partitionBy(*by).orderBy(TIME)
        kt = kt.withColumn("__next", F.lead(TIME).over(kw)).withColumn(
            "__first", F.row_number().over(kw) == 1
        )
        touched = kt.select(*by).distinct()

        # Rows of touched keys: the state (at time -inf) and the tick's updates.
        rows = d.withColumnRenamed(TIME, "__rt").withColumnRenamed(DIFF, CNT)
        if self.state is not None:
            old = null_safe_join(self.state, touched, by, "left_semi").withColumn(
                "__rt", F.lit(None).cast("long")
            )
            rows = union_all([old, rows])
        at = null_safe_join(rows, kt.select(*by, TIME), by)
        at = at.filter(F.col("__rt").isNull() | (F.col("__rt") <= F.col(TIME)))
        m = consolidate(at, cols + [TIME], CNT).filter(F.col(CNT) > 0)
        result = self.reducer(m, by + [TIME])  # by, _time, outputs, _cnt
        outs = [c for c in result.columns if c not in (*by, TIME, CNT)]

        plus = result.select(*by, *outs, TIME, F.col(CNT).alias(DIFF))
        nxt = null_safe_join(result, kt.select(*by, TIME, "__next"), by + [TIME]).filter(
            F.col("__next").isNotNull()
        )
        minus_prev = nxt.select(*by, *outs, F.col("__next").alias(TIME), (-F.col(CNT)).alias(DIFF))
        parts = [plus, minus_prev]
        if self.output is not None:
            first = kt.filter("__first").select(*by, TIME)
            parts.append(
                null_safe_join(self.output, first, by).select(
                    *by, *outs, TIME, (-F.col(CNT)).alias(DIFF)
                )
            )
        out = consolidate(union_all(parts), by + outs + [TIME])

        last = null_safe_join(
            result, kt.filter(F.col("__next").isNull()).select(*by, TIME), by + [TIME]
        )
        new_output = last.select(*by, *outs, CNT)
        if self.output is not None:
            new_output = union_all(
                [null_safe_join(self.output, touched, by, "left_anti"), new_output]
            )
        merged = d.select(*cols, F.col(DIFF).alias(CNT))
        new_state = consolidate(union_all([self.state, merged]), cols, CNT)
        # One job materialises the new state, the new output and the tick's updates.
        packed = self.checkpoint(pack({"state": new_state, "output": new_output, "delta": out}))
        self.state = unpack(packed, "state", cols + [CNT])
        self.output = unpack(packed, "output", by + outs + [CNT])
        return unpack(packed, "delta", by + outs + [TIME, DIFF])


class WindowedReduce:
    """Emit each window's reduction once, when sealed (see module docstring)."""

    def __init__(
        self,
        reducer,
        spec: WindowSpec,
        by: Sequence[str],
        value_columns: Sequence[str],
        monotonic: bool,
        checkpoint,
    ) -> None:
        self.reducer = reducer
        self.spec = spec
        self.by = [c for c in by if c not in ("window_start", "window_end")]
        self.values = [
            c for c in value_columns if c not in self.by and c not in ("window_start", "window_end")
        ]
        self.session = isinstance(spec, Session)
        # Append-only input + decomposable aggregates: keep partial aggregates only.
        self.partial = (
            monotonic
            and not self.session
            and isinstance(reducer, AggregateReducer)
            and reducer.decomposable
        )
        self.checkpoint = checkpoint
        self.buffer: DataFrame | None = None
        self.last_hi: int | None = None  # the frontier of the previous step (None: unknown)

    def step(self, delta: DataFrame | None, hi: int | None) -> DataFrame | None:
        if self.session:
            return self._step_session(delta, hi)
        group = ["window_start", "window_end", *self.by]
        may_close = self._may_close(hi)
        self.last_hi = hi
        if self.partial:
            if delta is None:
                fresh = combined = self.buffer
            elif self.buffer is None:
                # One aggregation gives one row per group: no merge needed.
                fresh = combined = self.reducer.partials(delta, group, DIFF)
            else:
                # The tick's rows as single-row partials (typed like the buffer), merged
                # with the buffer in one aggregation (one shuffle).
                rows = self.reducer.row_partials(delta, group, DIFF)
                types = {f.name: f.dataType for f in self.buffer.schema.fields}
                fresh = rows.select(*[F.col(c).cast(types[c]).alias(c) for c in rows.columns])
                combined = self.reducer.merge(union_all([self.buffer, fresh]), group)
            if combined is None:
                return None
            fresh = None if delta is None else fresh
            if hi is None:
                # Every window is sealed and no state is kept: no checkpoint job; the
                # aggregation runs inside the consumer's job.
                self.buffer = None
                out = self.reducer.finalize(combined, group)
            else:
                if fresh is not None:
                    combined = self.checkpoint(combined)
                self.buffer = combined.filter(F.col("window_end") > hi)
                if not may_close:
                    return None  # no window can end in this tick's range: no output job
                out = self.reducer.finalize(combined.filter(F.col("window_end") <= hi), group)
        else:
            cols = group + self.values
            fresh = None if delta is None else delta.select(*cols, F.col(DIFF).alias(CNT))
            both = union_all([self.buffer, fresh])
            if both is None:
                return None
            combined = consolidate(both, cols, CNT) if fresh is not None else both
            if hi is None:  # all sealed, no state kept: no checkpoint job
                self.buffer = None
                sealed = combined
            else:
                if fresh is not None:
                    combined = self.checkpoint(combined)
                sealed = combined.filter(F.col("window_end") <= hi)
                self.buffer = combined.filter(F.col("window_end") > hi)
                if not may_close:
                    return None
            out = self.reducer(sealed.filter(F.col(CNT) > 0), group)
        return out.withColumn(TIME, F.col("window_end") - 1).withColumnRenamed(CNT, DIFF)

    def _may_close(self, hi: int | None) -> bool:
        """Can a window end in ``(previous hi, hi]``? Buffered windows all end after the
        previous frontier (the others were emitted) and new rows lie at or after it, so
        when no window boundary of the spec falls in that range nothing is sealed."""
        lo = self.last_hi
        if hi is None or lo is None:
            return True
        if isinstance(self.spec, Tumbling):
            period, phase = self.spec.size, self.spec.offset
        elif isinstance(self.spec, Sliding):
            period, phase = self.spec.slide, self.spec.size % self.spec.slide
        else:
            return True
        return (hi - phase) // period > (lo - phase) // period

    def _step_session(self, delta: DataFrame | None, hi: int | None) -> DataFrame | None:
        gap = self.spec.gap
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
        # Sessions are defined by rows present (count > 0), ordered by time per key.
        w = Window.partitionBy(*self.by).orderBy("__t")
        present = rows.filter(F.col(CNT) > 0)
        times = present.select(*self.by, "__t").distinct()
        brk = F.when(
            F.lag("__t").over(w).isNull() | (F.col("__t") - F.lag("__t").over(w) >= gap), 1
        ).otherwise(0)
        times = times.withColumn(
            "__sid", F.sum(brk).over(w.rowsBetween(Window.unboundedPreceding, 0))
        )
        bounds = times.groupBy(*self.by, "__sid").agg(
            F.min("__t").alias("window_start"), (F.max("__t") + gap).alias("window_end")
        )
        times = null_safe_join(times, bounds, self.by + ["__sid"])
        tagged = self.checkpoint(null_safe_join(rows, times, self.by + ["__t"], "left"))
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
