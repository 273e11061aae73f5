"""`KeyedOperator`: what every single-input operator over one arrangement shares.

Such an operator (`Reduce`, `GeneralReduce`, `Distinct`, `TopK`) prepares its input
with column expressions built once, routes it by key (`KeyRouting`), runs one kernel
step per tick in ``mapInArrow`` over its arrangement, and finalises the kernel's output
with more column expressions. Its state is the arrangement's: `state`, `restore`,
`after_tick`, `durable` and `pin` delegate to it. A subclass sets the attributes in
its constructor and says which kernel step a tick runs (`kernel_step`).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import types as T

from ..arrangement.arrangement import Arrangement
from ..arrangement.task import Kernel, KernelTask
from ..spark.plans import CompiledStep, map_in_arrow
from .base import N, Operator, expiry
from .keys import KeyRouting

__all__ = ["KeyedOperator", "tie_columns"]

_UNORDERABLE = (T.MapType, T.ArrayType, T.BinaryType, T.StructType)


def tie_columns(
    schema: T.StructType, values: Sequence[str], ordered: Container[str], priority: str | None
) -> list[str]:
    """The value columns that break ties after the `ordered` ones, in this order: the
    union's `priority` column, then the other orderable value columns of `schema`."""
    tie = [priority] if priority and priority in values and priority not in ordered else []
    tie += [
        f.name
        for f in schema.fields
        if f.name in values
        and f.name not in ordered
        and f.name != priority
        and not isinstance(f.dataType, _UNORDERABLE)
    ]
    return tie


class KeyedOperator(Operator[N]):
    """Base class of the operators that keep one arrangement of their input by key."""

    stateful = True
    kernel_counted = True

    #: set by the subclass's constructor
    routing: KeyRouting
    arrangement: Arrangement
    prep: list[Column]  # the kernel's input columns (keys, values, derived)
    finalize: list[Column]  # the operator's output columns from the kernel's
    input_arrow: pa.Schema
    output_arrow: pa.Schema
    output_spark: T.StructType
    _compiled: CompiledStep | None = None

    def kernel_step(self, version: int, expire: tuple[str, int] | None) -> Kernel:
        """The picklable kernel step that writes arrangement `version`."""
        raise NotImplementedError

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        d = inputs[0]
        if d is None:
            return None
        version = self.arrangement.advance()
        step = self.kernel_step(version, expiry(self.node, hi))
        task = KernelTask(step, self.input_arrow, self.output_arrow, self.probe(version))
        plan = self.compiled()
        routed = self.routing.route(plan.prep.apply(d), key=plan)
        return plan.finalize.apply(map_in_arrow(routed, task, self.output_spark, plan.args))

    def compiled(self) -> CompiledStep:
        """The step's fixed expressions, converted for the JVM once (`sealtime.spark.plans`)."""
        if self._compiled is None:
            self._compiled = CompiledStep.of(self.prep, self.input_arrow, self.finalize)
        return self._compiled

    def state(self, directory: str) -> dict[str, Any]:
        return self.arrangement.state()

    def restore(self, state: dict[str, Any]) -> None:
        self.arrangement.restore(state)

    def after_tick(self, pinned: bool) -> None:
        self.arrangement.finish_tick()

    def durable(self) -> None:
        self.arrangement.durable()

    def pin(self) -> None:
        self.arrangement.pin()
