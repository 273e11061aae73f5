"""`Over` (window functions) and `Collect` (list aggregates): keyed recomputation.

Both keep an additive arrangement of their input's rows by the partition (group) key,
like `GeneralReduce` and `TopK`; per tick the kernel (`sealtime.kernels.over`)
recomputes the touched keys at each of their times and emits the difference. Spark
prepares the input (keys, row hash, ``__h``/``__p``) and finalises the output: each
function's value cast to the type Spark gives it, and ``LAG``/``LEAD``'s default where
the offset falls outside the partition.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.steps import RowsStep
from ..kernels.over import (
    CollectSpec,
    OverFn,
    OverSpec,
    collect_schema,
    collect_step,
    output_schema,
    over_step,
)
from ..spark.frames import DIFF, TIME, with_system
from .base import Env
from .keyed import KeyedOperator, tie_columns
from .keys import KeyRouting

__all__ = ["Collect", "Over", "RecomputeStep"]


@dataclass(frozen=True)
class RecomputeStep(RowsStep):
    """One tick of `over_step` or `collect_step` on one partition of an additive
    arrangement of the keys' rows (picklable: Spark ships it to the tasks)."""

    spec: OverSpec | CollectSpec

    def kernel(self) -> Callable[..., tuple[pa.Table, pa.Table]]:
        return over_step if isinstance(self.spec, OverSpec) else collect_step


class _Recompute(KeyedOperator[Any]):
    """The shared constructor part: routing, arrangement, the prepared input."""

    def _setup(self, node: P.PlanNode, env: Env, keys: list[str]) -> list[str]:
        super().__init__(node, env)
        src = node.inputs[0]
        self.routing = KeyRouting.of(keys, src.schema, env)
        self.arrangement = Arrangement(os.path.join(env.state_dir, "arrangement"), env.partitions)
        values = [f.name for f in src.schema.fields if f.name not in keys]
        raw = [F.col(f"`{c}`") for c in values]
        row_hash = F.xxhash64(*self.routing.key_values, *raw).alias("__r")
        self.prep = [*self.routing.key_exprs, *raw, TIME, DIFF, *self.routing.derived, row_hash]
        probe = env.spark.createDataFrame([], with_system(src.schema))
        self.input_arrow = to_arrow_schema(probe.select(*self.prep).schema, timezone="UTC")
        return values

    def kernel_step(self, version: int, expire: tuple[str, int] | None) -> RecomputeStep:
        return RecomputeStep(self.spec, self.arrangement.fs, version, expire)


class Over(_Recompute):
    """``over(by=..., order_by=..., name=function, ...)``: see the module docstring."""

    def __init__(self, node: P.Over, env: Env) -> None:
        keys = list(node.by)
        values = self._setup(node, env, keys)
        src = node.inputs[0]
        order = tuple((o.column, o.ascending) for o in node.order_by if o.column not in keys)
        ordered = {c for c, _ in order}
        tie = tie_columns(src.schema, values, ordered, src.priority_column)
        functions = tuple(
            OverFn(f.name, f.kind, f.column, f.offset, f.frame) for f in node.functions
        )
        self.spec = OverSpec(tuple(self.routing.keys), tuple(values), order, tuple(tie), functions)
        self.output_arrow = output_schema(self.spec, self.input_arrow)
        self.output_spark = from_arrow_schema(self.output_arrow)
        types = {f.name: f.dataType for f in node.schema.fields}
        finals: dict[str, Column] = {}
        for f in node.functions:
            value = F.col(f"`{f.name}`")
            if f.kind in ("lag", "lead") and f.default is not None:
                value = F.when(F.col(f"`{f.name}__out`"), F.lit(f.default)).otherwise(value)
            finals[f.name] = value.cast(types[f.name]).alias(f.name)
        self.finalize = [
            finals.get(c, F.col(f"`{c}`").cast(types[c]).alias(c)) for c in node.columns
        ] + [F.col(TIME), F.col(DIFF)]


class Collect(_Recompute):
    """``collect(by=..., name=("list"|"set", column), ...)``: see the module docstring."""

    def __init__(self, node: P.Collect, env: Env) -> None:
        keys = list(node.by)
        values = self._setup(node, env, keys)
        lists = tuple((c.name, c.kind, c.column) for c in node.lists)
        self.spec = CollectSpec(tuple(self.routing.keys), tuple(values), lists)
        self.output_arrow = collect_schema(self.spec, self.input_arrow)
        self.output_spark = from_arrow_schema(self.output_arrow)
        types = {f.name: f.dataType for f in node.schema.fields}
        self.finalize = [
            *(F.col(f"`{c}`").cast(types[c]).alias(c) for c in node.columns),
            F.col(TIME),
            F.col(DIFF),
        ]
