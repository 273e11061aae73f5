"""`Reduce`: ``aggregate(by=..., name=st.<agg>(...))`` at every time (differential).

Accumulable aggregates (count, sum, avg; min and max of append-only input) run the
`sealtime.kernels.accumulate` kernel over an upsert arrangement keyed by the group:
per tick the updates are shuffled by key (only the updates: the state never moves), and
in each partition the kernel looks up the touched keys' state, runs the aggregates in
time order, emits the changes and writes the touched keys' new state. A tick costs
O(delta log delta + touched state), whatever the size of the state.

Spark computes what needs Spark's types: the prepared inputs (decimal casts) before the
kernel and the final values (``avg`` as a double, ``sum`` as the declared type) after.
"""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.steps import AccumulateStep, GeneralStep
from ..kernels.accumulate import ROWS, AccumulateSpec, Agg, state_schema
from ..kernels.general_reduce import GAgg, ReduceSpec, output_schema
from ..kernels.keyed import HASH, updates_schema
from ..plan import Aggregate, AggregateKind
from ..spark.frames import DIFF, TIME, with_system
from .base import Env
from .keyed import KeyedOperator
from .keys import KeyRouting

__all__ = ["Distinct", "GeneralReduce", "Reduce", "accumulable", "reduce_operator"]

_INTS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_FLOATS = (T.FloatType, T.DoubleType)
_FLOAT_SUM = T.DecimalType(38, 12)
_UNORDERED = (T.MapType, T.ArrayType, T.StructType, T.BinaryType)


def accumulable(aggregates: dict[str, Aggregate], schema: T.StructType, monotonic: bool) -> bool:
    """Can the accumulable kernel compute these aggregates?"""
    types = {f.name: f.dataType for f in schema.fields}
    for agg in aggregates.values():
        if agg.kind is AggregateKind.COUNT:
            continue
        dtype = types[agg.column]
        if agg.kind.additive:
            if not isinstance(dtype, (*_INTS, *_FLOATS, T.DecimalType)):
                return False
        elif agg.kind.extremum:
            if not monotonic or isinstance(dtype, _UNORDERED):
                return False
        else:
            return False
    return True


def reduce_operator(node: P.Reduce, env: Env) -> KeyedOperator[Any]:
    """The operator of an aggregate: the accumulable kernel where it can compute every
    aggregate (`accumulable`), the general one otherwise."""
    src = node.inputs[0]
    if accumulable(node.aggregates, src.schema, src.monotonic):
        return Reduce(node, env)
    return GeneralReduce(node, env)


class Reduce(KeyedOperator[Any]):
    """A non-windowed aggregate (see the module docstring)."""

    def __init__(self, node: P.Reduce, env: Env) -> None:
        self._build(node, env, list(node.by), dict(node.aggregates))

    def _build(
        self, node: P.PlanNode, env: Env, by: list[str], aggregates: dict[str, Aggregate]
    ) -> None:
        super().__init__(node, env)
        src = node.inputs[0]
        types = {f.name: f.dataType for f in src.schema.fields}
        self.routing = KeyRouting.of(by, src.schema, env)
        self.arrangement = Arrangement(os.path.join(env.state_dir, "arrangement"), env.partitions)
        aggs: list[Agg] = []
        prep: list[Column] = []
        finals: list[Column] = []
        out_types = {f.name: f.dataType for f in node.schema.fields}
        for name, agg in aggregates.items():
            dtype = types.get(agg.column) if agg.column else None
            if agg.kind is AggregateKind.COUNT:
                a = Agg(name, "count")
                final = F.col(ROWS)
            elif agg.kind.additive:
                if isinstance(dtype, _INTS):
                    a = Agg(name, agg.kind.value, "int")
                    x = F.col(agg.column).cast("long")
                elif isinstance(dtype, _FLOATS):
                    a = Agg(name, agg.kind.value, "dec", 12)
                    x = F.col(agg.column).cast(_FLOAT_SUM)
                else:
                    a = Agg(name, agg.kind.value, "dec", dtype.scale)
                    x = F.col(agg.column).cast(T.DecimalType(38, dtype.scale))
                prep.append(x.alias(a.input))
                s, n = F.col(a.sum_column), F.col(a.count_column)
                if agg.kind is AggregateKind.SUM:
                    final = F.when(n > 0, s)
                else:
                    final = s.cast(_FLOAT_SUM) / n
            else:
                a = Agg(name, agg.kind.value, "value")
                prep.append(F.col(agg.column).alias(a.input))
                final = F.when(F.col(a.count_column) > 0, F.col(a.value_column))
            aggs.append(a)
            finals.append(final.cast(out_types[name]).alias(name))
        self.spec = AccumulateSpec(tuple(self.routing.keys), tuple(aggs))
        self.prep = [
            *self.routing.key_exprs,
            F.col(TIME),
            F.col(DIFF),
            *prep,
            *self.routing.derived,
        ]
        self.finalize = [*[F.col(k) for k in self.routing.user_keys], *finals, TIME, DIFF]
        probe = env.spark.createDataFrame([], with_system(src.schema))
        routed = probe.select(*self.prep)
        self.input_arrow = to_arrow_schema(routed.schema, timezone="UTC")
        state = state_schema(self.spec, self.input_arrow)
        self.output_arrow = _output_schema(state)
        self.output_spark = from_arrow_schema(self.output_arrow)

    def kernel_step(self, version: int, expire: tuple[str, int] | None) -> AccumulateStep:
        return AccumulateStep(self.spec, self.arrangement.fs, version, expire)


