"""`TemporalFilter`: each update entered when visible and retracted when it expires.

For an update ``(row, t, d)`` with bounds ``since``/``until`` (columns, ms; NULL:
unbounded) the row is visible on ``[max(t, since), until)``: the output is ``(row,
max(t, since), d)`` and ``(row, until, -d)`` when that interval is not empty, nothing
otherwise. Stateless: both output updates come from the input update alone; those at
times the consumers have not sealed yet are held back by the engine (`delays`) until the
frontier passes them. No clock is read: a replay emits the same updates at the same
times.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import plan as P
from ..columns import DIFF, TIME
from ..time.order import MAX_TIME
from .base import Env, Operator

__all__ = ["TemporalFilter"]


class TemporalFilter(Operator[P.TemporalFilter]):
    """See the module docstring."""

    def __init__(self, node: P.TemporalFilter, env: Env) -> None:
        super().__init__(node, env)
        t, diff = F.col(TIME), F.col(DIFF)
        since = F.col(f"`{node.since}`") if node.since else None
        until = F.col(f"`{node.until}`") if node.until else None
        start = F.greatest(t, F.coalesce(since, t)) if since is not None else t
        enter = F.struct(start.alias(TIME), diff.alias(DIFF))
        if until is None:
            self.visible = F.lit(True)
            changes = F.array(enter)
        else:
            self.visible = until.isNull() | (until > start)
            leave = F.when(until.isNotNull(), F.struct(until.alias(TIME), (-diff).alias(DIFF)))
            changes = F.filter(F.array(enter, leave), lambda x: x.isNotNull())
        self.columns = [F.col(f"`{c}`") for c in node.columns]
        self.changes = F.inline(changes)

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is None:
            return None
        return d.filter(self.visible).select(*self.columns, self.changes)

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        # (the rows' bounds lie anywhere ahead: unknown without running Spark)
        return MAX_TIME
