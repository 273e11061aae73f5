"""`Inspect`: a debugging tap calling ``fn(updates, lower, upper)`` per sealed range."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from .. import plan as P
from ..spark.frames import to_arrow
from ..time.order import MIN_TIME
from .base import Operator

__all__ = ["Inspect"]


class Inspect(Operator[P.Inspect]):
    """Hand each range's updates to Python as Arrow; the collection passes through (the
    engine keeps the input materialised, so the tap does not run the plan twice)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is not None:
            # Users see "nothing sealed before" as None, never the internal minimum.
            self.node.fn(to_arrow(d), None if lo <= MIN_TIME else lo, hi)
        return d
