"""`IntervalJoin`: `Join` whose sides forget rows no later row can match.

The step is the join's (`sealtime.kernels.join`), but each side's arrangement expires
rows by its own column: after sealing ``[.., hi)`` a left row whose ``time + upper + 1
<= hi`` (a right row whose ``time - lower + 1 <= hi``) is dropped when its run is next
written or merged, so the state is the rows of the last ``upper - lower`` ms (plus what
compaction has not reached yet), not the whole history. Arrangements of an interval
join are its own (never shared: another join would need the rows it drops).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.partition import SpinePartition
from ..arrangement.runs import partition_fs
from ..arrangement.steps import SideRef, spine_rows
from ..arrangement.task import KernelTask
from ..kernels.join import JoinSpec, join_step
from ..spark.frames import union_all
from ..spark.plans import CompiledStep, map_in_arrow
from ..time.order import MAX_TIME
from .base import Env
from .join import Join

__all__ = ["IntervalJoin", "IntervalJoinStep"]


@dataclass(frozen=True)
class IntervalJoinStep:
    """A bilinear join whose two sides expire rows by their own columns."""

    spec: JoinSpec
    sides: tuple[SideRef, SideRef]
    expire: tuple[tuple[str, int], tuple[str, int]]

    def run(self, table: pa.Table, partition: int) -> pa.Table:
        parts = [
            SpinePartition(
                partition_fs(ref.root, partition),
                ref.version,
                (*self.spec.keys,),
                "additive",
                columns=[*self.spec.keys, *self.spec.payload(s)],
            )
            for s, ref in enumerate(self.sides)
        ]
        out, runs = join_step(table, self.spec, lambda side, q: parts[side].lookup(q))
        for part, run, expire in zip(parts, runs, self.expire):
            part.write(run, expire)
        return out

    def state_rows(self, partition: int) -> int:
        return sum(spine_rows(partition_fs(r.root, partition), r.version) for r in self.sides)


class IntervalJoin(Join):
    """An inner join with per-side expiry (see the module docstring)."""

    def __init__(self, node: P.IntervalJoin, env: Env) -> None:
        super().__init__(node, env)
        # own arrangements (never shared): they drop rows other joins would still need
        self.refs = [
            (Arrangement(os.path.join(env.state_dir, f"side{port}"), env.partitions), True)
            for port in (0, 1)
        ]

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        if all(d is None for d in inputs):
            return None
        if self._compiled is None:
            self._compiled = [
                CompiledStep.of(side, self.input_arrow, self.finalize) for side in self.sides
            ]
        plans = self._compiled
        parts = [plan.prep.apply(d) for d, plan in zip(inputs, plans) if d is not None]
        refs = [SideRef(a.fs, a.advance(), True) for a, _ in self.refs]
        bound = hi if hi is not None else MAX_TIME
        node = self.node
        assert isinstance(node, P.IntervalJoin)
        step = IntervalJoinStep(
            self.spec,
            (refs[0], refs[1]),
            ((node.left_expiry, bound), (node.right_expiry, bound)),
        )
        task = KernelTask(step, self.input_arrow, self.output_arrow, self.probe(refs[0].version))
        routed = self.routing.route(union_all(parts), key=plans[0])
        out = map_in_arrow(routed, task, self.output_spark, plans[0].args)
        return plans[0].finalize.apply(out)
