"""`Filter`, `Project`, `Map`: per-row operators on each tick's updates.

Stateless: each applies its expressions to the tick's updates, converted for the JVM
once (`sealtime.spark.plans.Projection`); Spark fuses them into the stage of whatever
consumes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from .. import plan as P
from ..columns import DIFF, TIME
from ..spark.plans import Projection
from .base import Operator

__all__ = ["Filter", "Map", "Project"]


class Filter(Operator[P.Filter]):
    """Keep the updates whose row satisfies the node's condition."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        return None if d is None else d.filter(self.node.condition)


class Project(Operator[P.Project]):
    """The node's projection, system columns kept."""

    _projection: Projection | None = None

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is None:
            return None
        if self._projection is None:
            self._projection = Projection([*self.node.projection, TIME, DIFF])
        return self._projection.apply(d)


class Map(Operator[P.Map]):
    """The user's per-row function of the delta frame."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        return None if d is None else self.node.fn(d)
