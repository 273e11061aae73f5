"""`TopK`: the first k rows per key at every time (differential top-k).

The arrangement is additive: every key's rows with their multiplicities. Per tick the
top-k kernel (`sealtime.kernels.differential_top_k`) ranks the touched keys' rows once in the
operator's order and answers the top k at each of the key's times with a per-slot
top-k over the rows' presence intervals; the output is the change in copies of each
row in the top k. Ties are broken by the union priority column, then by the other
columns, then by a hash of the row, so the result never depends on arrival order.
"""

from __future__ import annotations

import os

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.steps import GeneralStep
from ..kernels.differential_top_k import TopKSpec
from ..kernels.keyed import updates_schema
from ..spark.frames import DIFF, TIME, with_system
from .base import Env
from .keyed import KeyedOperator, tie_columns
from .keys import KeyRouting

__all__ = ["TopK"]


class TopK(KeyedOperator[P.TopK]):
    """``top_k(by=..., order_by=..., k=...)`` over a non-windowed collection."""

    def __init__(self, node: P.TopK, env: Env) -> None:
        super().__init__(node, env)
        src = node.inputs[0]
        keys = list(node.by)
        self.routing = KeyRouting.of(keys, src.schema, env)
        self.arrangement = Arrangement(os.path.join(env.state_dir, "arrangement"), env.partitions)
        values = [f.name for f in src.schema.fields if f.name not in keys]
        order = tuple((o.column, o.ascending) for o in node.order_by)
        ordered = {c for c, _ in order}
        tie = tie_columns(src.schema, values, ordered, src.priority_column)
        self.spec = TopKSpec(tuple(self.routing.keys), tuple(values), order, tuple(tie), node.k)
        raw = [F.col(c) for c in values]
        row_hash = F.xxhash64(*self.routing.key_values, *raw).alias("__r")
        self.prep = [*self.routing.key_exprs, *raw, TIME, DIFF, *self.routing.derived, row_hash]
        probe = env.spark.createDataFrame([], with_system(src.schema))
        routed = probe.select(*self.prep)
        self.input_arrow = to_arrow_schema(routed.schema, timezone="UTC")
        out = [self.input_arrow.field(c) for c in (*self.routing.keys, *values)]
        self.output_arrow = updates_schema(out)
        self.output_spark = from_arrow_schema(self.output_arrow)
        types = {f.name: f.dataType for f in node.schema.fields}
        self.finalize = [F.col(c).cast(types[c]) for c in node.columns] + [TIME, DIFF]

    def kernel_step(self, version: int, expire: tuple[str, int] | None) -> GeneralStep:
        return GeneralStep(self.spec, self.arrangement.fs, version, expire)
