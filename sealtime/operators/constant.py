"""`Constant`: the node's rows at the earliest time, in the first range it seals.

Stateless: the engine steps a node with ``lo`` at the earliest time exactly once (a node
restored from a checkpoint, or added to a running dataflow, starts where its state
does), so the rows enter once and stay.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .. import plan as P
from ..columns import DIFF, TIME
from ..time.order import MIN_TIME
from .base import Operator

__all__ = ["Constant"]


class Constant(Operator[P.Constant]):
    """The rows, each with ``_diff`` 1 at the earliest time (nothing afterwards)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        if lo != MIN_TIME or not self.node.rows:
            return None
        fields = list(self.node.schema.fields) + [
            T.StructField(TIME, T.LongType(), False),
            T.StructField(DIFF, T.LongType(), False),
        ]
        rows = [(*row, MIN_TIME, 1) for row in self.node.rows]
        return self.env.spark.createDataFrame(rows, T.StructType(fields))

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        return MIN_TIME
