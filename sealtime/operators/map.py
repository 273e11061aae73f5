"""`Map`: a per-row DataFrame function (select, with_columns, filter, flat_map, map).

Stateless: the function is applied to each tick's updates; Spark fuses it into the
stage of whatever consumes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from .base import Operator

__all__ = ["Map"]


class Map(Operator):
    """Apply ``node.params["fn"]`` to the updates."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        return None if d is None else self.node.params["fn"](d)
