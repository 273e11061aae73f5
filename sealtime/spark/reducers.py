"""Reducers on Spark: aggregates and top-k as Spark expressions over a group's rows.

A *reducer* maps a multiset of a group's rows (``group..., values..., _cnt`` with
``_cnt > 0``) to the group's output multiset (``group..., outputs..., _cnt``). The
windowed and session operators run them over each sealed window's rows, and
`AggregateReducer` also provides the partial aggregates (``partials``) and the values
computed from merged partials (``final_columns``) that let append-only windows keep one
partial row per (window, key); the kernel merges partials across ticks.
The differential (non-windowed) operators run kernels instead (`sealtime.kernels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import ConfigError, SchemaError
from ..plan.aggregates import Aggregate, AggregateKind
from ..plan.order import OrderKey
from ..plan.reduce import Aggregation, TopKOrder
from .frames import CNT
from .plans import GroupedAggregation, Projection

__all__ = ["reducer_of", "AggregateReducer", "TopKReducer"]

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
                raise SchemaError(
                    f"aggregate {name}=st.{agg.kind}({agg.column!r}): no column {agg.column!r}; "
                    f"columns are {sorted(self.types)}"
                )
        #: the expressions of each call shape, built once (`sealtime.spark.plans`)
        self._compiled: dict[tuple, Any] = {}

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
        key = ("call", tuple(group))
        if key not in self._compiled:
            self._compiled[key] = (
                GroupedAggregation(list(group), self._exprs()),
                Projection(["*", F.lit(1).cast("long").alias(CNT)]),
            )
        grouped, counted = self._compiled[key]
        return counted.apply(grouped.apply(m))

    def _exprs(self) -> list[Column]:
        w = F.col(CNT)
        exprs = []
        for name, agg in self.aggs.items():
            if agg.kind is AggregateKind.COUNT:
                e = F.sum(w).cast("long")
            elif agg.kind is AggregateKind.SUM:
                e = self._sum(agg.column, w)
                if _is_float(self.types[agg.column]):
                    e = e.cast("double")
            elif agg.kind is AggregateKind.AVG:
                n = F.sum(F.when(F.col(agg.column).isNotNull(), w))
                e = (self._sum(agg.column, w).cast(_FLOAT_SUM) / n).cast("double")
            elif agg.kind is AggregateKind.MIN:
                e = F.min(agg.column)
            elif agg.kind is AggregateKind.MAX:
                e = F.max(agg.column)
            else:
                e = F.countDistinct(agg.column).cast("long")
            exprs.append(e.alias(name))
        return exprs

    # Partial aggregation (append-only input): partial columns, merge, finalize.
    def partials(self, df: DataFrame, group: Sequence[str], weight: str) -> DataFrame:
        key = ("partials", tuple(group), weight)
        if key not in self._compiled:
            self._compiled[key] = GroupedAggregation(list(group), self.partial_columns(weight))
        return self._compiled[key].apply(df)

    def partial_columns(self, weight: str) -> list[Column]:
        """The partial aggregates of a group's rows weighted by `weight` (``__c_``,
        ``__s_``, ``__m_`` columns), as aggregate expressions."""
        w = F.col(weight)
        exprs = []
        for name, agg in self.aggs.items():
            if agg.kind is AggregateKind.COUNT:
                exprs.append(F.sum(w).cast("long").alias(f"__c_{name}"))
            elif agg.kind.additive:
                exprs.append(self._sum(agg.column, w).alias(f"__s_{name}"))
                if agg.kind is AggregateKind.AVG:
                    n = F.sum(F.when(F.col(agg.column).isNotNull(), w)).cast("long")
                    exprs.append(n.alias(f"__c_{name}"))
            elif agg.kind is AggregateKind.MIN:
                exprs.append(F.min(agg.column).alias(f"__m_{name}"))
            elif agg.kind is AggregateKind.MAX:
                exprs.append(F.max(agg.column).alias(f"__m_{name}"))
        return exprs

    def final_columns(self) -> dict[str, Column]:
        """Each aggregate's value from the merged partial columns, by output name."""
        cols: dict[str, Column] = {}
        for name, agg in self.aggs.items():
            if agg.kind is AggregateKind.COUNT:
                cols[name] = F.col(f"__c_{name}").alias(name)
            elif agg.kind is AggregateKind.SUM:
                e = F.col(f"__s_{name}")
                cols[name] = (e.cast("double") if _is_float(self.types[agg.column]) else e).alias(
                    name
                )
            elif agg.kind is AggregateKind.AVG:
                e = F.col(f"__s_{name}").cast(_FLOAT_SUM) / F.col(f"__c_{name}")
                cols[name] = e.cast("double").alias(name)
            else:
                cols[name] = F.col(f"__m_{name}").alias(name)
        return cols


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
            raise ConfigError(f"top_k(k={k!r}): k must be a positive int")
        names = [f.name for f in schema.fields]
        for key in order_by:
            if key.column not in names:
                raise SchemaError(
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


def reducer_of(
    reduction: Aggregation | TopKOrder,
    schema: T.StructType,
    group: Sequence[str],
    priority_column: str | None,
) -> tuple[AggregateReducer | TopKReducer, list[str]]:
    """The reducer of a per-window `reduction` over rows of `schema` grouped by `group`,
    and the input columns it reads besides the group."""
    if isinstance(reduction, Aggregation):
        aggregate = AggregateReducer(reduction.aggregates, schema)
        return aggregate, [c for c in aggregate.value_columns if c not in group]
    top = TopKReducer(reduction.k, reduction.order_by, schema, group, priority_column)
    return top, [f.name for f in schema.fields if f.name not in group]
