"""`Consolidate`: one update per distinct (row, time), multiplicities summed, zeros dropped."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from .. import plan as P
from ..columns import TIME
from ..spark.frames import consolidate
from .base import Operator

__all__ = ["Consolidate"]


class Consolidate(Operator[P.Consolidate]):
    """``groupBy(row, _time).sum(_diff)`` without zeros (one shuffle of the tick's updates)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        return None if d is None else consolidate(d, self.node.columns + [TIME])
