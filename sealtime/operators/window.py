"""`AssignWindows`: ``window_start``/``window_end`` from ``_time`` (tumbling, sliding).

A pure function of each update's time (a sliding window explodes a row into its
windows); session windows are formed by the aggregate that follows, per key.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from ..spark.relational import assign_windows
from .base import Operator

__all__ = ["AssignWindows"]


class AssignWindows(Operator):
    """Add the window columns of ``node.params["spec"]`` (sessions pass through)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        spec = self.node.params["spec"]
        if d is None:
            return None
        return assign_windows(d, spec) if spec.per_row else d
