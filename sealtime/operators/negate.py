"""`Negate`: the same updates with negated multiplicities."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import plan as P
from ..columns import DIFF
from .base import Operator

__all__ = ["Negate"]


class Negate(Operator[P.Negate]):
    """``_diff`` becomes ``-_diff``."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        return None if d is None else d.withColumn(DIFF, -F.col(DIFF))
