"""`AssignCumulating`: the cumulating windows (Flink's ``CUMULATE``) holding each row.

A row at ``t`` with period start ``s = t - t mod size`` gets one output row per window
``[s, s + j*step)`` with ``s + j*step > t`` (``explode`` of a sequence): a pure function
of each update's time, like `AssignWindows`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import plan as P
from ..columns import TIME
from .base import Env, Operator

__all__ = ["AssignCumulating"]


class AssignCumulating(Operator[P.AssignCumulating]):
    """Adds ``window_start``/``window_end`` (replacing any the input has)."""

    def __init__(self, node: P.AssignCumulating, env: Env) -> None:
        super().__init__(node, env)
        spec = node.spec
        t = F.col(TIME)
        start = t - F.pmod(t, F.lit(spec.size))
        first_end = start + (F.floor((t - start) / F.lit(spec.step)).cast("long") + 1) * F.lit(
            spec.step
        )
        ends = F.sequence(first_end, start + F.lit(spec.size), F.lit(spec.step))
        self.start = start.alias(P.WINDOW_START)
        self.ends = F.explode(ends).alias(P.WINDOW_END)
        names = node.inputs[0].schema.names
        self.drop = [c for c in (P.WINDOW_START, P.WINDOW_END) if c in names]

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is None:
            return None
        if self.drop:
            d = d.drop(*self.drop)
        return d.select("*", self.start, self.ends)