def _output_schema(state):
    return updates_schema(f for f in state if f.name != HASH)


class Distinct(Reduce):
    """``distinct()``: each row with a positive multiplicity, once.

    The accumulable kernel with the whole row as the key and no aggregate: the state
    is each row's multiplicity, and the output changes exactly where a row's
    multiplicity crosses zero.
    """

    def __init__(self, node: P.Distinct, env: Env) -> None:
        self._build(node, env, list(node.columns), {})


class GeneralReduce(KeyedOperator[P.Reduce]):
    """An aggregate that is not accumulable: ``min``/``max`` under retractions or
    ``count_distinct`` (with any others beside them).

    The arrangement is additive: every key's rows with their multiplicities. Per tick
    the general kernel (`sealtime.kernels.general_reduce`) lays the touched keys out as a
    timeline of slots (the state before the tick, then each of the key's times) and
    answers every aggregate at every slot through per-slot top-1 and counts over the
    values' presence intervals: O((delta + touched rows) log) per tick.
    """

    def __init__(self, node: P.Reduce, env: Env) -> None:
        super().__init__(node, env)
        src = node.inputs[0]
        aggregates: dict[str, Aggregate] = dict(node.aggregates)
        types = {f.name: f.dataType for f in src.schema.fields}
        out_types = {f.name: f.dataType for f in node.schema.fields}
        keys = list(node.by)
        self.routing = KeyRouting.of(keys, src.schema, env)
        self.arrangement = Arrangement(os.path.join(env.state_dir, "arrangement"), env.partitions)
        aggs: list[GAgg] = []
        values: list[str] = []
        prep: list[Column] = []
        raw: list[Column] = []  # the same expressions, unnamed, for the row hash
        finals: list[Column] = []

        def value(name: str, expr: Column) -> None:
            if name not in values:
                values.append(name)
                prep.append(expr.alias(name))
                raw.append(expr)

        for name, agg in aggregates.items():
            dtype = types.get(agg.column) if agg.column else None
            if agg.kind is AggregateKind.COUNT:
                aggs.append(GAgg(name, "count"))
                final = F.col(name)
            elif agg.kind.additive:
                column = f"__x_{name}"
                if isinstance(dtype, _INTS):
                    g = GAgg(name, agg.kind.value, column, "int")
                    value(column, F.col(agg.column).cast("long"))
                elif isinstance(dtype, _FLOATS):
                    g = GAgg(name, agg.kind.value, column, "dec", 12)
                    value(column, F.col(agg.column).cast(_FLOAT_SUM))
                else:
                    g = GAgg(name, agg.kind.value, column, "dec", dtype.scale)
                    value(column, F.col(agg.column).cast(T.DecimalType(38, dtype.scale)))
                aggs.append(g)
                if agg.kind is AggregateKind.SUM:
                    final = F.col(name)
                else:
                    final = F.col(f"__s_{name}").cast(_FLOAT_SUM) / F.col(f"__n_{name}")
            else:  # min, max, count_distinct read the column itself
                if agg.column not in keys:
                    value(agg.column, F.col(agg.column))
                    column = agg.column
                else:  # a key column as a value: its own copy (values exclude keys)
                    column = f"__v_{agg.column}"
                    value(column, F.col(agg.column))
                aggs.append(GAgg(name, agg.kind.value, column))
                final = F.col(name)
            finals.append(final.cast(out_types[name]).alias(name))
        self.spec = ReduceSpec(tuple(self.routing.keys), tuple(values), tuple(aggs))
        row_hash = F.xxhash64(*self.routing.key_values, *raw).alias("__r")
        self.prep = [*self.routing.key_exprs, *prep, TIME, DIFF, *self.routing.derived, row_hash]
        self.finalize = [*[F.col(k) for k in self.routing.user_keys], *finals, TIME, DIFF]
        probe = env.spark.createDataFrame([], with_system(src.schema))
        routed = probe.select(*self.prep)
        self.input_arrow = to_arrow_schema(routed.schema, timezone="UTC")
        self.output_arrow = output_schema(self.spec, self.input_arrow)
        self.output_spark = from_arrow_schema(self.output_arrow)

    def kernel_step(self, version: int, expire: tuple[str, int] | None) -> GeneralStep:
        return GeneralStep(self.spec, self.arrangement.fs, version, expire)
