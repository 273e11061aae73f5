"""`Cumulating` windows (Flink's ``CUMULATE``) and `AssignCumulating`.

A cumulating window of `size` with `step` starts at a multiple of `size` and ends at
each multiple of `step` after it, up to `size`: windows ``[s, s + step)``, ``[s, s +
2*step)``, ..., ``[s, s + size)``. A row at time ``t`` is in every window of its
``[s, s + size)`` whose end is after ``t``. An aggregate over them emits each window once,
when sealed (`WindowedReduce`): a running total per step within each period.

>>> Cumulating(10_000, 2_000).windows_per_period
5
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from ..errors import ConfigError
from .node import WINDOW_END, PlanNode
from .windows import WindowSpec

__all__ = ["AssignCumulating", "Cumulating"]


@dataclass(frozen=True)
class Cumulating(WindowSpec):
    """Windows ``[k*size, k*size + j*step)`` for ``j = 1 .. size/step`` (ms)."""

    size: int
    step: int

    def __post_init__(self) -> None:
        if self.step <= 0 or self.size <= 0 or self.size % self.step:
            raise ConfigError(
                f"Cumulating(size={self.size}, step={self.step}): both must be > 0 and the "
                "size a multiple of the step, e.g. CUMULATE(..., INTERVAL '2' SECOND, "
                "INTERVAL '10' SECOND)"
            )

    @property
    def windows_per_period(self) -> int:
        return self.size // self.step


@dataclass(frozen=True, eq=False, kw_only=True)
class AssignCumulating(PlanNode):
    """Adds ``window_start``/``window_end`` of every cumulating window holding the row
    (one output row per window)."""

    spec: Cumulating

    kind: ClassVar[str] = "window"
    per_row: ClassVar[bool] = True
    recomputable: ClassVar[bool] = True

    @cached_property
    def monotonic(self) -> bool:
        return self.inputs[0].monotonic

    @cached_property
    def window(self) -> WindowSpec | None:
        return self.spec

    @cached_property
    def bounded_by(self) -> str | None:
        return WINDOW_END

    @cached_property
    def priority_column(self) -> str | None:
        return self.inputs[0].priority_column
