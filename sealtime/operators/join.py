"""`Join`: an inner equi-join at every time (bilinear, over two arrangements).

Both inputs' updates of a tick go through one shuffle, tagged by side; in each
partition the join kernel (`sealtime.kernels.join`) pairs the left updates with the
right arrangement's rows of the same keys, the right updates with the left
arrangement, and the updates with each other, then appends each side's updates to its
arrangement. A tick costs O(delta + matching state + output).

Arrangements are shared (differential's ``arrange``, `sealtime.operators.shared`): two
joins that arrange the same collection by the same key, and whose frontiers always
agree (their inputs come from the same roots), read one arrangement; the first of them
writes it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import plan as P
from ..arrangement.arrangement import Arrangement
from ..arrangement.steps import JoinStep, SideRef
from ..arrangement.task import Kernel, KernelTask
from ..kernels.join import SIDE, JoinSpec
from ..kernels.keyed import updates_schema
from ..spark.frames import DIFF, TIME, union_all, with_system
from ..spark.plans import CompiledStep, map_in_arrow
from .base import Env, Operator, expiry
from .keys import KeyRouting
from .shared import ArrangementKey

__all__ = ["Join"]


class Join(Operator[P.Join]):
    """Inner join on the node's ``on`` columns (see the module docstring)."""

    stateful = True
    kernel_counted = True
    _compiled: list[CompiledStep] | None = None

    def __init__(self, node: P.Join, env: Env) -> None:
        super().__init__(node, env)
        a, b = node.inputs
        keys = list(node.on)
        probe = [env.spark.createDataFrame([], with_system(side.schema)) for side in (a, b)]
        common = probe[0].select(*keys).unionByName(probe[1].select(*keys)).schema
        types = {f.name: f.dataType for f in common.fields}
        self.routing = KeyRouting.of(keys, a.schema, env, types=types)
        left = [c for c in a.columns if c not in keys]
        right = [c for c in b.columns if c not in keys]
        self.spec = JoinSpec(tuple(keys), tuple(left), tuple(right))
        fields = {f.name: f.dataType for f in (*a.schema.fields, *b.schema.fields)}
        self.sides: list[list[Column]] = []
        for s, (side, own) in enumerate(((a, left), (b, right))):
            routing = KeyRouting.of(keys, side.schema, env, types=types)
            cols = [F.lit(s).cast("byte").alias(SIDE), *routing.key_exprs]
            for c in (*left, *right):
                cols.append(F.col(c) if c in own else F.lit(None).cast(fields[c]).alias(c))
            row_hash = F.xxhash64(*routing.key_values, *[F.col(c) for c in own])
            cols += [row_hash.alias("__r"), F.col(TIME), F.col(DIFF), *routing.derived]
            self.sides.append(cols)
        routed = probe[0].select(*self.sides[0])
        self.input_arrow = to_arrow_schema(routed.schema, timezone="UTC")
        out_fields = [self.input_arrow.field(c) for c in (*keys, *left, *right)]
        self.output_arrow = updates_schema(out_fields)
        self.output_spark = from_arrow_schema(self.output_arrow)
        out_types = {f.name: f.dataType for f in node.schema.fields}
        self.finalize = [F.col(c).cast(out_types[c]) for c in node.columns] + [TIME, DIFF]
        roots = P.upstream_sources(node)
        self.refs: list[tuple[Arrangement, bool]] = [
            env.arrangements.arrangement(
                ArrangementKey(side.id, tuple(keys), tuple(own), roots),
                os.path.join(env.state_dir, f"side{port}"),
                env.partitions,
            )
            for port, (side, own) in enumerate(((a, left), (b, right)))
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
        refs: list[SideRef] = []
        for arrangement, writer in self.refs:
            if writer:
                refs.append(SideRef(arrangement.fs, arrangement.advance(), True))
            else:
                refs.append(SideRef(arrangement.fs, arrangement.read_version + 1, False))
        task = KernelTask(
            self._join_kernel(refs, hi),
            self.input_arrow,
            self.output_arrow,
            self.probe(refs[0].version),
        )
        routed = self.routing.route(union_all(parts), key=plans[0])
        out = map_in_arrow(routed, task, self.output_spark, plans[0].args)
        return plans[0].finalize.apply(out)

    def _join_kernel(self, refs: list[SideRef], hi: int | None) -> Kernel:
        """The step a tick runs on the sides `refs` (sealing up to `hi`)."""
        return JoinStep(self.spec, (refs[0], refs[1]), expiry(self.node, hi))

    def state(self, directory: str) -> dict[str, Any]:
        return {
            "sides": [a.state() if writer else None for a, writer in self.refs],
        }

    def restore(self, state: dict[str, Any]) -> None:
        sides = state.get("sides", [{}, {}])
        for (arrangement, writer), side in zip(self.refs, sides):
            if writer:
                arrangement.restore(side or {})

    def after_tick(self, pinned: bool) -> None:
        for arrangement, writer in self.refs:
            if writer:
                arrangement.finish_tick()

    def durable(self) -> None:
        for arrangement, writer in self.refs:
            if writer:
                arrangement.durable()

    def pin(self) -> None:
        for arrangement, writer in self.refs:
            if writer:
                arrangement.pin()
