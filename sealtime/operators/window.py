"""`AssignWindows`: ``window_start``/``window_end`` from ``_time`` (tumbling, sliding).

A pure function of each update's time (a sliding window explodes a row into its
windows); session windows are formed by the aggregate that follows, per key.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from .. import plan as P
from ..spark.relational import WindowAssigner
from .base import Env, Operator

__all__ = ["AssignWindows"]


class AssignWindows(Operator[P.AssignWindows]):
    """Add the window columns of the node's spec (sessions pass through)."""

    def __init__(self, node: P.AssignWindows, env: Env) -> None:
        super().__init__(node, env)
        spec = node.spec
        # The expressions are built once: rebuilding them cost ~30 ms of py4j per tick.
        self.assigner = WindowAssigner(spec) if spec.per_row else None
        names = node.inputs[0].schema.names
        self.has_windows = P.WINDOW_START in names or P.WINDOW_END in names

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is None or self.assigner is None:
            return d
        return self.assigner.apply(d, has_windows=self.has_windows)
