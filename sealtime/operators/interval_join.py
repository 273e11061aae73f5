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
from dataclasses import dataclass

import pyarrow as pa

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.runs import partition_fs
from ..arrangement.steps import SideRef, join_sides, spine_rows
from ..arrangement.task import Kernel
from ..kernels.join import JoinSpec
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
        out, parts, runs = join_sides(table, self.spec, self.sides, partition)
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

    def _join_kernel(self, refs: list[SideRef], hi: int | None) -> Kernel:
        # (every side is its own writer here, so `Join.step`'s refs all advance)
        bound = hi if hi is not None else MAX_TIME
        node = self.node
        assert isinstance(node, P.IntervalJoin)
        return IntervalJoinStep(
            self.spec,
            (refs[0], refs[1]),
            ((node.left_expiry, bound), (node.right_expiry, bound)),
        )
