"""`AdvanceTime`: every update's time advanced to the next multiple of a granularity.

``advance_time(to=g)`` is differential's ``delay`` / Materialize's timestamp rounding:
an update at ``t`` leaves at ``ceil_g(t)`` (a time already on a multiple stays). It is
stateless: one column expression on each tick's updates. Its output frontier is its
input frontier rounded up — the progress tracker knows it through the operator's path
summary, `sealtime.progress.RoundUp` (`sealtime.plan.AdvanceTime.summary`).

An update at input time ``t < F`` (``F`` the input frontier, the range this operator
processes) can leave at ``ceil_g(t) >= F``: output times are *not* below the input
frontier, unlike every identity operator's. `delays` tells the engine so; it holds
such updates back at the consumer's input until the consumer's frontier (``ceil_g(F)``
and later) seals them, like any input that runs ahead (the plan node's ``delays``).

>>> ceil_to(1001, 1000), ceil_to(2000, 1000), ceil_to(-1, 1000)
(2000, 2000, 0)
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import plan as P
from ..columns import TIME
from ..time.order import MIN_TIME
from .base import Operator

__all__ = ["AdvanceTime", "ceil_to"]


def ceil_to(t: int, g: int) -> int:
    """The least multiple of `g` that is ≥ `t` (exact for negative `t` too)."""
    return -((-t) // g) * g


class AdvanceTime(Operator[P.AdvanceTime]):
    """``_time`` becomes ``ceil(_time / g) * g`` (``g``: the node's granularity)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is None:
            return None
        g = F.lit(self.node.granularity).cast("long")
        t = F.col(TIME)
        # t + ((g - t mod g) mod g), with a positive modulus: exact integer arithmetic.
        return d.withColumn(TIME, t + F.pmod(g - F.pmod(t, g), g))

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        top = max(inputs, default=MIN_TIME)
        return top if top <= MIN_TIME else ceil_to(top, self.node.granularity)
