"""`Union`: the inputs' updates together, each input's index in the priority column.

The inputs are in priority order (Triceps' merge priorities): with a priority column,
order-sensitive operators downstream (top-k) break ties by it before anything else.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import plan as P
from ..columns import DIFF, TIME
from ..spark.frames import union_all
from .base import Operator

__all__ = ["Union"]


class Union(Operator[P.Union]):
    """``unionByName`` of the inputs (columns in the first input's order)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        pcol = self.node.priority
        names = self.node.names
        parts = []
        for i, part in enumerate(inputs):
            if part is None:
                continue
            part = part.select(*names, TIME, DIFF)
            if pcol is not None:
                part = part.withColumn(pcol, F.lit(i).cast("int"))
            parts.append(part)
        return union_all(parts)
